/**
 * D7 through HookDispatcher in local mode: the QStash publisher is built from the dispatcher's
 * env (QSTASH_URL / QSTASH_TOKEN) and talks to a local QStash-compatible server with the real
 * `@upstash/qstash` Client; deliveries are verified with the real `Receiver`.
 */
import { Receiver as QStashReceiver } from '@upstash/qstash';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CriticalHookDeliveryError, HookDispatcher } from '../../../src/entry/index.ts';
import { startQStashServer, type QStashServer } from '../../support/qstashServer.ts';
import { startReceiver, type Receiver } from '../../support/receiver.ts';
import { captureLogger, rejection } from '../../unit/dispatch/helpers.ts';

const OP = 'op_qstash';
let qstash: QStashServer;
let receiver: Receiver;
let logs: ReturnType<typeof captureLogger>;
const dispatchers: HookDispatcher[] = [];

beforeEach(async () => {
  qstash = await startQStashServer({ retryBackoffMs: 5 });
  receiver = await startReceiver({ status: 200 });
  logs = captureLogger();
});
afterEach(async () => {
  await Promise.all(dispatchers.splice(0).map((d) => d.close()));
  await qstash.close();
  await receiver.close();
});

function make(env: Record<string, string | undefined> = { QSTASH_URL: qstash.url, QSTASH_TOKEN: qstash.token }): HookDispatcher {
  const d = new HookDispatcher({ env, allowedCidrs: '127.0.0.1/32', logger: logs.logger });
  dispatchers.push(d);
  return d;
}
const destination = () => `${receiver.url}/hook`;
const register = (d: HookDispatcher, fallback: 'fetch' | 'none' = 'fetch') =>
  d.register(OP, [{ id: 'q', type: 'onComplete', webhook: { url: destination(), delivery: 'qstash', fallback, headers: { 'x-app': 'demo' } } }]);
const direct = () => receiver.requests.filter((r) => r.headers['upstash-signature'] === undefined);

describe('D7: QStash delivery from local dispatch', () => {
  it('D7/Q7: a publish succeeds; QStash delivers a request that verifies with the real Receiver; no direct fetch', async () => {
    const d = make();
    register(d);
    await d.dispatch(OP, 'onComplete', { operationId: OP, reason: 'done' });
    expect(qstash.publishRequestCount()).toBe(1);
    await qstash.waitFor(() => receiver.requests.length === 1);
    await qstash.idle();
    const req = receiver.requests[0]!;
    const signature = req.headers['upstash-signature'];
    expect(typeof signature).toBe('string');
    const verifier = new QStashReceiver({ currentSigningKey: qstash.currentSigningKey, nextSigningKey: qstash.nextSigningKey });
    await expect(verifier.verify({ signature: signature as string, body: req.body, url: destination() })).resolves.toBe(true);
    expect(req.headers['x-app']).toBe('demo');
    expect(req.headers['webhook-id']).toMatch(/^dlv_/);
    expect(JSON.parse(req.body)).toMatchObject({ operationId: OP, reason: 'done', hookId: 'q', hookType: 'onComplete', deliveryId: req.headers['webhook-id'] });
    expect(qstash.messages[0]!.deduplicationId).toBe(`${req.headers['webhook-id']}-0`);
    expect(direct()).toHaveLength(0);
  });

  it('D7: QStash down → exactly one direct fetch; the publish failure is logged even though the fallback succeeded', async () => {
    qstash.setDown(true);
    const d = make();
    register(d);
    await expect(d.dispatch(OP, 'onComplete', { operationId: OP })).resolves.toEqual({ notAccepted: [] });
    expect(receiver.requests).toHaveLength(1);
    expect(direct()).toHaveLength(1);
    expect(qstash.publishRequestCount()).toBeLessThanOrEqual(1);
    expect(logs.text()).toContain('qstash publish failed');
    expect(logs.text()).toContain('"errorClass":"network_error"');
  });

  it('D7: a missing QStash token → one direct fetch, nothing published', async () => {
    const d = make({ QSTASH_URL: qstash.url });
    register(d);
    await d.dispatch(OP, 'onComplete', { operationId: OP });
    expect(qstash.publishRequestCount()).toBe(0);
    expect(direct()).toHaveLength(1);
  });

  it('D7: the token is read at send time (set after construction, it is used)', async () => {
    const env: Record<string, string | undefined> = { QSTASH_URL: qstash.url };
    const d = make(env);
    register(d);
    await d.dispatch(OP, 'onComplete', { operationId: OP });
    env.QSTASH_TOKEN = qstash.token;
    await d.dispatch(OP, 'onComplete', { operationId: OP });
    expect(qstash.publishRequestCount()).toBe(1);
    await qstash.waitFor(() => receiver.requests.length === 2);
    expect(direct()).toHaveLength(1);
  });

  it("D7/D6: fallback 'none' + missing token → CriticalHookDeliveryError (configuration), no fetch", async () => {
    const d = make({ QSTASH_URL: qstash.url });
    register(d, 'none');
    const error = (await rejection(d.dispatch(OP, 'onComplete', { operationId: OP }))) as CriticalHookDeliveryError;
    expect(error).toBeInstanceOf(CriticalHookDeliveryError);
    expect(error.hookId).toBe('q');
    expect(error.cause).toMatchObject({ errorClass: 'configuration' });
    expect(receiver.requests).toHaveLength(0);
  });

  it("D7/D6: fallback 'none' + QStash down → CriticalHookDeliveryError (network_error), no fetch", async () => {
    qstash.setDown(true);
    const d = make();
    register(d, 'none');
    const error = (await rejection(d.dispatch(OP, 'onComplete', { operationId: OP }))) as CriticalHookDeliveryError;
    expect(error.cause).toMatchObject({ errorClass: 'network_error' });
    expect(receiver.requests).toHaveLength(0);
  });

  it.each([401, 429, 503])("D7: publish answered %i with fallback 'none' → http_error with the status in the critical cause, no fetch", async (status) => {
    qstash.setPublishStatus(status);
    const d = make();
    register(d, 'none');
    const error = (await rejection(d.dispatch(OP, 'onComplete', { operationId: OP }))) as CriticalHookDeliveryError;
    expect(error.cause).toMatchObject({ errorClass: 'http_error', httpStatus: status });
    expect(String(error.cause)).toContain(String(status));
    expect(qstash.publishRequestCount()).toBe(1); // D6: one attempt in local mode
    expect(receiver.requests).toHaveLength(0);
    // sanitized: no token, no SDK text
    expect(`${error.message} ${String(error.cause)} ${logs.text()}`).not.toContain(qstash.token);
  });

  it.each([401, 429, 503])('D7: publish answered %i with the default fallback → exactly one direct fetch', async (status) => {
    qstash.setPublishStatus(status);
    const d = make();
    register(d);
    await d.dispatch(OP, 'onComplete', { operationId: OP });
    expect(direct()).toHaveLength(1);
    expect(logs.text()).toContain(`"httpStatus":${status}`);
  });

  it('D7/D6: a critical QStash failure is thrown after the sibling was delivered', async () => {
    qstash.setDown(true);
    const d = make();
    d.register(OP, [
      { id: 'crit', type: 'onComplete', webhook: { url: destination(), delivery: 'qstash', fallback: 'none' } },
      { id: 'sibling', type: 'onComplete', webhook: { url: `${receiver.url}/sibling` } },
    ]);
    const error = (await rejection(d.dispatch(OP, 'onComplete', { operationId: OP }))) as CriticalHookDeliveryError;
    expect(error.hookId).toBe('crit');
    expect(receiver.requests.map((r) => r.path)).toEqual(['/sibling']);
  });

  it('D7/Q5: the destination is SSRF-checked before a publish (not allow-listed → nothing published, no fetch)', async () => {
    const d = new HookDispatcher({ env: { QSTASH_URL: qstash.url, QSTASH_TOKEN: qstash.token }, allowedCidrs: '', logger: logs.logger });
    dispatchers.push(d);
    register(d, 'none');
    const error = (await rejection(d.dispatch(OP, 'onComplete', { operationId: OP }))) as CriticalHookDeliveryError;
    expect(error.cause).toMatchObject({ errorClass: 'ssrf_blocked' });
    expect(qstash.publishRequestCount()).toBe(0);
    expect(receiver.requests).toHaveLength(0);
  });
});
