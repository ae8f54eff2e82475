/**
 * W2 template sources, queue mode, with the real worker (harness.ts): hookrelay's own variables
 * and names outside HOOKRELAY_TEMPLATE_ENV are refused by the producer, the operation store and
 * the queue-mode dispatcher before anything is stored, and again by the worker at send time — a
 * row already in the ledger fails as `configuration` without a request. No value reaches an
 * error, a log line, the ledger or Redis.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HookConfigError } from '../../../src/contract/errors.ts';
import type { ParsedSerializedHook } from '../../../src/contract/hook.ts';
import { WebhookConfigSchema } from '../../../src/contract/webhook.ts';
import { createOperationStore } from '../../../src/operations/operationStore.ts';
import { HookDispatcher } from '../../../src/dispatch/hookDispatcher.ts';
import { addDeliveryJobs } from '../../../src/queue/jobs.ts';
import { createHookProducer } from '../../../src/queue/producer.ts';
import { insertDeliveries, newDeliveryId } from '../../../src/store/deliveriesRepo.ts';
import { startReceiver, type Receiver } from '../../support/receiver.ts';
import { captureLogger, rejection } from '../../unit/dispatch/helpers.ts';
import { createStack, TEST_REDIS_URL, waitFor, type Stack } from './harness.ts';

/** The worker's own configuration, present in the environment its templates resolve from. */
const WORKER_ENV = {
  DATABASE_URL: 'postgres://ledger:DB-SECRET-q7e1@db.internal:5432/hookrelay',
  QSTASH_CURRENT_SIGNING_KEY: 'sig_QSTASH-SECRET-q0ffee',
  HOOKRELAY_SIGNING_SECRETS: 'whsec_SIGNINGSECRETq123456789abcdSIGNINGSECRETq123456789abcd',
  AGENT_HOOK_WEBHOOK_TOKEN: 'ENV-HOOK-TOKEN-SECRET-q9b2',
  BILLING_TOKEN: 'BILLING-SECRET-q4d4d',
  HOOK_TOKEN: 'hook-token-ok-q1234',
};
const SECRET_VALUES = [
  WORKER_ENV.DATABASE_URL,
  WORKER_ENV.QSTASH_CURRENT_SIGNING_KEY,
  WORKER_ENV.HOOKRELAY_SIGNING_SECRETS,
  WORKER_ENV.AGENT_HOOK_WEBHOOK_TOKEN,
  WORKER_ENV.BILLING_TOKEN,
];
const RESERVED = ['DATABASE_URL', 'QSTASH_CURRENT_SIGNING_KEY', 'HOOKRELAY_SIGNING_SECRETS'] as const;

function expectNoSecret(text: string): void {
  for (const value of SECRET_VALUES) expect(text).not.toContain(value);
}

describe('W2 template sources: queue mode (real worker)', () => {
  let stack: Stack;
  let rx: Receiver;
  const log = captureLogger();

  beforeAll(async () => {
    stack = await createStack('w2sources');
    rx = await startReceiver({ status: 204 });
    // The worker's operator allows HOOK_* only; its environment holds every secret above.
    await stack.startWorker({ HOOKRELAY_TEMPLATE_ENV: 'HOOK_*' }, { env: { ...WORKER_ENV }, logger: log.logger });
  });
  afterAll(async () => {
    await stack.cleanup();
    await rx.close();
  });

  const hookReading = (variable: string, path = '/steal') => ({
    id: `reads-${variable.toLowerCase()}`,
    type: 'onComplete' as const,
    webhook: { url: `${rx.url}${path}`, headers: { 'x-stolen': `\${${variable}}` }, allowedEnvVars: [variable] },
  });

  const rowsOf = async (operationId: string) =>
    (await stack.db.store.pool!.query<{ id: string }>('select id from deliveries where operation_id = $1', [operationId])).rows;

  /** A ledger row written directly (as an older version, or a hand-edited row, would have left it). */
  async function insertRow(operationId: string, hook: unknown): Promise<string> {
    const id = newDeliveryId();
    await insertDeliveries(stack.db.store.db, [
      {
        id,
        operationId,
        eventType: 'onComplete',
        hookId: (hook as { id: string }).id,
        hook: hook as ParsedSerializedHook,
        transport: 'fetch',
        payload: { operationId },
        idempotencyKey: null,
        occurredAt: new Date(),
      },
    ]);
    await addDeliveryJobs(stack.worker().queue, [{ deliveryId: id, generation: 0 }]);
    return id;
  }

  const settled = async (id: string) => {
    await waitFor(async () => ['failed', 'delivered', 'skipped'].includes((await stack.producer.getDelivery(id))?.status ?? ''), 15_000, `delivery ${id}`);
    return (await stack.producer.getDelivery(id))!;
  };

  it.each(RESERVED)('W2 template sources: producer.enqueue refuses a hook reading %s, naming it; nothing is stored', async (variable) => {
    const operationId = `op-enqueue-${variable}`;
    const error = await rejection(stack.producer.enqueue({ operationId, type: 'onComplete', event: { operationId }, hooks: [hookReading(variable)] }));
    expect(error).toBeInstanceOf(HookConfigError);
    expect((error as Error).message).toContain(variable);
    expect(await rowsOf(operationId)).toEqual([]);
    expectNoSecret((error as Error).message);
  });

  it('W2 template sources: the queue-mode dispatcher and createOperation refuse them too; nothing stored or persisted', async () => {
    const d = new HookDispatcher({ mode: 'queue', producer: stack.producer, env: { ...WORKER_ENV }, logger: log.logger });
    const ops = createOperationStore({ store: stack.db.store });
    try {
      for (const variable of RESERVED) {
        expect(() => d.register('op-d', [hookReading(variable)])).toThrow(HookConfigError);
        const error = await rejection(ops.createOperation({ operationId: `op-create-${variable}`, hooks: [hookReading(variable)] }));
        expect(error).toBeInstanceOf(HookConfigError);
        expect((error as Error).message).toContain(variable);
        expect(await ops.getOperation(`op-create-${variable}`)).toBeUndefined();
      }
      await d.dispatch('op-d', 'onComplete', { operationId: 'op-d' });
      expect(await rowsOf('op-d')).toEqual([]);
    } finally {
      await d.close();
    }
  });

  it('W2 template sources: a producer whose pattern is HOOK_* refuses BILLING_TOKEN and stores HOOK_TOKEN', async () => {
    const producer = createHookProducer({
      store: stack.db.store,
      redisUrl: TEST_REDIS_URL,
      queueName: stack.queueName,
      queuePrefix: stack.prefix,
      env: { HOOKRELAY_TEMPLATE_ENV: 'HOOK_*' },
    });
    try {
      const error = await rejection(producer.enqueue({ operationId: 'op-pattern', type: 'onComplete', event: {}, hooks: [hookReading('BILLING_TOKEN')] }));
      expect((error as Error).message).toMatch(/BILLING_TOKEN is not allowed by HOOKRELAY_TEMPLATE_ENV/);
      expect(await rowsOf('op-pattern')).toEqual([]);
      const { deliveryIds } = await producer.enqueue({ operationId: 'op-pattern', type: 'onComplete', event: {}, hooks: [hookReading('HOOK_TOKEN', '/ok')] });
      const done = await settled(deliveryIds[0]!);
      expect(done.status).toBe('delivered');
      const sent = rx.requests.filter((r) => r.path === '/ok');
      expect(sent).toHaveLength(1);
      expect(sent[0]!.headers['x-stolen']).toBe(WORKER_ENV.HOOK_TOKEN);
    } finally {
      await producer.close();
    }
  });

  it.each(RESERVED)('W2 template sources: a ledger row already reading %s fails in the worker as configuration, nothing sent', async (variable) => {
    const id = await insertRow(`op-row-${variable}`, {
      ...hookReading(variable),
      webhook: { ...WebhookConfigSchema.parse({ url: `${rx.url}/steal` }), headers: { 'x-stolen': `\${${variable}}` }, allowedEnvVars: [variable] },
    });
    const done = await settled(id);
    expect(done).toMatchObject({ status: 'failed', lastErrorClass: 'configuration', attemptCount: 1 });
    expect(rx.requests.filter((r) => r.path === '/steal')).toHaveLength(0);
  });

  it("W2 template sources: a ledger row reading a name outside the worker's HOOKRELAY_TEMPLATE_ENV fails as configuration, nothing sent", async () => {
    const id = await insertRow('op-row-billing', hookReading('BILLING_TOKEN'));
    const done = await settled(id);
    expect(done).toMatchObject({ status: 'failed', lastErrorClass: 'configuration' });
    expect(rx.requests.filter((r) => r.path === '/steal')).toHaveLength(0);
  });

  it("W2 template sources: a forged environment-hook row cannot carry AGENT_HOOK_WEBHOOK_TOKEN to a URL the worker's environment does not name", async () => {
    const forged = {
      id: 'server-env-webhook:onComplete',
      type: 'onComplete' as const,
      webhook: { url: `${rx.url}/forged`, headers: { authorization: 'Bearer ${AGENT_HOOK_WEBHOOK_TOKEN}' }, allowedEnvVars: ['AGENT_HOOK_WEBHOOK_TOKEN'] },
    };
    // The producer refuses a caller's reserved id (SEC-6, E4): a forged row can only be written into the ledger directly.
    const id = await insertRow('op-forged', forged);
    const done = await settled(id);
    // F4: an environment hook's target is the worker's environment's, by id; this worker has none, so nothing is sent anywhere.
    expect(done).toMatchObject({ status: 'skipped', failureReason: 'environment_hook_removed', attemptCount: 0 });
    expect(rx.requests.filter((r) => r.path === '/forged')).toHaveLength(0);
    expect(rx.requests.filter((r) => JSON.stringify(r.headers).includes(WORKER_ENV.AGENT_HOOK_WEBHOOK_TOKEN))).toHaveLength(0);
  });

  it('W2 template sources: no secret value in the worker log, the ledger or Redis', async () => {
    const dump = await stack.db.store.pool!.query<{ t: string }>('select d::text as t from deliveries d');
    const redis = (await stack.redisKeys()).join('\n');
    expectNoSecret(`${log.text()}\n${dump.rows.map((r) => r.t).join('\n')}\n${redis}`);
    expect(log.lines.length).toBeGreaterThan(0); // the worker did log the failures (by class)
  });
});
