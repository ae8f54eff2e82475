import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startReceiver, type RunningReceiver, type VerifiedDelivery } from '../../examples/receiver.ts';
import { loadSettings } from '../../src/config/settings.ts';
import { CriticalHookDeliveryError, WebhookDeliveryFailure } from '../../src/contract/errors.ts';
import { HookDispatcher } from '../../src/dispatch/hookDispatcher.ts';
import { silentLogger } from '../../src/observability/logger.ts';
import { createHookProducer } from '../../src/queue/producer.ts';
import { startDeliveryService, type DeliveryService } from '../../src/worker/service.ts';
import type { HookProducer } from '../../src/queue/types.ts';
import { createTestStore, type TestStore } from '../support/db.ts';
import { deleteKeys, queueKeys, TEST_REDIS_URL } from '../support/redisKeys.ts';
import { waitFor } from '../integration/queue/harness.ts';

const newSecret = () => `whsec_${randomBytes(32).toString('base64')}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('examples/receiver.ts against real hookrelay deliveries (Q1, Q6)', () => {
  const secret = newSecret();
  const processed: VerifiedDelivery[] = [];
  let receiver: RunningReceiver;
  let t: TestStore;
  let producer: HookProducer;
  let worker: DeliveryService;
  const queueName = `receiver-${randomBytes(4).toString('hex')}`;
  const dispatchers: HookDispatcher[] = [];

  const dispatcher = (env: Record<string, string>) => {
    const d = new HookDispatcher({ env, allowedCidrs: '127.0.0.1/32', logger: silentLogger() });
    dispatchers.push(d);
    return d;
  };
  const processedFor = (operationId: string) => processed.filter((p) => p.payload.operationId === operationId);

  beforeAll(async () => {
    receiver = await startReceiver({
      secrets: `${newSecret()} ${secret}`, // the receiver knows an old secret too (rotation): any one verifies
      onDelivery: async (delivery) => {
        // The first attempt of a "slow" event outlives the hook's timeout: its answer is lost.
        const slowMs = delivery.payload.slowMs;
        if (typeof slowMs === 'number') await sleep(slowMs);
        processed.push(delivery);
      },
    });
    t = await createTestStore('receiver');
    producer = createHookProducer({ store: t.store, redisUrl: TEST_REDIS_URL, queueName, env: {} });
    worker = await startDeliveryService({
      settings: loadSettings({
        REDIS_URL: TEST_REDIS_URL,
        HOOKRELAY_QUEUE: queueName,
        HOOKRELAY_ALLOWED_CIDRS: '127.0.0.1/32',
        HOOKRELAY_SIGNING_SECRETS: secret,
        // Spare attempts: a retry that finds the first attempt still running gets 409 and comes back.
        HOOKRELAY_RETRY_SCHEDULE: '2,2,2,2',
        LOG_LEVEL: 'silent',
      }),
      store: t.store,
      logger: silentLogger(),
      http: false,
      env: {},
    });
  }, 60_000);

  afterAll(async () => {
    for (const d of dispatchers) await d.close();
    await worker?.stop();
    await producer?.close();
    await receiver?.close();
    await deleteKeys(queueKeys(queueName));
    await t?.cleanup();
  }, 60_000);

  it('Q6: a signed delivery from a local-mode dispatcher is verified and processed once', async () => {
    const hooks = dispatcher({ HOOKRELAY_SIGNING_SECRETS: secret });
    hooks.register('op_valid', [{ id: 'billing', type: 'onComplete', webhook: { url: `${receiver.url}/hooks`, fallback: 'none' } }]);
    await hooks.dispatch('op_valid', 'onComplete', { operationId: 'op_valid', reason: 'done' });
    const got = processedFor('op_valid');
    expect(got).toHaveLength(1);
    expect(got[0]!.id).toMatch(/^dlv_[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(got[0]!.payload).toMatchObject({ operationId: 'op_valid', reason: 'done', hookId: 'billing', hookType: 'onComplete', deliveryId: got[0]!.id });
  });

  it('Q1: the same webhook-id again (a retry after a lost answer, through the worker) is not processed twice', async () => {
    // Attempt 1 reaches the receiver, which processes it for 2.5 s; hookrelay gives up after 1 s
    // (timeout) and retries with the same id; the retry is answered 2xx without processing.
    const { deliveryIds } = await producer.enqueue({
      operationId: 'op_retry',
      type: 'onComplete',
      event: { reason: 'done', slowMs: 2500 },
      hooks: [{ id: 'slow', type: 'onComplete', webhook: { url: `${receiver.url}/hooks`, timeout: 1 } }],
    });
    const id = deliveryIds[0]!;
    await waitFor(async () => (await producer.getDelivery(id))?.status === 'delivered', 25_000, 'the retried delivery to be delivered');
    const delivery = (await producer.getDelivery(id))!;
    expect(delivery.attempts.length).toBeGreaterThanOrEqual(2);
    expect(delivery.attempts[0]).toMatchObject({ outcome: 'failed', errorClass: 'timeout' });
    expect(delivery.attempts.at(-1)).toMatchObject({ outcome: 'delivered', httpStatus: 200 });
    const got = processedFor('op_retry');
    expect(got).toHaveLength(1);
    expect(got[0]!.id).toBe(id);
  }, 40_000);

  it('Q1: a captured delivery sent again with the same id is answered 2xx and not processed again', async () => {
    const body = JSON.stringify({ operationId: 'op_resend', hookId: 'x', hookType: 'onComplete' });
    const id = 'dlv_01JRESENDRESENDRESENDRESE0';
    const send = () => {
      const now = new Date();
      return fetch(`${receiver.url}/hooks`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'webhook-id': id,
          'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
          'webhook-signature': new Webhook(secret).sign(id, now, body),
        },
        body,
      });
    };
    const first = await send();
    const second = await send();
    expect([first.status, await first.json()]).toEqual([200, { result: 'processed' }]);
    expect([second.status, await second.json()]).toEqual([200, { result: 'duplicate' }]);
    expect(processedFor('op_resend')).toHaveLength(1);
  });

  it('Q6: deliveries signed with another secret, or not signed at all, are refused with 401', async () => {
    for (const [operationId, env] of [
      ['op_forged', { HOOKRELAY_SIGNING_SECRETS: newSecret() }],
      ['op_unsigned', {}],
    ] as const) {
      const hooks = dispatcher(env);
      hooks.register(operationId, [{ id: 'billing', type: 'onComplete', webhook: { url: `${receiver.url}/hooks`, fallback: 'none' } }]);
      const error = await hooks.dispatch(operationId, 'onComplete', { operationId, reason: 'done' }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(CriticalHookDeliveryError);
      const cause = (error as CriticalHookDeliveryError).cause;
      expect(cause).toBeInstanceOf(WebhookDeliveryFailure);
      expect(cause).toMatchObject({ errorClass: 'http_error', httpStatus: 401 });
      expect(processedFor(operationId)).toHaveLength(0);
    }
  });

  it('Q6: a tampered body and a stale timestamp are refused with 401', async () => {
    const id = 'dlv_01JTAMPERTAMPERTAMPERTAMP0';
    const signedBody = JSON.stringify({ operationId: 'op_tampered', amount: 1 });
    const now = new Date();
    const tampered = await fetch(`${receiver.url}/hooks`, {
      method: 'POST',
      headers: {
        'webhook-id': id,
        'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
        'webhook-signature': new Webhook(secret).sign(id, now, signedBody),
      },
      body: signedBody.replace('1', '1000'),
    });
    expect(tampered.status).toBe(401);

    const old = new Date(Date.now() - 10 * 60 * 1000); // outside the 5-minute tolerance
    const staleBody = JSON.stringify({ operationId: 'op_stale' });
    const stale = await fetch(`${receiver.url}/hooks`, {
      method: 'POST',
      headers: {
        'webhook-id': id,
        'webhook-timestamp': String(Math.floor(old.getTime() / 1000)),
        'webhook-signature': new Webhook(secret).sign(id, old, staleBody),
      },
      body: staleBody,
    });
    expect(stale.status).toBe(401);
    expect(processedFor('op_tampered')).toHaveLength(0);
    expect(processedFor('op_stale')).toHaveLength(0);
  });
});
