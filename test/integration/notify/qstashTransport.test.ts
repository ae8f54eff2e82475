import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Receiver } from '@upstash/qstash';
import { createQStashPublisher } from '../../../src/notify/qstashTransport.ts';
import type { QStashPublishRequest } from '../../../src/send/types.ts';
import { verifyQStashCallback } from '../../../src/worker/qstash/verifyCallback.ts';
import { startLoopbackReceiver, startQStashServer, type LoopbackReceiver, type QStashServer } from '../../support/qstashServer.ts';

let qstash: QStashServer;
let receiver: LoopbackReceiver;
let status: (index: number) => number;
const closers: Array<() => Promise<void>> = [];

beforeEach(async () => {
  // The SDK logs every failed request to console.error; keep test output readable.
  vi.spyOn(console, 'error').mockImplementation(() => undefined);
  vi.spyOn(console, 'warn').mockImplementation(() => undefined);
  status = () => 200;
  qstash = await startQStashServer({ retryBackoffMs: 10 });
  receiver = await startLoopbackReceiver((_req, index) => ({ status: status(index), body: `answer ${index}` }));
});

afterEach(async () => {
  await qstash.close();
  await receiver.close();
  for (const close of closers.splice(0)) await close();
  // Let abandoned SDK requests (timeout tests) fail and log while console is still muted.
  await new Promise((resolve) => setTimeout(resolve, 20));
  vi.restoreAllMocks();
});

function request(overrides: Partial<QStashPublishRequest> = {}): QStashPublishRequest {
  return {
    // SEC-H1: a QStash destination has no query (it would become the API request's query).
    destination: `${receiver.url}/hooks/agent`,
    body: JSON.stringify({ event: 'beforeToolCall', n: 1 }),
    headers: {
      'content-type': 'application/json',
      'webhook-id': 'del_01-1',
      'webhook-timestamp': '1700000000',
      'webhook-signature': 'v1,abc=',
      authorization: 'Bearer destination-secret',
      'X-Custom': 'yes',
    },
    timeoutMs: 2500,
    deduplicationId: 'del_01-1',
    ...overrides,
  };
}

function receiverFor(server: QStashServer): Receiver {
  return new Receiver({ currentSigningKey: server.currentSigningKey, nextSigningKey: server.nextSigningKey, devMode: false });
}

describe('QStash transport against the local QStash server (real @upstash/qstash Client)', () => {
  it('Q7: publish is accepted and QStash delivers the exact body with the forwarded headers (webhook-* included)', async () => {
    const publisher = createQStashPublisher({ url: qstash.url, token: qstash.token });
    const req = request();
    const result = await publisher.publish(req);
    expect(result).toEqual({ ok: true, messageId: expect.stringMatching(/^msg_/), deduplicated: false });

    await qstash.waitFor(() => receiver.requests.length === 1);
    const delivered = receiver.requests[0];
    expect(delivered.method).toBe('POST');
    expect(delivered.url).toBe('/hooks/agent');
    expect(delivered.body).toBe(req.body);
    expect(delivered.headers).toMatchObject({
      'content-type': 'application/json',
      'webhook-id': 'del_01-1',
      'webhook-timestamp': '1700000000',
      'webhook-signature': 'v1,abc=',
      authorization: 'Bearer destination-secret',
      'x-custom': 'yes',
      'upstash-message-id': result.ok ? result.messageId : '',
      'upstash-retried': '0',
    });
    // Neither the QStash token, the control headers nor the SDK telemetry reach the destination.
    expect(JSON.stringify(delivered.headers)).not.toContain(qstash.token);
    for (const name of Object.keys(delivered.headers)) {
      expect(name).not.toMatch(/^upstash-(forward|retries|timeout|deduplication|telemetry|method)/);
    }
  });

  it('Q7: the publish request carries Upstash-Deduplication-Id, Upstash-Retries (default 3), Upstash-Timeout and Upstash-Forward-* headers', async () => {
    const publisher = createQStashPublisher({ url: qstash.url, token: qstash.token });
    await publisher.publish(request({ timeoutMs: 2500 }));
    expect(qstash.publishRequestCount()).toBe(1);
    const sent = qstash.requests[0];
    expect(sent.method).toBe('POST');
    expect(sent.path).toBe(`/v2/publish/${receiver.url}/hooks/agent`);
    expect(sent.headers).toMatchObject({
      authorization: `Bearer ${qstash.token}`,
      'content-type': 'application/json',
      'upstash-deduplication-id': 'del_01-1',
      'upstash-retries': '3',
      'upstash-timeout': '3s',
      'upstash-method': 'POST',
      'upstash-forward-webhook-id': 'del_01-1',
      'upstash-forward-webhook-timestamp': '1700000000',
      'upstash-forward-authorization': 'Bearer destination-secret',
      'upstash-forward-x-custom': 'yes',
    });
    expect(Object.keys(sent.headers).some((h) => h.startsWith('upstash-telemetry'))).toBe(false);

    await publisher.publish(request({ deduplicationId: 'del_02-1', retries: 0, timeoutMs: 1000 }));
    expect(qstash.requests[1].headers).toMatchObject({ 'upstash-retries': '0', 'upstash-timeout': '1s' });
  });

  it('Q7: a header named like a QStash control header is forwarded, never obeyed', async () => {
    const callbackSink = await startLoopbackReceiver();
    closers.push(() => callbackSink.close());
    const publisher = createQStashPublisher({ url: qstash.url, token: qstash.token });
    const result = await publisher.publish(
      request({ headers: { 'content-type': 'text/plain', 'Upstash-Callback': `${callbackSink.url}/steal`, 'upstash-retries': '9' } }),
    );
    expect(result.ok).toBe(true);
    await qstash.idle();
    expect(qstash.messages[0].callback).toBeUndefined();
    expect(qstash.messages[0].maxRetries).toBe(3);
    expect(receiver.requests[0].headers['upstash-callback']).toBe(`${callbackSink.url}/steal`);
    expect(callbackSink.requests).toHaveLength(0);
  });

  it("Q7: QStash's Upstash-Signature verifies with the real Receiver; a tampered body or another URL does not", async () => {
    const publisher = createQStashPublisher({ url: qstash.url, token: qstash.token });
    const req = request();
    await publisher.publish(req);
    await qstash.waitFor(() => receiver.requests.length === 1);
    const { headers, body } = receiver.requests[0];
    const verifier = receiverFor(qstash);
    await expect(verifier.verify({ signature: headers['upstash-signature'], body, url: req.destination })).resolves.toBe(true);
    await expect(verifier.verify({ signature: headers['upstash-signature'], body: `${body} `, url: req.destination })).rejects.toThrow(/body hash/);
    await expect(verifier.verify({ signature: headers['upstash-signature'], body, url: `${receiver.url}/other` })).rejects.toThrow(/invalid subject/);
    const stranger = new Receiver({ currentSigningKey: 'sig_wrong_current', nextSigningKey: 'sig_wrong_next', devMode: false });
    await expect(stranger.verify({ signature: headers['upstash-signature'], body, url: req.destination })).rejects.toThrow();
  });

  it('Q7: the same deduplication id (worker retry of one publish) gives the same messageId and one delivery; a new generation does not', async () => {
    const publisher = createQStashPublisher({ url: qstash.url, token: qstash.token });
    const first = await publisher.publish(request({ deduplicationId: 'del_07-1' }));
    const again = await publisher.publish(request({ deduplicationId: 'del_07-1' }));
    expect(first.ok && again.ok).toBe(true);
    if (!first.ok || !again.ok) return;
    expect(again).toEqual({ ok: true, messageId: first.messageId, deduplicated: true });
    await qstash.idle();
    expect(receiver.requests).toHaveLength(1);

    const replay = await publisher.publish(request({ deduplicationId: 'del_07-2' }));
    expect(replay.ok && replay.messageId !== first.messageId && !replay.deduplicated).toBe(true);
    await qstash.idle();
    expect(receiver.requests).toHaveLength(2);
  });

  it('Q7: QStash owns the retries (Upstash-Retries configurable): a failing destination gets retries+1 signed attempts, then the DLQ', async () => {
    status = () => 503;
    const publisher = createQStashPublisher({ url: qstash.url, token: qstash.token, retries: 2 });
    const req = request();
    const result = await publisher.publish(req);
    expect(result.ok).toBe(true);
    await qstash.idle();
    expect(receiver.requests.map((r) => r.headers['upstash-retried'])).toEqual(['0', '1', '2']);
    const verifier = receiverFor(qstash);
    for (const attempt of receiver.requests) {
      await expect(verifier.verify({ signature: attempt.headers['upstash-signature'], body: attempt.body, url: req.destination })).resolves.toBe(true);
    }
    expect(qstash.dlq).toHaveLength(1);
    expect(qstash.dlq[0]).toMatchObject({ messageId: result.ok ? result.messageId : '', responseStatus: 503, url: req.destination });
  });

  it('Q7: the default is 3 QStash retries (4 attempts) and a recovering destination stops them', async () => {
    status = () => 500;
    const publisher = createQStashPublisher({ url: qstash.url, token: qstash.token });
    await publisher.publish(request({ deduplicationId: 'del_default-1' }));
    await qstash.idle();
    expect(receiver.requests).toHaveLength(4);

    receiver.requests.length = 0;
    status = (index) => (index === 0 ? 500 : 200);
    await publisher.publish(request({ deduplicationId: 'del_recover-1' }));
    await qstash.idle();
    expect(receiver.requests).toHaveLength(2);
    expect(qstash.messages[1].state).toBe('delivered');
  });

  it('Q7: callback and failure callback reach the worker signed, and verify with both signing keys', async () => {
    const callbacks = await startLoopbackReceiver();
    closers.push(() => callbacks.close());
    const callbackUrl = `${callbacks.url}/qstash/callback`;
    const failureCallbackUrl = `${callbacks.url}/qstash/failure`;
    const publisher = createQStashPublisher({ url: qstash.url, token: qstash.token });

    const ok = await publisher.publish(request({ deduplicationId: 'del_cb-1', callbackUrl, failureCallbackUrl }));
    await qstash.idle();
    expect(callbacks.requests).toHaveLength(1);
    const cb = callbacks.requests[0];
    expect(cb.url).toBe('/qstash/callback');
    const verified = await verifyQStashCallback({
      signature: cb.headers['upstash-signature'],
      body: cb.body,
      url: callbackUrl,
      currentSigningKey: qstash.currentSigningKey,
      nextSigningKey: qstash.nextSigningKey,
    });
    expect(verified).toEqual({
      valid: true,
      callback: expect.objectContaining({ sourceMessageId: ok.ok ? ok.messageId : '', status: 200, ok: true, retried: 0, maxRetries: 3 }),
    });

    status = () => 500;
    callbacks.requests.length = 0;
    const failing = await publisher.publish(request({ deduplicationId: 'del_cb-2', retries: 1, callbackUrl, failureCallbackUrl }));
    await qstash.idle();
    // One callback per attempt (2), then the failure callback.
    expect(callbacks.requests.map((r) => r.url)).toEqual(['/qstash/callback', '/qstash/callback', '/qstash/failure']);
    const failure = callbacks.requests[2];
    // Key rotation: the worker's "current" key is already the new one; QStash still signs with the old.
    const rotated = await verifyQStashCallback({
      signature: failure.headers['upstash-signature'],
      body: failure.body,
      url: failureCallbackUrl,
      currentSigningKey: 'sig_rotated_new_key',
      nextSigningKey: qstash.currentSigningKey,
    });
    expect(rotated).toEqual({
      valid: true,
      callback: expect.objectContaining({
        sourceMessageId: failing.ok ? failing.messageId : '',
        status: 500,
        ok: false,
        retried: 1,
        dlqId: qstash.dlq[0].dlqId,
        responseBodyExcerpt: 'answer 2',
      }),
    });
  });

  it('D7: a missing or blank QStash token is a configuration failure and sends nothing', async () => {
    for (const token of [undefined, '', '   ']) {
      const publisher = createQStashPublisher({ url: qstash.url, ...(token !== undefined ? { token } : {}) });
      expect(await publisher.publish(request())).toEqual({ ok: false, errorClass: 'configuration' });
    }
    expect(qstash.requests).toHaveLength(0);
  });

  it('D7: invalid requests (bad destination URL, header, dedup id, retries, timeout) fail as configuration before any attempt', async () => {
    const publisher = createQStashPublisher({ url: qstash.url, token: qstash.token });
    const bad: Array<Partial<QStashPublishRequest>> = [
      { destination: 'not a url' },
      { destination: 'ftp://127.0.0.1/x' },
      { headers: { 'bad header': 'x' } },
      { headers: { 'x-ok': 'line\r\nbreak' } },
      { headers: { 'x-ok': 'snowman ☃' } },
      { deduplicationId: 'has:colon' },
      { deduplicationId: '' },
      { retries: -1 },
      { retries: 1.5 },
      { timeoutMs: 0 },
      { timeoutMs: Number.NaN },
      { callbackUrl: 'javascript:alert(1)' },
    ];
    for (const overrides of bad) {
      expect(await publisher.publish(request(overrides))).toEqual({ ok: false, errorClass: 'configuration' });
    }
    expect(createQStashPublisher({ url: 'not a url', token: 't' })).toBeDefined();
    expect(await createQStashPublisher({ url: 'not a url', token: qstash.token }).publish(request())).toEqual({
      ok: false,
      errorClass: 'configuration',
    });
    expect(qstash.requests).toHaveLength(0);
  });

  it('D7: QStash unreachable (closed port) is a network_error after a single connection attempt', async () => {
    const probe = http.createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const port = (probe.address() as AddressInfo).port;
    await new Promise<void>((resolve) => probe.close(() => resolve()));

    const publisher = createQStashPublisher({ url: `http://127.0.0.1:${port}`, token: 'tok' });
    const started = Date.now();
    expect(await publisher.publish(request())).toEqual({ ok: false, errorClass: 'network_error' });
    // The SDK's own network retry (6 attempts, ~4.3 s) is off.
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('D7: QStash dropping the connection is a network_error with exactly one publish request', async () => {
    qstash.setDown(true);
    const publisher = createQStashPublisher({ url: qstash.url, token: qstash.token });
    expect(await publisher.publish(request())).toEqual({ ok: false, errorClass: 'network_error' });
    expect(qstash.publishRequestCount()).toBe(1);
    expect(qstash.messages).toHaveLength(0);
  });

  it.each([401, 429, 503, 500, 400])('D7: QStash answering %i is http_error with that status after exactly one publish request', async (code) => {
    qstash.setPublishStatus(code);
    const publisher = createQStashPublisher({ url: qstash.url, token: qstash.token });
    const result = await publisher.publish(request());
    expect(result).toEqual({ ok: false, errorClass: 'http_error', httpStatus: code });
    expect(qstash.publishRequestCount()).toBe(1);
    expect(receiver.requests).toHaveLength(0);
  });

  it('D7: a wrong token is http_error 401, and the sanitized result carries no token or remote text', async () => {
    const publisher = createQStashPublisher({ url: qstash.url, token: 'not-the-token' });
    const result = await publisher.publish(request());
    expect(result).toEqual({ ok: false, errorClass: 'http_error', httpStatus: 401 });
    expect(Object.keys(result).sort()).toEqual(['errorClass', 'httpStatus', 'ok']);
    expect(qstash.requests[0].status).toBe(401);
  });

  it('D7: a publish slower than publishTimeoutMs is a timeout; QStash may still have accepted it (same dedup id → deduplicated)', async () => {
    qstash.setPublishDelayMs(1500);
    const publisher = createQStashPublisher({ url: qstash.url, token: qstash.token, publishTimeoutMs: 200 });
    const started = Date.now();
    expect(await publisher.publish(request({ deduplicationId: 'del_slow-1' }))).toEqual({ ok: false, errorClass: 'timeout' });
    expect(Date.now() - started).toBeLessThan(1000);
    expect(qstash.publishRequestCount()).toBe(1);

    // The worker retries the publish with the same id: QStash answers with the first message.
    qstash.setPublishDelayMs(0);
    const retry = await publisher.publish(request({ deduplicationId: 'del_slow-1' }));
    expect(retry).toEqual({ ok: true, messageId: qstash.messages[0].messageId, deduplicated: true });
    await qstash.idle();
    expect(receiver.requests).toHaveLength(1);
  });

  it("D7: the caller's AbortSignal ends the publish as a timeout (before sending: nothing is sent)", async () => {
    const publisher = createQStashPublisher({ url: qstash.url, token: qstash.token });
    const aborted = new AbortController();
    aborted.abort();
    expect(await publisher.publish(request({ signal: aborted.signal }))).toEqual({ ok: false, errorClass: 'timeout' });
    expect(qstash.requests).toHaveLength(0);

    qstash.setPublishDelayMs(1500);
    const later = new AbortController();
    setTimeout(() => later.abort(), 100);
    expect(await publisher.publish(request({ signal: later.signal }))).toEqual({ ok: false, errorClass: 'timeout' });
    expect(qstash.publishRequestCount()).toBe(1);
  });
});
