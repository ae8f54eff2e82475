import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FetchTransport, type SendRequest } from '../../../src/send/fetchTransport.ts';
import { startReceiver, type Receiver } from '../../support/receiver.ts';
import { readFileSync } from 'node:fs';

/** The version the package is published with: the user agent must carry it (issue 28). */
const PACKAGE_VERSION = (JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

const DECISION_CAP = 65_536;

describe('fetch transport over real sockets', () => {
  let receiver: Receiver;
  let transport: FetchTransport;
  const send = (path: string, extra: Partial<SendRequest> = {}) =>
    transport.send({
      url: `${receiver.url}${path}`,
      body: '{"a":1}',
      headers: { 'content-type': 'application/json' },
      timeoutMs: 2_000,
      read: { maxBytes: DECISION_CAP },
      ...extra,
    });

  beforeAll(async () => {
    receiver = await startReceiver();
    transport = new FetchTransport({ allowedCidrs: '127.0.0.1/32' });
  });
  beforeEach(() => {
    receiver.requests.length = 0;
    receiver.setHandler({ status: 200 });
  });
  afterAll(async () => {
    await transport.close();
    await receiver.close();
  });

  it('sends one POST with the given headers and body; a 2xx body is read', async () => {
    receiver.setHandler({ status: 200, body: '{"decision":"allow"}', headers: { 'x-reply': 'yes' } });
    const outcome = await send('/hook?q=1', { headers: { 'content-type': 'application/json', 'x-custom': 'c' } });
    expect(outcome).toMatchObject({ kind: 'response', status: 200 });
    if (outcome.kind !== 'response') return;
    expect(new TextDecoder().decode(outcome.body)).toBe('{"decision":"allow"}');
    expect(outcome.headers['x-reply']).toBe('yes');
    expect(outcome.durationMs).toBeGreaterThan(0);
    const [req] = receiver.requests;
    expect(req).toMatchObject({ method: 'POST', path: '/hook?q=1', body: '{"a":1}' });
    expect(req?.headers).toMatchObject({ 'content-type': 'application/json', 'x-custom': 'c', 'user-agent': `hookrelay/${PACKAGE_VERSION}` });
    expect(PACKAGE_VERSION).toMatch(/^\d+\.\d+\.\d+/);
  });

  it('W4: a body that trickles past the timeout is a timeout', async () => {
    receiver.setHandler({ status: 200, trickle: { chunk: ' ', intervalMs: 50, count: 100 } });
    const outcome = await send('/trickle', { timeoutMs: 400 });
    expect(outcome).toMatchObject({ kind: 'error', errorClass: 'timeout' });
    expect(outcome.durationMs).toBeGreaterThanOrEqual(390);
    expect(outcome.durationMs).toBeLessThan(2_000);
  });

  it('W4: headers that arrive after the timeout are a timeout', async () => {
    receiver.setHandler({ status: 200, delayMs: 1_500 });
    const outcome = await send('/slow', { timeoutMs: 300 });
    expect(outcome).toMatchObject({ kind: 'error', errorClass: 'timeout' });
    expect(outcome.durationMs).toBeLessThan(1_400);
  });

  it('W4: a trickling body that completes inside the timeout is read', async () => {
    receiver.setHandler({ status: 200, trickle: { chunk: 'x', intervalMs: 10, count: 5 } });
    const outcome = await send('/trickle-ok', { timeoutMs: 2_000 });
    expect(outcome).toMatchObject({ kind: 'response', status: 200 });
    if (outcome.kind === 'response') expect(new TextDecoder().decode(outcome.body)).toBe('xxxxx');
  });

  it('W4: cancellation by the caller is cancelled, distinct from timeout', async () => {
    receiver.setHandler({ status: 200, hangBody: true });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 150);
    const cancelled = await send('/hang', { timeoutMs: 5_000, signal: controller.signal });
    expect(cancelled).toMatchObject({ kind: 'error', errorClass: 'cancelled' });
    expect(cancelled.durationMs).toBeLessThan(2_000);

    const timedOut = await send('/hang', { timeoutMs: 150, signal: new AbortController().signal });
    expect(timedOut).toMatchObject({ kind: 'error', errorClass: 'timeout' });

    const before = receiver.requests.length;
    const preAborted = await send('/never', { signal: AbortSignal.abort() });
    expect(preAborted).toMatchObject({ kind: 'error', errorClass: 'cancelled' });
    expect(receiver.requests.length).toBe(before);
  });

  it('a reset connection is a network_error, with no remote text in the detail', async () => {
    receiver.setHandler({ reset: true });
    const outcome = await send('/reset');
    expect(outcome).toMatchObject({ kind: 'error', errorClass: 'network_error' });
    if (outcome.kind === 'error') expect(outcome.detail).toMatch(/^[A-Za-z_0-9]+$/);
  });

  it('a refused connection is a network_error', async () => {
    const closed = await startReceiver();
    const url = `${closed.url}/gone`;
    await closed.close();
    const outcome = await transport.send({ url, body: '{}', headers: {}, timeoutMs: 2_000, read: 'discard' });
    expect(outcome).toMatchObject({ kind: 'error', errorClass: 'network_error' });
  });

  it('W4: a 301 is returned as a status and never followed', async () => {
    receiver.setHandler((req) => (req.path === '/moved' ? { status: 301, headers: { location: '/target' } } : { status: 200 }));
    const outcome = await send('/moved');
    expect(outcome).toMatchObject({ kind: 'response', status: 301 });
    expect(receiver.requests.map((r) => r.path)).toEqual(['/moved']);
  });

  it('R5: a body of exactly 65,536 bytes is read; 65,537 bytes is too large', async () => {
    receiver.setHandler({ status: 200, bodyBytes: DECISION_CAP });
    const exact = await send('/exact');
    expect(exact).toMatchObject({ kind: 'response', status: 200 });
    if (exact.kind === 'response') {
      expect(exact.tooLarge).toBeUndefined();
      expect(exact.body?.length).toBe(DECISION_CAP);
    }
    receiver.setHandler({ status: 200, bodyBytes: DECISION_CAP + 1 });
    const over = await send('/over');
    expect(over).toMatchObject({ kind: 'response', status: 200, tooLarge: true });
    if (over.kind === 'response') expect(over.body).toBeUndefined();
  });

  it('Q5: a huge body stops being read at the cap (not buffered, not waited for)', async () => {
    receiver.setHandler({ status: 200, bodyBytes: 200 * 1024 * 1024 });
    const outcome = await send('/huge', { timeoutMs: 10_000 });
    expect(outcome).toMatchObject({ kind: 'response', status: 200, tooLarge: true });
    expect(outcome.durationMs).toBeLessThan(5_000);
  });

  it('R5-order: a non-2xx body is not read', async () => {
    receiver.setHandler({ status: 500, body: 'internal secret stack trace' });
    const outcome = await send('/err');
    expect(outcome).toMatchObject({ kind: 'response', status: 500 });
    if (outcome.kind === 'response') {
      expect(outcome.body).toBeUndefined();
      expect(outcome.tooLarge).toBeUndefined();
    }
  });

  it('W3: discard mode returns at the status without interpreting the body; a short excerpt if asked', async () => {
    receiver.setHandler({ status: 200, body: 'not json at all {{{' });
    const plain = await send('/n', { read: 'discard' });
    expect(plain).toMatchObject({ kind: 'response', status: 200 });
    if (plain.kind === 'response') expect(plain.body).toBeUndefined();

    const withExcerpt = await send('/n', { read: 'discard', excerptBytes: 8 });
    if (withExcerpt.kind === 'response') expect(new TextDecoder().decode(withExcerpt.excerpt)).toBe('not json');

    receiver.setHandler({ status: 200, bodyBytes: 100_000 });
    const capped = await send('/n', { read: 'discard', excerptBytes: 1_000_000 });
    if (capped.kind === 'response') expect(capped.excerpt?.length).toBe(2048);

    receiver.setHandler({ status: 204 });
    const empty = await send('/n', { read: 'discard', excerptBytes: 100 });
    expect(empty).toMatchObject({ kind: 'response', status: 204 });
  });

  it('W3: in discard mode a body that trickles or fails later never fails the attempt', async () => {
    receiver.setHandler({ status: 200, trickle: { chunk: 'x', intervalMs: 100, count: 50 } });
    const outcome = await send('/trickle-notify', { read: 'discard', timeoutMs: 300 });
    expect(outcome).toMatchObject({ kind: 'response', status: 200 });
    expect(outcome.durationMs).toBeLessThan(300);
  });

  it('keep-alive: many sequential sends reuse few sockets', async () => {
    const pooled = await startReceiver({ status: 204 });
    try {
      for (let i = 0; i < 50; i += 1) {
        const outcome = await transport.send({ url: `${pooled.url}/k`, body: '{}', headers: {}, timeoutMs: 2_000, read: 'discard' });
        expect(outcome).toMatchObject({ kind: 'response', status: 204 });
      }
      await Promise.all(
        Array.from({ length: 10 }, () => transport.send({ url: `${pooled.url}/k`, body: '{}', headers: {}, timeoutMs: 2_000, read: 'discard' })),
      );
      expect(pooled.requests).toHaveLength(60);
      expect(pooled.connectionCount()).toBeLessThanOrEqual(11);
      expect(new Set(pooled.requests.slice(0, 50).map((r) => r.remotePort)).size).toBeLessThanOrEqual(2);
    } finally {
      await pooled.close();
    }
  });

  it('configuration: a bad URL or timeout is refused before any request', async () => {
    expect(await transport.send({ url: 'not a url', body: '{}', headers: {}, timeoutMs: 1_000, read: 'discard' })).toMatchObject({
      kind: 'error',
      errorClass: 'configuration',
    });
    expect(await transport.send({ url: 'ftp://127.0.0.1/', body: '{}', headers: {}, timeoutMs: 1_000, read: 'discard' })).toMatchObject({
      kind: 'error',
      errorClass: 'configuration',
    });
    expect(await send('/x', { timeoutMs: 0 })).toMatchObject({ kind: 'error', errorClass: 'configuration' });
    expect(await send('/x', { timeoutMs: Number.POSITIVE_INFINITY })).toMatchObject({ kind: 'error', errorClass: 'configuration' });
    expect(receiver.requests).toHaveLength(0);
  });
});
