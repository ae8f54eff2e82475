/**
 * Issue 30 (OD-11): the turn keeper's in-memory wait against real Postgres rows (no worker on
 * the queue: the test drives the gate itself). A successor waiting in memory behind a delivery
 * running in the same worker still has its deadline run (Q3): past it, it is expired, never let go.
 */
import type { Job } from 'bullmq';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { silentLogger } from '../../../src/observability/logger.ts';
import { createHookProducer } from '../../../src/queue/producer.ts';
import type { DeliveryJobData, HookProducer } from '../../../src/queue/types.ts';
import { rowsOf } from '../../../src/store/db.ts';
import { createTurnKeeper, type OrderedTarget } from '../../../src/worker/attempt/ordering.ts';
import { createStack, TEST_REDIS_URL, waitFor, type Stack } from './harness.ts';

let stack: Stack;
let ordered: HookProducer;

beforeAll(async () => {
  stack = await createStack('ordering_gate');
  ordered = createHookProducer({
    store: stack.db.store,
    redisUrl: TEST_REDIS_URL,
    queueName: stack.queueName,
    queuePrefix: stack.prefix,
    env: {},
    ordering: 'operation',
  });
});

afterAll(async () => {
  await ordered?.close();
  await stack?.cleanup();
});

it('OD-11 ordering (Q3): a successor waiting in memory while its predecessor runs here is expired at its deadline, never let go', async () => {
  const hooks = [{ id: 'gate', type: 'afterStep' as const, webhook: { url: 'http://127.0.0.1:9/gate' } }];
  await Promise.all([0, 1].map((stepIndex) => ordered.enqueue({ operationId: 'od11', type: 'afterStep', event: { stepIndex }, hooks })));
  const rows = rowsOf<{ id: string; sequence: number; hook_id: string }>(
    await stack.db.store.db.execute(sql`select id, sequence, hook_id from deliveries where operation_id = 'od11' order by sequence`),
  );
  expect(rows.map((r) => Number(r.sequence))).toEqual([1, 2]);
  const targets = new Map<string, OrderedTarget>(
    rows.map((r) => [
      r.id,
      {
        id: r.id,
        generation: 0,
        tenant: 'default',
        operationId: 'od11',
        hookId: r.hook_id,
        sequence: Number(r.sequence),
        onFailure: 'continue',
        deadlineAtMs: undefined,
      },
    ]),
  );
  // A short deadline budget; room for waiters in memory.
  const gate = createTurnKeeper({ db: stack.db.store.db, budgetMs: 300, logger: silentLogger(), waitAllowance: 4 });
  let release: () => void = () => undefined;
  const held = new Promise<void>((resolve) => (release = resolve));
  const admitted: string[] = [];
  const processor = gate.wrap(async (job, token) => {
    const target = targets.get(String(job.id))!;
    const result = await gate.admit(job, token, target);
    admitted.push(`${target.sequence}:${result.kind}`);
    // Sequence 1 stays running here until released.
    if (target.sequence === 1) await held;
  });
  // Only what the gate reads of a job that goes or expires in memory (no park: nothing of Redis is touched).
  const job = (id: string) => ({ id, data: { deliveryId: id, generation: 0 } }) as unknown as Job<DeliveryJobData>;
  const [first, second] = rows.map((r) => r.id) as [string, string];
  try {
    const running = processor(job(first), 'token-1');
    await waitFor(() => admitted.length === 1, 10_000, 'sequence 1 admitted');
    const waiting = processor(job(second), 'token-2');
    await waitFor(() => gate.waiting() === 1 || admitted.length === 2, 10_000, 'sequence 2 waiting in memory');
    expect(admitted).toEqual(['1:go']);
    await waiting;
    // 1 is still running and unsettled: 2 never went; its deadline passed while it waited in memory.
    expect(admitted).toEqual(['1:go', '2:expired']);
    expect(gate.waiting()).toBe(0);
    release();
    await running;
  } finally {
    release();
    gate.close();
  }
}, 30_000);
