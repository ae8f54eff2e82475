import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parseTemplateEnvPattern } from '../../../src/contract/templateSources.ts';
import { WebhookConfigSchema, type WebhookConfigInput } from '../../../src/contract/webhook.ts';
import { deliverNotification, type DeliverNotificationInput } from '../../../src/notify/deliver.ts';
import { FetchTransport } from '../../../src/send/fetchTransport.ts';
import type { QStashPublisher, QStashPublishRequest, QStashPublishResult } from '../../../src/send/types.ts';
import { createLogger } from '../../../src/observability/logger.ts';
import { startReceiver, type Receiver } from '../../support/receiver.ts';

const TOKEN = `tok_${randomBytes(12).toString('hex')}`;
const SECRET = `whsec_${randomBytes(32).toString('base64')}`;
const DELIVERY_ID = 'dlv_01J9Z8Y7X6W5V4T3S2R1Q0P9N8';
const PAYLOAD = JSON.stringify({ deliveryId: DELIVERY_ID, hookId: 'h1', hookType: 'afterStep', operationId: 'op1' });

/** A QStash publisher double implementing the shared interface. */
class FakePublisher implements QStashPublisher {
  readonly calls: QStashPublishRequest[] = [];
  constructor(private readonly result: QStashPublishResult) {}
  async publish(req: QStashPublishRequest): Promise<QStashPublishResult> {
    this.calls.push(req);
    return this.result;
  }
}

describe('deliverNotification', () => {
  let receiver: Receiver;
  let transport: FetchTransport;
  let logLines: string[];

  beforeAll(async () => {
    receiver = await startReceiver();
    transport = new FetchTransport({ allowedCidrs: '127.0.0.1/32' });
  });
  beforeEach(() => {
    receiver.requests.length = 0;
    receiver.setHandler({ status: 204 });
    logLines = [];
  });
  afterAll(async () => {
    await transport.close();
    await receiver.close();
  });

  function input(webhook: Partial<WebhookConfigInput>, extra: Partial<DeliverNotificationInput> = {}): DeliverNotificationInput {
    return {
      webhook: WebhookConfigSchema.parse({
        url: `${receiver.url}/hook`,
        headers: { Authorization: 'Bearer ${HOOK_TOKEN}' },
        allowedEnvVars: ['HOOK_TOKEN'],
        timeout: 2,
        ...webhook,
      }),
      hookId: 'h1',
      payload: PAYLOAD,
      deliveryId: DELIVERY_ID,
      generation: 2,
      env: { HOOK_TOKEN: TOKEN },
      templateEnv: parseTemplateEnvPattern('HOOK_TOKEN'), // SEC-H2: the default allows no template
      signingSecrets: [SECRET],
      fetchTransport: transport,
      logger: createLogger({ level: 'debug', destination: { write: (line: string) => void logLines.push(line) } }),
      ...extra,
    };
  }

  function assertNoSecretLeak(result: unknown): void {
    const text = `${logLines.join('\n')}\n${JSON.stringify(result)}`;
    expect(text).not.toContain(TOKEN);
    expect(text).not.toContain(SECRET.slice('whsec_'.length));
  }

  it('Q1/Q6/W2: a fetch delivery carries webhook-id, timestamp, a verifiable signature and the resolved token', async () => {
    const result = await deliverNotification(input({}));
    expect(result).toMatchObject({ ok: true, transport: 'fetch', httpStatus: 204, fellBack: false });
    const [req] = receiver.requests;
    expect(req?.body).toBe(PAYLOAD);
    expect(req?.headers['webhook-id']).toBe(DELIVERY_ID);
    expect(Math.abs(Number(req?.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(5);
    expect(req?.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(req?.headers['content-type']).toBe('application/json');
    expect(new Webhook(SECRET).verify(req?.body ?? '', req?.headers as Record<string, string>)).toEqual(JSON.parse(PAYLOAD));
    assertNoSecretLeak(result);
  });

  it('Q1: without signing secrets, webhook-id and webhook-timestamp are still sent', async () => {
    await deliverNotification(input({}, { signingSecrets: [] }));
    const [req] = receiver.requests;
    expect(req?.headers['webhook-id']).toBe(DELIVERY_ID);
    expect(req?.headers['webhook-timestamp']).toMatch(/^\d+$/);
    expect(req?.headers['webhook-signature']).toBeUndefined();
  });

  it('W3: the notification body is not interpreted (any 2xx succeeds, even a non-JSON or trickling body)', async () => {
    receiver.setHandler({ status: 200, body: '{"decision":"deny","reason":"no"} garbage' });
    expect(await deliverNotification(input({}, { excerptBytes: 2048 }))).toMatchObject({
      ok: true,
      httpStatus: 200,
      responseExcerpt: '{"decision":"deny","reason":"no"} garbage',
    });
    receiver.setHandler({ status: 202, trickle: { chunk: 'x', intervalMs: 100, count: 100 } });
    const trickle = await deliverNotification(input({ timeout: 0.3 }));
    expect(trickle).toMatchObject({ ok: true, httpStatus: 202 });
  });

  it('W3: non-2xx, 3xx and timeout are failures; 503 + Retry-After is retryable, 404 and 301 are permanent', async () => {
    receiver.setHandler({ status: 503, headers: { 'retry-after': '120' }, body: `echo ${TOKEN}` });
    expect(await deliverNotification(input({}))).toMatchObject({
      ok: false,
      errorClass: 'http_error',
      httpStatus: 503,
      retryAfterMs: 120_000,
      permanent: false,
      critical: false,
    });
    receiver.setHandler({ status: 404 });
    expect(await deliverNotification(input({}))).toMatchObject({ ok: false, errorClass: 'http_error', httpStatus: 404, permanent: true });
    receiver.setHandler((req) => (req.path === '/hook' ? { status: 301, headers: { location: '/elsewhere' } } : { status: 200 }));
    expect(await deliverNotification(input({}))).toMatchObject({ ok: false, errorClass: 'http_error', httpStatus: 301, permanent: true });
    expect(receiver.requests.some((r) => r.path === '/elsewhere')).toBe(false);
    receiver.setHandler({ status: 200, delayMs: 1_000 });
    expect(await deliverNotification(input({ timeout: 0.2 }))).toMatchObject({ ok: false, errorClass: 'timeout', permanent: false });
  });

  it("D6: a failure of a hook with fallback 'none' is critical, also with fetch delivery", async () => {
    receiver.setHandler({ status: 500 });
    expect(await deliverNotification(input({ fallback: 'none' }))).toMatchObject({ ok: false, critical: true, errorClass: 'http_error' });
  });

  it('Q7: a QStash publish forwards all our headers with dedup id <deliveryId>-<generation>; no fetch', async () => {
    const publisher = new FakePublisher({ ok: true, messageId: 'msg_1', deduplicated: false });
    const result = await deliverNotification(input({ delivery: 'qstash' }, { qstash: publisher, qstashRetries: 3 }));
    expect(result).toMatchObject({ ok: true, transport: 'qstash', messageId: 'msg_1', fellBack: false });
    expect(receiver.requests).toHaveLength(0);
    const [call] = publisher.calls;
    expect(call).toMatchObject({ destination: `${receiver.url}/hook`, body: PAYLOAD, deduplicationId: `${DELIVERY_ID}-2`, timeoutMs: 2_000, retries: 3 });
    expect(call?.headers).toMatchObject({ authorization: `Bearer ${TOKEN}`, 'webhook-id': DELIVERY_ID, 'content-type': 'application/json' });
    expect(new Webhook(SECRET).verify(PAYLOAD, call?.headers ?? {})).toBeTruthy();
    assertNoSecretLeak(result);
  });

  it('D7: a failed publish falls back to exactly one fetch, and the failure is logged even though the fallback succeeds', async () => {
    const publisher = new FakePublisher({ ok: false, errorClass: 'http_error', httpStatus: 500 });
    const result = await deliverNotification(input({ delivery: 'qstash' }, { qstash: publisher }));
    expect(result).toMatchObject({ ok: true, transport: 'fetch', fellBack: true, httpStatus: 204 });
    expect(publisher.calls).toHaveLength(1);
    expect(receiver.requests).toHaveLength(1);
    expect(receiver.requests[0]?.headers['webhook-id']).toBe(DELIVERY_ID);
    expect(receiver.requests[0]?.headers.authorization).toBe(`Bearer ${TOKEN}`);
    const warnings = logLines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.level === 40);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ hookId: 'h1', errorClass: 'http_error', httpStatus: 500 });
    assertNoSecretLeak(result);
  });

  it('D7: a failed publish followed by a failed fallback is one failure after exactly one fetch', async () => {
    receiver.setHandler({ status: 502 });
    const publisher = new FakePublisher({ ok: false, errorClass: 'network_error' });
    const result = await deliverNotification(input({ delivery: 'qstash' }, { qstash: publisher }));
    expect(result).toMatchObject({
      ok: false,
      errorClass: 'http_error',
      httpStatus: 502,
      transport: 'fetch',
      fellBack: true,
      critical: false,
      permanent: false,
    });
    expect(receiver.requests).toHaveLength(1);
  });

  it('D7: a missing QStash token (publish → configuration) or no publisher at all falls back to fetch', async () => {
    const publisher = new FakePublisher({ ok: false, errorClass: 'configuration' });
    expect(await deliverNotification(input({ delivery: 'qstash' }, { qstash: publisher }))).toMatchObject({ ok: true, transport: 'fetch', fellBack: true });
    expect(await deliverNotification(input({ delivery: 'qstash' }))).toMatchObject({ ok: true, transport: 'fetch', fellBack: true });
    expect(receiver.requests).toHaveLength(2);
    expect(logLines.filter((l) => l.includes('"level":40'))).toHaveLength(2);
  });

  it("D6/D7: fallback 'none' never fetches; the publish error is returned as critical", async () => {
    const publisher = new FakePublisher({ ok: false, errorClass: 'http_error', httpStatus: 503 });
    const result = await deliverNotification(input({ delivery: 'qstash', fallback: 'none' }, { qstash: publisher }));
    expect(result).toMatchObject({
      ok: false,
      errorClass: 'http_error',
      httpStatus: 503,
      critical: true,
      transport: 'qstash',
      fellBack: false,
      permanent: false,
    });
    const missing = await deliverNotification(input({ delivery: 'qstash', fallback: 'none' }));
    expect(missing).toMatchObject({ ok: false, errorClass: 'configuration', critical: true, transport: 'qstash' });
    expect(receiver.requests).toHaveLength(0);
    expect(logLines.some((l) => l.includes('"hookId":"h1"') && l.includes('"errorClass":"http_error"'))).toBe(true);
    assertNoSecretLeak(result);
  });

  it('Q5: the destination is checked before a QStash publish: a blocked one is neither published nor fetched', async () => {
    const publisher = new FakePublisher({ ok: true, messageId: 'm', deduplicated: false });
    for (const url of ['http://169.254.169.254/latest/meta-data/', 'http://[::ffff:10.0.0.1]/x', 'http://[fd00::1]/x', 'http://100.64.0.1/']) {
      const result = await deliverNotification(input({ delivery: 'qstash', url }, { qstash: publisher }));
      expect(result).toMatchObject({ ok: false, errorClass: 'ssrf_blocked', permanent: true });
    }
    expect(publisher.calls).toHaveLength(0);
  });

  it('Q5: a direct fetch to a blocked address is a permanent ssrf_blocked failure', async () => {
    const guarded = new FetchTransport();
    try {
      const result = await deliverNotification(input({}, { fetchTransport: guarded }));
      expect(result).toMatchObject({ ok: false, errorClass: 'ssrf_blocked', permanent: true });
      expect(receiver.requests).toHaveLength(0);
    } finally {
      await guarded.close();
    }
  });

  it('Q5: operator-trusted targets skip the guard: environment hooks and relative URLs against APP_URL', async () => {
    const guarded = new FetchTransport();
    try {
      expect(await deliverNotification(input({}, { fetchTransport: guarded, trusted: true }))).toMatchObject({ ok: true });
      expect(await deliverNotification(input({ url: '/relative' }, { fetchTransport: guarded, appUrl: receiver.url }))).toMatchObject({ ok: true });
      expect(receiver.requests.map((r) => r.path)).toEqual(['/hook', '/relative']);
    } finally {
      await guarded.close();
    }
  });

  it('W2/D7: configuration errors come before any attempt and never fall back (nothing published, nothing sent)', async () => {
    const publisher = new FakePublisher({ ok: true, messageId: 'm', deduplicated: false });
    const unset = await deliverNotification(input({ delivery: 'qstash' }, { qstash: publisher, env: {} }));
    expect(unset).toMatchObject({ ok: false, errorClass: 'configuration', permanent: true });
    if (!unset.ok) expect(unset.detail).toContain('HOOK_TOKEN');
    const crlf = await deliverNotification(input({}, { env: { HOOK_TOKEN: `${TOKEN}\r\nx-injected: 1` } }));
    expect(crlf).toMatchObject({ ok: false, errorClass: 'configuration' });
    const relative = await deliverNotification(input({ url: '/relative' }));
    expect(relative).toMatchObject({ ok: false, errorClass: 'configuration' });
    if (!relative.ok) expect(relative.detail).toMatch(/APP_URL/);
    expect(publisher.calls).toHaveLength(0);
    expect(receiver.requests).toHaveLength(0);
    assertNoSecretLeak([unset, crlf, relative]);
  });

  it('W4: cancellation is reported as cancelled', async () => {
    receiver.setHandler({ status: 200, delayMs: 1_000 });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    expect(await deliverNotification(input({}, { signal: controller.signal }))).toMatchObject({ ok: false, errorClass: 'cancelled', permanent: false });
  });

  it('Q1: each attempt stamps its own webhook-timestamp from the clock', async () => {
    await deliverNotification(input({}, { nowMs: () => 1_700_000_000_500 }));
    expect(receiver.requests[0]?.headers['webhook-timestamp']).toBe('1700000000');
  });
});
