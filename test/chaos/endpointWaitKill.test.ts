/**
 * Issue 27: jobs waiting in a worker's memory for their endpoint are still BullMQ jobs, active
 * and locked. A SIGKILLed worker's waiting jobs are redelivered by BullMQ's stall detection in
 * the next worker: nothing lost, each delivered with its own webhook-id.
 */
import { randomBytes } from 'node:crypto';
import { Queue } from 'bullmq';
import { sql } from 'drizzle-orm';
import { Redis } from 'ioredis';
import { afterAll, expect, it } from 'vitest';
import { createHookProducer } from '../../src/queue/producer.ts';
import { createTestStore, type TestStore } from '../support/db.ts';
import { spawnWorker, type HookrelayProcess } from '../support/hookrelayProcess.ts';
import { startReceiver, type Receiver } from '../support/receiver.ts';
import { deleteKeys, queueKeys } from '../support/redisKeys.ts';

const REDIS_URL = 'redis://127.0.0.1:6379/9';
const EVENTS = 4;
const cleanups: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

async function until(check: () => Promise<boolean> | boolean, timeoutMs: number, label: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${label}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

it(`Q2 (issue 27): a worker SIGKILLed with ${EVENTS - 1} jobs waiting in memory for their endpoint (cap 1) → the next worker delivers all ${EVENTS} (stall detection); none was moved to delayed`, async () => {
  const db: TestStore = await createTestStore('chaos_waitkill');
  cleanups.push(() => db.cleanup());
  const queueName = `chaos-waitkill-${randomBytes(3).toString('hex')}`;
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  cleanups.push(async () => {
    await deleteKeys(queueKeys(queueName), redis);
    redis.disconnect();
  });
  // Holds every request until `answering` (the first worker's attempt never ends).
  let answering = false;
  const seen = new Map<string, number>();
  const receiver: Receiver = await startReceiver(async (req) => {
    const id = String(req.headers['webhook-id'] ?? '');
    seen.set(id, (seen.get(id) ?? 0) + 1);
    while (!answering) await new Promise((r) => setTimeout(r, 20));
    return { status: 200 };
  });
  cleanups.push(() => receiver.close());
  const producer = createHookProducer({ store: db.store, redisUrl: REDIS_URL, queueName, env: {} });
  cleanups.push(() => producer.close());
  const queue = new Queue(queueName, { connection: redis });
  cleanups.push(() => queue.close());

  const env = {
    DATABASE_URL: db.url,
    REDIS_URL,
    HOOKRELAY_QUEUE: queueName,
    HOOKRELAY_HTTP_PORT: '0',
    HOOKRELAY_ALLOWED_CIDRS: '127.0.0.0/8',
    HOOKRELAY_CONCURRENCY: '8',
    HOOKRELAY_ENDPOINT_CONCURRENCY: '1',
    HOOKRELAY_LOCK_DURATION_MS: '2000',
    HOOKRELAY_STALLED_INTERVAL_MS: '1000',
    HOOKRELAY_RECONCILE_INTERVAL_MS: '1000',
  };
  const workers: HookrelayProcess[] = [];
  cleanups.push(async () => {
    for (const w of workers) {
      w.kill('SIGKILL');
      await w.exited;
    }
  });
  const first = spawnWorker(env);
  workers.push(first);
  await first.ready();

  const hooks = [{ id: 'held', type: 'onComplete' as const, webhook: { url: `${receiver.url}/held`, timeout: 3 } }];
  const { deliveryIds } = await producer.enqueueMany(
    Array.from({ length: EVENTS }, (_, i) => ({ operationId: `op-wait-${i}`, type: 'onComplete' as const, event: { i }, hooks })),
  );
  // One attempt is out (held by the receiver); the others wait in the worker's memory: active, not delayed.
  await until(
    async () => {
      const counts = await queue.getJobCounts('active', 'delayed', 'wait');
      return seen.size === 1 && counts.active === EVENTS;
    },
    20_000,
    'one attempt out and every job active',
  );
  for (let i = 0; i < 10; i += 1) {
    expect(await queue.getJobCounts('delayed')).toEqual({ delayed: 0 });
    await new Promise((r) => setTimeout(r, 50));
  }

  first.kill('SIGKILL');
  await first.exited;
  answering = true;
  const second = spawnWorker(env);
  workers.push(second);
  await second.ready();

  const delivered = async () =>
    ((await db.store.db.execute(sql`select count(*)::int as n from deliveries where status = 'delivered'`)) as unknown as { rows: Array<{ n: number }> })
      .rows[0]!.n;
  await until(async () => (await delivered()) === EVENTS, 60_000, 'every delivery delivered by the second worker');
  for (const id of deliveryIds) expect(seen.get(id) ?? 0).toBeGreaterThanOrEqual(1);
  expect([...seen.keys()].every((id) => deliveryIds.includes(id))).toBe(true);
});
