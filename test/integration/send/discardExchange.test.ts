import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FetchTransport, type SendRequest } from '../../../src/send/fetchTransport.ts';
import { startReceiver, type Receiver } from '../../support/receiver.ts';

/**
 * A notification's request is one undici dispatch (discardExchange.ts), not a response stream:
 * what the stream-based path guaranteed still holds over real sockets.
 */
describe('PERF-2 discard exchange (W3/W4/Q8)', () => {
  let receiver: Receiver;
  let transport: FetchTransport;
  const notify = (path: string, extra: Partial<SendRequest> = {}) =>
    transport.send({ url: `${receiver.url}${path}`, body: '{"a":1}', headers: {}, timeoutMs: 2_000, read: 'discard', excerptBytes: 512, ...extra });

  beforeAll(async () => {
    receiver = await startReceiver();
    transport = new FetchTransport({ allowedCidrs: '127.0.0.1/32' });
  });
  beforeEach(() => {
    receiver.setHandler({ status: 200 });
  });
  afterAll(async () => {
    await transport.close();
    await receiver.close();
  });

  it('PERF-2 Q8: an excerpt trickling in after the status is collected until the body ends; the headers are parsed', async () => {
    receiver.setHandler({ status: 422, headers: { 'retry-after': '7', 'x-two': 'b' }, trickle: { chunk: 'ab', intervalMs: 20, count: 4 } });
    const outcome = await notify('/trickle');
    expect(outcome).toMatchObject({ kind: 'response', status: 422, headers: { 'retry-after': '7', 'x-two': 'b' } });
    if (outcome.kind === 'response') expect(new TextDecoder().decode(outcome.excerpt)).toBe('abababab');
  });

  it('PERF-2 Q8: a body bigger than the excerpt resolves at the excerpt and keeps exactly its bytes; the connection is reused', async () => {
    receiver.setHandler({ status: 200, bodyBytes: 100_000 });
    const before = receiver.connectionCount();
    const first = await notify('/big');
    if (first.kind === 'response') expect(first.excerpt?.length).toBe(512);
    receiver.setHandler({ status: 204 });
    // The 100 kB were drained in the background: the next request reuses the socket.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await notify('/after')).toMatchObject({ kind: 'response', status: 204 });
    expect(receiver.connectionCount() - before).toBe(1);
  });

  /** A fresh transport and receiver: the next request shows whether the first one's socket was kept. */
  async function alone(run: (send: typeof notify, fresh: Receiver) => Promise<void>): Promise<void> {
    const fresh = await startReceiver();
    const own = new FetchTransport({ allowedCidrs: '127.0.0.1/32' });
    try {
      await run(
        (path, extra = {}) => own.send({ url: `${fresh.url}${path}`, body: '{}', headers: {}, timeoutMs: 2_000, read: 'discard', excerptBytes: 512, ...extra }),
        fresh,
      );
    } finally {
      await own.close();
      await fresh.close();
    }
  }

  it('PERF-2 W3: a body over the 1 MiB drain limit is not read to its end: the socket is dropped, the attempt still succeeds', async () => {
    await alone(async (send, fresh) => {
      fresh.setHandler({ status: 200, bodyBytes: 50 * 1024 * 1024 });
      const started = performance.now();
      expect(await send('/huge', { timeoutMs: 10_000 })).toMatchObject({ kind: 'response', status: 200 });
      fresh.setHandler({ status: 204 });
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(await send('/next')).toMatchObject({ kind: 'response', status: 204 });
      expect(performance.now() - started).toBeLessThan(5_000);
      expect(fresh.requests[1]?.remotePort).not.toBe(fresh.requests[0]?.remotePort);
    });
  });

  it('PERF-2 W4: a body hanging after the status returns at the excerpt wait; the deadline then drops the socket', async () => {
    await alone(async (send, fresh) => {
      fresh.setHandler({ status: 200, hangBody: true });
      const outcome = await send('/hang', { timeoutMs: 400 });
      expect(outcome).toMatchObject({ kind: 'response', status: 200 });
      expect(outcome.durationMs).toBeLessThan(1_000);
      await new Promise((resolve) => setTimeout(resolve, 300));
      fresh.setHandler({ status: 204 });
      expect(await send('/next')).toMatchObject({ kind: 'response', status: 204 });
      expect(fresh.requests[1]?.remotePort).not.toBe(fresh.requests[0]?.remotePort);
    });
  });

  it('PERF-2 W4: headers later than the deadline are a timeout; a caller abort before the status is cancelled', async () => {
    receiver.setHandler({ status: 200, delayMs: 1_000 });
    const timedOut = await notify('/slow', { timeoutMs: 150 });
    expect(timedOut).toMatchObject({ kind: 'error', errorClass: 'timeout' });
    expect(timedOut.durationMs).toBeLessThan(900);
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    expect(await notify('/slow', { timeoutMs: 5_000, signal: controller.signal })).toMatchObject({ kind: 'error', errorClass: 'cancelled' });
  });

  it('PERF-2: no excerpt asked → resolves at the status without one; an empty body gives an empty excerpt', async () => {
    receiver.setHandler({ status: 200, body: 'ok' });
    const plain = await notify('/plain', { excerptBytes: 0 });
    expect(plain.kind === 'response' && plain.excerpt).toBe(undefined);
    receiver.setHandler({ status: 204 });
    const empty = await notify('/empty');
    expect(empty.kind === 'response' && empty.excerpt?.length).toBe(0);
  });
});
