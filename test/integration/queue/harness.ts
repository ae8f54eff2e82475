/**
 * One isolated delivery stack per test file: its own schema, BullMQ prefix and queue name, an
 * in-process worker service and a producer, both on the real Redis and Postgres.
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { loadSettings, type Settings } from '../../../src/config/settings.ts';
import { silentLogger, type Logger } from '../../../src/observability/logger.ts';
import type { Store } from '../../../src/store/db.ts';
import { createHookProducer } from '../../../src/queue/producer.ts';
import { startDeliveryService, type DeliveryService } from '../../../src/worker/service.ts';
import type { HookProducer } from '../../../src/queue/types.ts';
import { createTestStore, type TestStore } from '../../support/db.ts';
import { deleteKeys, listKeys, TEST_REDIS_URL } from '../../support/redisKeys.ts';

export { TEST_REDIS_URL } from '../../support/redisKeys.ts';

/** Settings for a fast test worker: short retries, locks and reconcile interval, loopback allowed. */
export const FAST_ENV: Record<string, string> = {
  HOOKRELAY_RETRY_SCHEDULE: '0.05,0.1',
  HOOKRELAY_LOCK_DURATION_MS: '2000',
  HOOKRELAY_STALLED_INTERVAL_MS: '1000',
  HOOKRELAY_RECONCILE_INTERVAL_MS: '500',
  HOOKRELAY_SHUTDOWN_TIMEOUT_MS: '5000',
  HOOKRELAY_ALLOWED_CIDRS: '127.0.0.0/8',
  HOOKRELAY_HTTP_PORT: '0',
  HOOKRELAY_CONCURRENCY: '32',
  LOG_LEVEL: 'silent',
};

export type Stack = {
  db: TestStore;
  prefix: string;
  queueName: string;
  producer: HookProducer;
  settings(extra?: Record<string, string>): Settings;
  startWorker(
    extra?: Record<string, string>,
    opts?: { env?: Record<string, string | undefined>; logger?: Logger; reconcileGraceMs?: number; qstashRetries?: number; store?: Store },
  ): Promise<DeliveryService>;
  /** The most recently started worker service. */
  worker(): DeliveryService;
  /** Every Redis key under this stack's prefix. */
  redisKeys(): Promise<string[]>;
  cleanup(): Promise<void>;
};

export async function createStack(name: string): Promise<Stack> {
  const db = await createTestStore(`q_${name}`);
  const suffix = randomBytes(4).toString('hex');
  const prefix = `hrtest_${name}_${suffix}`;
  const queueName = `q-${name}-${suffix}`;
  const admin = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: null });
  const workers: DeliveryService[] = [];
  const producer = createHookProducer({ store: db.store, redisUrl: TEST_REDIS_URL, queueName, queuePrefix: prefix, env: {} });
  const settings = (extra: Record<string, string> = {}) => loadSettings({ ...FAST_ENV, REDIS_URL: TEST_REDIS_URL, HOOKRELAY_QUEUE: queueName, ...extra });
  return {
    db,
    prefix,
    queueName,
    producer,
    settings,
    async startWorker(extra = {}, opts = {}) {
      const service = await startDeliveryService({
        settings: settings(extra),
        store: opts.store ?? db.store,
        logger: opts.logger ?? silentLogger(),
        queuePrefix: prefix,
        reconcileGraceMs: opts.reconcileGraceMs ?? 200,
        ...(opts.env ? { env: opts.env } : {}),
        ...(opts.qstashRetries !== undefined ? { qstashRetries: opts.qstashRetries } : {}),
      });
      workers.push(service);
      return service;
    },
    worker() {
      const last = workers[workers.length - 1];
      if (!last) throw new Error('no worker started');
      return last;
    },
    redisKeys: () => listKeys(`${prefix}:*`, admin),
    async cleanup() {
      for (const w of workers) await w.stop().catch(() => undefined);
      await producer.close().catch(() => undefined);
      await deleteKeys(`${prefix}:*`, admin);
      admin.disconnect();
      await db.cleanup();
    },
  };
}

/** Polls until `check` is true (or throws after `timeoutMs`). */
export async function waitFor(check: () => boolean | Promise<boolean>, timeoutMs = 10_000, label = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${label}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** A fetch webhook hook pointing at `url`. */
export function fetchHook(id: string, url: string, extra: Record<string, unknown> = {}) {
  return { id, type: 'onComplete' as const, webhook: { url, ...extra } };
}
