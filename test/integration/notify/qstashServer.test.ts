/**
 * The local QStash server itself, driven by the real @upstash/qstash Client: it must speak the
 * protocol the product relies on (the QStash protocol research note), or the Q7/D7 tests prove nothing.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Client, QstashError, QstashRatelimitError, Receiver } from '@upstash/qstash';
import { verifyQStashCallback } from '../../../src/worker/qstash/verifyCallback.ts';
import { QSTASH_DEV_CREDENTIALS, startLoopbackReceiver, startQStashServer, type LoopbackReceiver, type QStashServer } from '../../support/qstashServer.ts';

let qstash: QStashServer | undefined;
let receiver: LoopbackReceiver;
let status: (index: number) => number;

beforeEach(async () => {
  vi.spyOn(console, 'error').mockImplementation(() => undefined);
  vi.spyOn(console, 'warn').mockImplementation(() => undefined);
  vi.spyOn(console, 'log').mockImplementation(() => undefined);
  status = () => 200;
  receiver = await startLoopbackReceiver((_req, index) => ({ status: status(index), body: `r${index}` }));
});

afterEach(async () => {
  await qstash?.close();
  qstash = undefined;
  await receiver.close();
  vi.unstubAllEnvs();
  vi.restoreAllMocks();
});

async function server(opts: Parameters<typeof startQStashServer>[0] = {}): Promise<{ server: QStashServer; client: Client }> {
  qstash = await startQStashServer({ retryBackoffMs: 5, ...opts });
  const client = new Client({ baseUrl: qstash.url, token: qstash.token, retry: false, devMode: false, enableTelemetry: false });
  return { server: qstash, client };
}

describe('local QStash server (protocol as spoken by @upstash/qstash 2.12.0)', () => {
  it('Q7: publish keeps the destination query and `//` intact and signs the exact rebuilt URL', async () => {
    const { server: s, client } = await server();
    const destination = `${receiver.url}/a//b?x=1&y=two`;
    const res = await client.publish({ url: destination, body: 'plain body' });
    expect(res.url).toBe(destination);
    await s.idle();
    expect(receiver.requests[0].url).toBe('/a//b?x=1&y=two');
    expect(receiver.requests[0].headers['content-type']).toBe('text/plain;charset=UTF-8');
    const verifier = new Receiver({ currentSigningKey: s.currentSigningKey, nextSigningKey: s.nextSigningKey, devMode: false });
    await expect(verifier.verify({ signature: receiver.requests[0].headers['upstash-signature'], body: 'plain body', url: destination })).resolves.toBe(true);
  });

  it('Q7: batch answers one result per message in order and delivers each with its own headers', async () => {
    const { server: s, client } = await server();
    const results = await client.batchJSON([
      { url: `${receiver.url}/one`, body: { n: 1 }, headers: { 'x-a': '1' } },
      { url: `${receiver.url}/two`, body: { n: 2 }, deduplicationId: 'b-2' },
    ]);
    expect(results).toEqual([
      { messageId: expect.stringMatching(/^msg_/), url: `${receiver.url}/one` },
      { messageId: expect.stringMatching(/^msg_/), url: `${receiver.url}/two` },
    ]);
    await s.idle();
    const byPath = Object.fromEntries(receiver.requests.map((r) => [r.url, r]));
    expect(byPath['/one']).toMatchObject({ body: '{"n":1}', headers: { 'x-a': '1', 'content-type': 'application/json' } });
    expect(byPath['/two'].body).toBe('{"n":2}');
    const dup = await client.batchJSON([{ url: `${receiver.url}/two`, body: { n: 2 }, deduplicationId: 'b-2' }]);
    expect(dup[0]).toMatchObject({ messageId: results[1].messageId, deduplicated: true });
  });

  it('Q7: messages.get shows a pending message; cancel answers {cancelled:1}, stops delivery, and get is then 404', async () => {
    const { server: s, client } = await server({ delayScale: 0.1 });
    const { messageId } = await client.publish({ url: `${receiver.url}/later`, body: 'b', delay: 10, headers: { 'x-k': 'v' } });
    const message = await client.messages.get(messageId);
    expect(message).toMatchObject({ messageId, url: `${receiver.url}/later`, method: 'POST', header: { 'x-k': ['v'] } });
    expect(await client.messages.cancel(messageId)).toEqual({ cancelled: 1 });
    await expect(client.messages.get(messageId)).rejects.toMatchObject({ status: 404 });
    await s.idle();
    expect(receiver.requests).toHaveLength(0);
    expect(s.messages[0].state).toBe('cancelled');
  });

  it('Q7: exhausted retries land in the DLQ, listable and deletable with the Client', async () => {
    status = () => 500;
    const { server: s, client } = await server();
    await client.publish({ url: `${receiver.url}/x`, body: 'a', retries: 0 });
    await client.publish({ url: `${receiver.url}/y`, body: 'b', retries: 1 });
    await client.publish({ url: `${receiver.url}/z`, body: 'c', retries: 0 });
    await s.idle();
    expect(receiver.requests).toHaveLength(4);
    const listed = await client.dlq.listMessages();
    // The DLQ is in failure order; y failed last (it had a retry).
    expect(listed.messages.map((m) => m.url).sort()).toEqual([`${receiver.url}/x`, `${receiver.url}/y`, `${receiver.url}/z`]);
    const y = listed.messages.find((m) => m.url === `${receiver.url}/y`);
    const lastYAttempt = receiver.requests
      .map((r, i) => ({ r, i }))
      .filter(({ r }) => r.url === '/y')
      .at(-1);
    expect(y).toMatchObject({ responseStatus: 500, responseBody: `r${lastYAttempt?.i}`, body: 'b', maxRetries: 1 });
    const page = await client.dlq.listMessages({ count: 2 });
    expect(page.messages).toHaveLength(2);
    expect(page.cursor).toBe('2');
    expect(await client.dlq.delete(listed.messages[0].dlqId)).toEqual({ deleted: 1 });
    expect(await client.dlq.delete([listed.messages[1].dlqId, listed.messages[2].dlqId])).toEqual({ deleted: 2 });
    expect((await client.dlq.listMessages()).messages).toHaveLength(0);
  });

  it('Q7: Upstash-Timeout bounds each attempt; a hanging destination times out, retries, then fails with status 0', async () => {
    const hanging = await import('node:http').then(
      ({ default: http }) =>
        new Promise<{ url: string; hits: number[]; close: () => Promise<void> }>((resolve) => {
          const hits: number[] = [];
          const srv = http.createServer(() => hits.push(Date.now()));
          srv.listen(0, '127.0.0.1', () => {
            const { port } = srv.address() as { port: number };
            resolve({
              url: `http://127.0.0.1:${port}`,
              hits,
              close: () =>
                new Promise<void>((r) => {
                  srv.close(() => r());
                  srv.closeAllConnections();
                }),
            });
          });
        }),
    );
    try {
      const { server: s, client } = await server({ deliveryTimeoutMs: 300 });
      await client.publish({ url: `${hanging.url}/slow`, body: 'x', retries: 1, timeout: 10, failureCallback: `${receiver.url}/fail` });
      await s.idle();
      expect(hanging.hits).toHaveLength(2);
      expect(s.messages[0].attempts.map((a) => a.error)).toEqual(['timeout', 'timeout']);
      expect(s.dlq[0].responseStatus).toBe(0);
      const cb = receiver.requests[0];
      const verified = await verifyQStashCallback({
        signature: cb.headers['upstash-signature'],
        body: cb.body,
        url: `${receiver.url}/fail`,
        currentSigningKey: s.currentSigningKey,
        nextSigningKey: s.nextSigningKey,
      });
      expect(verified).toEqual({ valid: true, callback: expect.objectContaining({ status: 0, ok: false, dlqId: s.dlq[0].dlqId }) });
    } finally {
      await hanging.close();
    }
  });

  it('Q7: 489 with Upstash-NonRetryable-Error goes straight to the DLQ', async () => {
    await receiver.close();
    receiver = await startLoopbackReceiver(() => ({ status: 489, headers: { 'Upstash-NonRetryable-Error': 'true' } }));
    const { server: s, client } = await server();
    await client.publish({ url: `${receiver.url}/nr`, body: 'x', retries: 3 });
    await s.idle();
    expect(receiver.requests).toHaveLength(1);
    expect(s.dlq[0].responseStatus).toBe(489);
  });

  it('D7: refusals use the real error shapes: bad token 401, 429 rate limit, bad dedup id and non-loopback destination 400', async () => {
    const { server: s, client } = await server();
    const stranger = new Client({ baseUrl: s.url, token: 'wrong', retry: false, devMode: false, enableTelemetry: false });
    await expect(stranger.publish({ url: `${receiver.url}/x`, body: 'x' })).rejects.toMatchObject({ name: 'QstashError', status: 401 });
    await expect(client.publish({ url: `${receiver.url}/x`, body: 'x', deduplicationId: 'a:b' })).rejects.toMatchObject({
      status: 400,
      message: `{"error":"DeduplicationId cannot contain ':'"}`,
    });
    await expect(client.publish({ url: 'https://example.com/hook', body: 'x' })).rejects.toBeInstanceOf(QstashError);
    s.setPublishStatus(429);
    const limited = await client.publish({ url: `${receiver.url}/x`, body: 'x' }).catch((e: unknown) => e);
    expect(limited).toBeInstanceOf(QstashRatelimitError);
    expect(limited).toMatchObject({ status: 429, limit: '100', remaining: '0' });
    expect(s.messages).toHaveLength(0);
    expect(receiver.requests).toHaveLength(0);
  });

  it('Q7: /v2/keys answers the signing keys (bearer or qstash_token query), and the SDK dev mode accepts the server', async () => {
    const { server: s } = await server({ ...QSTASH_DEV_CREDENTIALS });
    expect(await (await fetch(`${s.url}/v2/keys?qstash_token=${encodeURIComponent(s.token)}`)).json()).toEqual({
      current: QSTASH_DEV_CREDENTIALS.currentSigningKey,
      next: QSTASH_DEV_CREDENTIALS.nextSigningKey,
    });
    expect((await fetch(`${s.url}/v2/keys`)).status).toBe(401);
    vi.stubEnv('QSTASH_DEV', 'true');
    vi.stubEnv('QSTASH_DEV_PORT', new URL(s.url).port);
    const devClient = new Client({ retry: false, enableTelemetry: false });
    const res = await devClient.publish({ url: `${receiver.url}/dev`, body: 'dev' });
    expect(res.messageId).toMatch(/^msg_/);
    await s.idle();
    expect(receiver.requests.map((r) => r.url)).toEqual(['/dev']);
  });
});
