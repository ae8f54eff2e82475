/**
 * A bounded chaos run: a receiver counting webhook-ids, a producer feeding events at a steady
 * rate, and the real worker process on its own Redis db index and its own schema. The fault is
 * injected by the test; at the end every enqueued delivery must have reached the receiver (0
 * lost) and every extra request must repeat an id seen before (at-least-once, same webhook-id).
 */
import { randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { Redis } from 'ioredis';
import { deleteKeys, queueKeys } from '../support/redisKeys.ts';
import { createHookProducer } from '../../src/queue/producer.ts';
import type { HookProducer } from '../../src/queue/types.ts';
import { createTestStore, type TestStore } from '../support/db.ts';
import { startReceiver, type Receiver } from '../support/receiver.ts';
import { spawnWorker, type HookrelayProcess as WorkerProcess } from '../support/hookrelayProcess.ts';

export const EVENTS = Number(process.env.CHAOS_EVENTS ?? 5_000);
const FEED_BATCH = 100;
const FEED_PAUSE_MS = 100;
const DRAIN_TIMEOUT_MS = 90_000;

export type ChaosReport = { enqueued: number; received: number; unique: number; lost: number; duplicated: number; unknown: number; delivered: number };

export type ChaosRun = {
  name: string;
  redisUrl: string;
  redis: Redis;
  db: TestStore;
  appName: string;
  receiver: Receiver;
  producer: HookProducer;
  deliveryIds: string[];
  /** Starts a worker process (and waits for "ready"). */
  /** A worker process on the run's queue; `env` adds or overrides settings (e.g. a longer retry schedule). */
  startWorker(env?: Record<string, string>): Promise<WorkerProcess>;
  /** Enqueues EVENTS events in batches at a steady pace; `onProgress` sees the count so far. */
  feed(onProgress?: (enqueued: number) => Promise<void> | void): Promise<void>;
  /** Waits until the ledger says every delivery is delivered; returns the counts. */
  finish(): Promise<ChaosReport>;
  cleanup(): Promise<void>;
};

export async function createChaosRun(name: string, redisDb: number): Promise<ChaosRun> {
  const redisUrl = `redis://127.0.0.1:6379/${redisDb}`;
  const redis = new Redis(redisUrl);
  const db = await createTestStore(`chaos_${name}`);
  const appName = `hookrelay_chaos_${name}_${randomBytes(3).toString('hex')}`;
  const queue = `chaos-${name}`;
  const counts = new Map<string, number>();
  const receiver = await startReceiver((req) => {
    const id = String(req.headers['webhook-id'] ?? '');
    counts.set(id, (counts.get(id) ?? 0) + 1);
    return { status: 200 };
  });
  const producer = createHookProducer({ store: db.store, redisUrl, queueName: queue, env: {} });
  const workers: WorkerProcess[] = [];
  const deliveryIds: string[] = [];
  const url = new URL(db.url);
  url.searchParams.set('application_name', appName);

  const clearQueueKeys = () => deleteKeys(queueKeys(queue), redis);
  await clearQueueKeys();

  const deliveredCount = async (): Promise<number> => {
    const result = await db.store.db.execute(sql`select count(*)::int as n from deliveries where status = 'delivered'`);
    return (result as unknown as { rows: Array<{ n: number }> }).rows[0]?.n ?? 0;
  };

  return {
    name,
    redisUrl,
    redis,
    db,
    appName,
    receiver,
    producer,
    deliveryIds,
    async startWorker(env = {}) {
      const worker = spawnWorker({
        DATABASE_URL: url.toString(),
        REDIS_URL: redisUrl,
        HOOKRELAY_QUEUE: queue,
        HOOKRELAY_HTTP_PORT: '0',
        HOOKRELAY_ALLOWED_CIDRS: '127.0.0.0/8',
        HOOKRELAY_RETRY_SCHEDULE: '0.2,0.5,1,2,4',
        HOOKRELAY_CONCURRENCY: '32',
        HOOKRELAY_LOCK_DURATION_MS: '2000',
        HOOKRELAY_STALLED_INTERVAL_MS: '1000',
        HOOKRELAY_RECONCILE_INTERVAL_MS: '1000',
        HOOKRELAY_SHUTDOWN_TIMEOUT_MS: '5000',
        LOG_LEVEL: 'info',
        ...env,
      });
      workers.push(worker);
      await worker.ready();
      return worker;
    },
    async feed(onProgress) {
      // A short webhook timeout keeps the in_flight lease (timeout + lock duration) short.
      const hooks = [{ id: 'chaos', type: 'onComplete' as const, webhook: { url: `${receiver.url}/chaos`, timeout: 2 } }];
      for (let sent = 0; sent < EVENTS; sent += FEED_BATCH) {
        const n = Math.min(FEED_BATCH, EVENTS - sent);
        const result = await producer.enqueueMany(
          Array.from({ length: n }, (_, i) => ({ operationId: `op-${sent + i}`, type: 'onComplete' as const, event: { i: sent + i }, hooks })),
        );
        deliveryIds.push(...result.deliveryIds);
        await onProgress?.(sent + n);
        await new Promise((r) => setTimeout(r, FEED_PAUSE_MS));
      }
    },
    async finish() {
      const deadline = Date.now() + DRAIN_TIMEOUT_MS;
      while ((await deliveredCount()) < deliveryIds.length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 250));
      await new Promise((r) => setTimeout(r, 500)); // late duplicates show up here
      const expected = new Set(deliveryIds);
      let received = 0;
      let unknown = 0;
      for (const [id, n] of counts) {
        received += n;
        if (!expected.has(id)) unknown += n;
      }
      const lost = deliveryIds.filter((id) => !counts.has(id)).length;
      const report: ChaosReport = {
        enqueued: deliveryIds.length,
        received,
        unique: counts.size,
        lost,
        duplicated: received - counts.size,
        unknown,
        delivered: await deliveredCount(),
      };
      process.stdout.write(
        `chaos[${name}]: enqueued=${report.enqueued} received=${report.received} lost=${report.lost} duplicated=${report.duplicated} unknown_ids=${report.unknown} ledger_delivered=${report.delivered}\n`,
      );
      return report;
    },
    async cleanup() {
      for (const w of workers) {
        w.kill('SIGKILL');
        await w.exited;
      }
      await producer.close().catch(() => undefined);
      await receiver.close();
      await clearQueueKeys().catch(() => undefined);
      redis.disconnect();
      await db.cleanup();
    },
  };
}
