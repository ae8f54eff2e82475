/**
 * The product under benchmark: the real producer and the real delivery service (ledger claims and
 * outcomes batched, undici keep-alive transport, payload builder, signing off), measured on the
 * same machine and receiver as the naive baseline.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Queue } from 'bullmq';
import { sql } from 'drizzle-orm';
import { Redis } from 'ioredis';
import { loadSettings } from '../src/config/settings.ts';
import { silentLogger } from '../src/observability/logger.ts';
import { createHookProducer } from '../src/queue/producer.ts';
import { startDeliveryService } from '../src/queue/service.ts';
import type { EnqueueInput } from '../src/queue/types.ts';
import { openStore, type Store } from '../src/store/db.ts';
import { migrateStore } from '../src/store/migrate.ts';
import { BENCH_PREFIX, BENCH_REDIS_URL, createBenchSchema, kibPayload, percentile, sleep, uniqueName, type BenchSchema } from './support.ts';

/** The V8 flags of the bin's shebang, `npm start` and the Dockerfile. */
export const WORKER_NODE_FLAGS = ['--max-semi-space-size=2', '--max-old-space-size=384'];

/** Events per producer call when pre-enqueueing (one INSERT + one addBulk each). */
export const ENQUEUE_BATCH = 500;
const POLL_MS = 20;

type Stack = { schema: BenchSchema; store: Store; close(): Promise<void> };

async function openBenchStore(name: string): Promise<Stack> {
  const schema = await createBenchSchema(name);
  const store = await openStore({ databaseUrl: schema.url, maxConnections: 10 });
  await migrateStore(store);
  return {
    schema,
    store,
    async close() {
      await store.close();
      await schema.drop();
    },
  };
}

function events(from: number, count: number, receiverUrl: string, extra: Record<string, unknown> = {}): EnqueueInput[] {
  const hooks = [{ id: 'bench', type: 'onComplete' as const, webhook: { url: `${receiverUrl}/product` } }];
  return Array.from({ length: count }, (_, k) => ({ operationId: `op-${from + k}`, type: 'onComplete' as const, event: { ...kibPayload(from + k), ...extra }, hooks }));
}

async function deliveredCount(store: Store): Promise<number> {
  const r = await store.db.execute(sql`select count(*)::int as n from deliveries where status = 'delivered'`);
  return (r as unknown as { rows: Array<{ n: number }> }).rows[0]?.n ?? 0;
}

function settingsFor(queueName: string, concurrency: number) {
  return loadSettings({
    REDIS_URL: BENCH_REDIS_URL,
    HOOKRELAY_QUEUE: queueName,
    HOOKRELAY_CONCURRENCY: String(concurrency),
    HOOKRELAY_ALLOWED_CIDRS: '127.0.0.0/8',
    HOOKRELAY_HTTP_PORT: '0',
    LOG_LEVEL: 'silent',
  });
}

export type ProductRun = { deliveriesPerSecond: number; enqueuePerSecond: number };

/** (a) `jobs` events pre-enqueued (timed apart), then drained by the worker until the ledger says delivered. */
export async function runProduct(opts: { concurrency: number; jobs: number; warmup: number; receiverUrl: string; receivedCount: () => Promise<number> }): Promise<ProductRun> {
  const stack = await openBenchStore('product');
  const queueName = uniqueName('product');
  const producer = createHookProducer({ store: stack.store, redisUrl: BENCH_REDIS_URL, queueName, queuePrefix: BENCH_PREFIX, env: {} });
  try {
    for (let i = 0; i < opts.warmup; i += ENQUEUE_BATCH) await producer.enqueueMany(events(i, Math.min(ENQUEUE_BATCH, opts.warmup - i), opts.receiverUrl));
    const service = await startDeliveryService({ settings: settingsFor(queueName, opts.concurrency), store: stack.store, logger: silentLogger(), queuePrefix: BENCH_PREFIX, http: false });
    while ((await deliveredCount(stack.store)) < opts.warmup) await sleep(POLL_MS);
    await service.worker.pause();

    const enqueueStarted = performance.now();
    for (let i = 0; i < opts.jobs; i += ENQUEUE_BATCH) {
      await producer.enqueueMany(events(opts.warmup + i, Math.min(ENQUEUE_BATCH, opts.jobs - i), opts.receiverUrl));
    }
    const enqueueSeconds = (performance.now() - enqueueStarted) / 1000;

    const received = await opts.receivedCount();
    const started = performance.now();
    service.worker.resume();
    const total = opts.warmup + opts.jobs;
    // Watch the receiver (cheap) until every request arrived, then the ledger until it says delivered:
    // polling count(*) on the ledger all along would load the Postgres being measured.
    while ((await opts.receivedCount()) - received < opts.jobs) await sleep(POLL_MS);
    while ((await deliveredCount(stack.store)) < total) await sleep(POLL_MS);
    const seconds = (performance.now() - started) / 1000;
    await service.stop();
    await service.queue.obliterate({ force: true }).catch(() => undefined);
    return { deliveriesPerSecond: opts.jobs / seconds, enqueuePerSecond: opts.jobs / enqueueSeconds };
  } finally {
    await producer.close();
    await stack.close();
  }
}

/** Plain BullMQ addBulk of the same number of 1 KiB jobs, same batch size: the enqueue reference. */
export async function runPlainAddBulk(jobs: number): Promise<number> {
  const connection = new Redis(BENCH_REDIS_URL, { maxRetriesPerRequest: null });
  const queue = new Queue(uniqueName('addbulk'), { connection, prefix: BENCH_PREFIX });
  const started = performance.now();
  for (let i = 0; i < jobs; i += ENQUEUE_BATCH) {
    await queue.addBulk(Array.from({ length: Math.min(ENQUEUE_BATCH, jobs - i) }, (_, k) => ({ name: 'deliver', data: kibPayload(i + k), opts: { removeOnComplete: true } })));
  }
  const perSecond = jobs / ((performance.now() - started) / 1000);
  await queue.obliterate({ force: true });
  await queue.close();
  connection.disconnect();
  return perSecond;
}

/** enqueue→received latency at the receiver, events offered one by one at `ratePerSecond`. */
export async function runLatency(opts: {
  ratePerSecond: number;
  seconds: number;
  receiverUrl: string;
  stats: () => Promise<{ count: number; latencies: number[] }>;
  reset: () => Promise<void>;
}): Promise<{ p50: number; p99: number; count: number }> {
  const stack = await openBenchStore('latency');
  const queueName = uniqueName('latency');
  const producer = createHookProducer({ store: stack.store, redisUrl: BENCH_REDIS_URL, queueName, queuePrefix: BENCH_PREFIX, env: {} });
  const service = await startDeliveryService({ settings: settingsFor(queueName, 64), store: stack.store, logger: silentLogger(), queuePrefix: BENCH_PREFIX, http: false });
  try {
    // Warm connections and JIT first.
    await Promise.all(events(0, 200, opts.receiverUrl).map((e) => producer.enqueue(e)));
    while ((await deliveredCount(stack.store)) < 200) await sleep(POLL_MS);
    await opts.reset();

    const total = Math.round(opts.ratePerSecond * opts.seconds);
    const intervalMs = 1000 / opts.ratePerSecond;
    const started = performance.now();
    const pending: Promise<unknown>[] = [];
    for (let i = 0; i < total; i += 1) {
      const due = started + i * intervalMs;
      const wait = due - performance.now();
      if (wait > 1) await sleep(wait);
      const [input] = events(1000 + i, 1, opts.receiverUrl, { sentAt: Date.now() });
      pending.push(producer.enqueue(input as EnqueueInput));
    }
    await Promise.all(pending);
    const deadline = Date.now() + 30_000;
    let stats = await opts.stats();
    while (stats.count < total && Date.now() < deadline) {
      await sleep(50);
      stats = await opts.stats();
    }
    return { p50: percentile(stats.latencies, 50), p99: percentile(stats.latencies, 99), count: stats.count };
  } finally {
    await service.stop();
    await service.queue.obliterate({ force: true }).catch(() => undefined);
    await producer.close();
    await stack.close();
  }
}

/** Peak RSS (MiB) of the real worker process (`node bin/hookrelay.mjs worker`) draining `queued` events. */
export async function runWorkerRss(opts: { queued: number; receiverUrl: string }): Promise<{ peakMb: number; seconds: number }> {
  const stack = await openBenchStore('rss');
  const queueName = uniqueName('rss');
  // The worker process uses BullMQ's default prefix; its keys are removed with the queue below.
  const producer = createHookProducer({ store: stack.store, redisUrl: BENCH_REDIS_URL, queueName, env: {} });
  try {
    for (let i = 0; i < opts.queued; i += ENQUEUE_BATCH) await producer.enqueueMany(events(i, Math.min(ENQUEUE_BATCH, opts.queued - i), opts.receiverUrl));
    const root = path.resolve(import.meta.dirname, '..');
    // Run as shipped (`npx hookrelay worker`, `npm start`, the Dockerfile): with the bin's V8 heap flags.
    const child = spawn(process.execPath, [...WORKER_NODE_FLAGS, path.join(root, 'bin/hookrelay.mjs'), 'worker'], {
      cwd: root,
      env: {
        PATH: process.env.PATH ?? '',
        DATABASE_URL: stack.schema.url,
        REDIS_URL: BENCH_REDIS_URL,
        HOOKRELAY_QUEUE: queueName,
        HOOKRELAY_ALLOWED_CIDRS: '127.0.0.0/8',
        HOOKRELAY_HTTP_PORT: '0',
        LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
    const started = performance.now();
    let peakKb = 0;
    const readPeak = () => {
      try {
        const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
        const hwm = /VmHWM:\s+(\d+) kB/.exec(status);
        if (hwm) peakKb = Math.max(peakKb, Number(hwm[1]));
      } catch {
        // the process is gone
      }
    };
    while ((await deliveredCount(stack.store)) < opts.queued) {
      readPeak();
      await sleep(200);
    }
    readPeak();
    const seconds = (performance.now() - started) / 1000;
    child.kill('SIGTERM');
    await exited;
    const connection = new Redis(BENCH_REDIS_URL, { maxRetriesPerRequest: null });
    const queue = new Queue(queueName, { connection });
    await queue.obliterate({ force: true }).catch(() => undefined);
    await queue.close();
    connection.disconnect();
    return { peakMb: peakKb / 1024, seconds };
  } finally {
    await producer.close();
    await stack.close();
  }
}
