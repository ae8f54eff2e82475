import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HookDispatcher } from '../../../src/dispatch/hookDispatcher.ts';
import { silentLogger } from '../../../src/observability/logger.ts';
import { addDeliveryJobs } from '../../../src/queue/jobs.ts';
import { insertDeliveries, newDeliveryId } from '../../../src/store/deliveriesRepo.ts';
import { startReceiver, type Receiver } from '../../support/receiver.ts';
import { createStack, waitFor, type Stack } from './harness.ts';

const ENV_TOKEN = 'env-token-8e21c4';

describe('E3/E4/D8: environment hooks in queue mode', () => {
  let stack: Stack;
  let receiver: Receiver;
  beforeAll(async () => {
    stack = await createStack('envhooks');
    receiver = await startReceiver({ status: 204 });
  });
  afterAll(async () => {
    await stack.cleanup();
    await receiver.close();
  });

  it('E3/Q5: env hooks are enqueued with their reserved ids and delivered by the worker as trusted targets, token resolved at send time', async () => {
    const env = {
      AGENT_HOOK_WEBHOOK_URL: `${receiver.url}/env`,
      AGENT_HOOK_WEBHOOK_TOKEN: ENV_TOKEN,
      AGENT_HOOK_WEBHOOK_EVENTS: 'onComplete',
    };
    // The worker has no allow-list for 127.0.0.1: only the operator's env hook may reach it.
    await stack.startWorker({ HOOKRELAY_ALLOWED_CIDRS: '' }, { env });
    const d = new HookDispatcher({ mode: 'queue', producer: stack.producer, env, logger: silentLogger() });
    try {
      d.register('op-env', [{ id: 'caller', type: 'onComplete', webhook: { url: `${receiver.url}/caller` } }]);
      await d.dispatch('op-env', 'onComplete', { operationId: 'op-env', reason: 'done' });
      const rows = await stack.db.store.pool!.query<{ hook_id: string; status: string; hook: unknown }>(
        'select hook_id, status, hook from deliveries where operation_id = $1 order by hook_id',
        ['op-env'],
      );
      expect(rows.rows.map((r) => r.hook_id)).toEqual(['caller', 'server-env-webhook:onComplete']);
      expect(JSON.stringify(rows.rows)).not.toContain(ENV_TOKEN);
      await waitFor(async () => {
        const r = await stack.db.store.pool!.query<{ n: number }>(
          `select count(*)::int as n from deliveries where operation_id = 'op-env' and status in ('delivered','failed')`,
        );
        return r.rows[0]!.n === 2;
      }, 15_000);
      const statuses = await stack.db.store.pool!.query<{ hook_id: string; status: string; last_error_class: string | null }>(
        'select hook_id, status, last_error_class from deliveries where operation_id = $1 order by hook_id',
        ['op-env'],
      );
      expect(statuses.rows).toEqual([
        { hook_id: 'caller', status: 'failed', last_error_class: 'ssrf_blocked' },
        { hook_id: 'server-env-webhook:onComplete', status: 'delivered', last_error_class: null },
      ]);
      const envCalls = receiver.requests.filter((r) => r.path === '/env');
      expect(envCalls).toHaveLength(1);
      expect(envCalls[0]!.headers.authorization).toBe(`Bearer ${ENV_TOKEN}`);
      expect(receiver.requests.filter((r) => r.path === '/caller')).toHaveLength(0);
    } finally {
      await d.close();
    }
  });

  it("Q5/F4: a stored row with a reserved id but another URL is sent to the worker environment's own hook, never to its stored URL", async () => {
    // The producer refuses a caller's reserved id (SEC-6, E4): a forged row can only be written into the ledger directly.
    const forged = { id: 'server-env-webhook:onComplete', type: 'onComplete' as const, webhook: { url: `${receiver.url}/forged` } };
    const deliveryIds = [newDeliveryId()];
    await insertDeliveries(stack.db.store.db, [
      {
        id: deliveryIds[0]!,
        operationId: 'op-forged',
        eventType: 'onComplete',
        hookId: forged.id,
        hook: forged,
        transport: 'fetch',
        payload: { operationId: 'op-forged' },
        occurredAt: new Date(),
      },
    ]);
    await addDeliveryJobs(stack.worker().queue, [{ deliveryId: deliveryIds[0]!, generation: 0 }]);
    // F4: the target of an environment hook's delivery is the worker's current environment hook of that id.
    await waitFor(async () => (await stack.producer.getDelivery(deliveryIds[0]!))?.status === 'delivered', 15_000);
    expect(receiver.requests.filter((r) => r.path === '/forged')).toHaveLength(0);
    expect(receiver.requests.filter((r) => r.path === '/env' && r.headers['webhook-id'] === deliveryIds[0])).toHaveLength(1);
  });

  it('E4: a caller hook cannot smuggle a reserved id through the producer', async () => {
    await expect(
      stack.producer.enqueue({
        operationId: 'op-smuggle',
        type: 'onComplete',
        event: { operationId: 'op-smuggle' },
        hooks: [
          {
            id: 'server-env-webhook:onComplete',
            type: 'onComplete',
            webhook: { url: 'https://example.com/x', headers: { authorization: 'Bearer ${NOT_ALLOWED}' } },
          },
        ],
      }),
    ).rejects.toThrow(/allowedEnvVars/);
  });
});
