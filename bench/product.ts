/**
 * The product under benchmark, as shipped: the real producer (in this process, as a server app
 * runs it) and the delivery worker as a separate process (`node bin/hookrelay.mjs worker`,
 * compiled dist/, the bin's heap flags), measured on the same machine and receiver as the naive
 * baseline.
 */
import { Queue } from 'bullmq';
import { sql } from 'drizzle-orm';
import { Redis } from 'ioredis';
import pg from 'pg';
import { createHookProducer } from '../src/queue/producer.ts';
import type { EnqueueInput } from '../src/queue/types.ts';
import { openStore, type Store } from '../src/store/db.ts';
import { migrateStore } from '../src/store/migrate.ts';
import { type CpuPerDelivery, cpuMeter, perDelivery, taggedUrl } from './cost.ts';
import { BENCH_PREFIX, BENCH_REDIS_URL, createBenchSchema, kibPayload, percentile, sleep, uniqueName, type BenchSchema } from './support.ts';
import { startWorkerProcess, type WorkerProcess } from './workerProcess.ts';

export { WORKER_NODE_FLAGS } from './workerProcess.ts';

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
  return Array.from({ length: count }, (_, k) => ({
    operationId: `op-${from + k}`,
    type: 'onComplete' as const,
    event: { ...kibPayload(from + k), ...extra },
    hooks,
  }));
}

async function deliveredCount(store: Store): Promise<number> {
  const r = await store.db.execute(sql`select count(*)::int as n from deliveries where status = 'delivered'`);
  return (r as unknown as { rows: Array<{ n: number }> }).rows[0]?.n ?? 0;
}

/** The worker processes use BullMQ's default prefix: their queue is removed by name afterwards. */
export async function obliterate(queueName: string): Promise<void> {
  const connection = new Redis(BENCH_REDIS_URL, { maxRetriesPerRequest: null });
  const queue = new Queue(queueName, { connection });
  await queue.obliterate({ force: true }).catch(() => undefined);
  await queue.close();
  connection.disconnect();
}

function producerFor(store: Store, queueName: string) {
  return createHookProducer({ store, redisUrl: BENCH_REDIS_URL, queueName, env: {} });
}

export type ProductRun = { deliveriesPerSecond: number; enqueuePerSecond: number; cpu: CpuPerDelivery };

/**
 * (a) `warmup + jobs` events pre-enqueued through the producer (timed: the enqueue rate), then
 * `workers` worker processes start and drain them. Steady rate = `jobs` over the time from the
 * receiver having seen `warmup` requests (JIT and pools warm) until the ledger says every row
 * delivered — so the ledger writes are inside the measured time.
 */
export async function runProduct(opts: {
  concurrency: number;
  jobs: number;
  warmup: number;
  receiverUrl: string;
  receivedCount: () => Promise<number>;
  workers?: number;
  variant?: 'shipped' | 'tsx';
  /** Extra worker environment (e.g. HOOKRELAY_ENDPOINT_ISOLATION=false for the isolation-cost row). */
  env?: Record<string, string>;
}): Promise<ProductRun> {
  const stack = await openBenchStore('product');
  const queueName = uniqueName('product');
  const producer = producerFor(stack.store, queueName);
  const workers: WorkerProcess[] = [];
  try {
    const total = opts.warmup + opts.jobs;
    await producer.enqueueMany(events(0, Math.min(ENQUEUE_BATCH, opts.warmup), opts.receiverUrl)); // warm the producer
    const enqueueStarted = performance.now();
    for (let i = ENQUEUE_BATCH; i < total; i += ENQUEUE_BATCH) await producer.enqueueMany(events(i, Math.min(ENQUEUE_BATCH, total - i), opts.receiverUrl));
    const enqueueSeconds = (performance.now() - enqueueStarted) / 1000;

    const received = await opts.receivedCount();
    // The workers' Postgres backends carry this tag: their CPU is read in the timed window.
    const pgTag = uniqueName('hrbench-worker');
    const meter = cpuMeter({ pgTag, pids: () => workers.map((w) => w.pid) });
    for (let w = 0; w < (opts.workers ?? 1); w++)
      workers.push(
        await startWorkerProcess({
          databaseUrl: taggedUrl(stack.schema.url, pgTag),
          queueName,
          concurrency: opts.concurrency,
          ...(opts.variant ? { variant: opts.variant } : {}),
          ...(opts.env ? { env: opts.env } : {}),
        }),
      );
    // Watch the receiver (cheap) while the worker runs; the ledger is polled only at the end, so
    // count(*) does not load the Postgres being measured.
    while ((await opts.receivedCount()) - received < opts.warmup) await sleep(POLL_MS);
    const started = performance.now();
    await meter.start();
    while ((await opts.receivedCount()) - received < total) await sleep(POLL_MS);
    while ((await deliveredCount(stack.store)) < total) await sleep(POLL_MS);
    const seconds = (performance.now() - started) / 1000;
    // Deliveries in the window: `jobs` nominally; the warm-up count is crossed at a poll, so a few more.
    const cpu = perDelivery(await meter.stop(), opts.jobs);
    return { deliveriesPerSecond: opts.jobs / seconds, enqueuePerSecond: (total - ENQUEUE_BATCH) / enqueueSeconds, cpu };
  } finally {
    await Promise.all(workers.map((w) => w.stop()));
    await obliterate(queueName);
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
    await queue.addBulk(
      Array.from({ length: Math.min(ENQUEUE_BATCH, jobs - i) }, (_, k) => ({ name: 'deliver', data: kibPayload(i + k), opts: { removeOnComplete: true } })),
    );
  }
  const perSecond = jobs / ((performance.now() - started) / 1000);
  await queue.obliterate({ force: true });
  await queue.close();
  connection.disconnect();
  return perSecond;
}

/**
 * The floors' bare ledger: one table (a primary key, the 1 KiB payload, a created_at default, as
 * the ledger row has) on its own pool, and a queue no worker reads (BENCH_PREFIX: removed with the
 * bench keys). `run` makes this floor's ids unique.
 */
async function openFloor(databaseUrl: string, poolSize: number): Promise<{ pool: pg.Pool; queue: Queue; run: string; close(): Promise<void> }> {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: poolSize });
  await pool.query('CREATE TABLE IF NOT EXISTS enqueue_floor (id text PRIMARY KEY, payload jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now())');
  const connection = new Redis(BENCH_REDIS_URL, { maxRetriesPerRequest: null });
  const queue = new Queue(uniqueName('floor'), { connection, prefix: BENCH_PREFIX });
  return {
    pool,
    queue,
    run: uniqueName('f'),
    async close() {
      await queue.obliterate({ force: true }).catch(() => undefined);
      await queue.close();
      connection.disconnect();
      await pool.end();
    },
  };
}

/**
 * The enqueue floor Q1's order leaves (the row committed before its job): each batch of the same
 * 1 KiB events as one multi-row INSERT into the bare table (the batch as one JSON parameter, as
 * the producer sends it) and then the same addBulk as runPlainAddBulk. The producer can only come
 * near this, never past it.
 */
export async function runBulkFloor(jobs: number): Promise<number> {
  const schema = await createBenchSchema('floorbulk');
  const floor = await openFloor(schema.url, 2);
  const insert = 'INSERT INTO enqueue_floor (id, payload) SELECT r.id, r.payload FROM json_to_recordset($1::json) AS r(id text, payload jsonb)';
  try {
    const started = performance.now();
    for (let i = 0; i < jobs; i += ENQUEUE_BATCH) {
      const batch = Array.from({ length: Math.min(ENQUEUE_BATCH, jobs - i) }, (_, k) => ({ id: `${floor.run}-${i + k}`, payload: kibPayload(i + k) }));
      await floor.pool.query({ name: 'enqueue_floor_bulk', text: insert, values: [JSON.stringify(batch)] });
      await floor.queue.addBulk(batch.map((b) => ({ name: 'deliver', data: b.payload, opts: { jobId: b.id, removeOnComplete: true } })));
    }
    return jobs / ((performance.now() - started) / 1000);
  } finally {
    await floor.close();
    await schema.drop();
  }
}

/**
 * What one awaited enqueue cannot beat on this machine: a bare one-row INSERT of the same 1 KiB
 * payload into the bare table (a prepared statement, autocommit) followed by one `queue.add` of
 * it — the two round trips Q1 orders, without the producer.
 */
async function openEnqueueFloor(databaseUrl: string): Promise<{ once(i: number): Promise<number>; close(): Promise<void> }> {
  const floor = await openFloor(databaseUrl, 10);
  return {
    async once(i) {
      const t0 = performance.now();
      const body = JSON.stringify(kibPayload(i));
      const id = `${floor.run}-${i}`;
      await floor.pool.query({ name: 'enqueue_floor_insert', text: 'INSERT INTO enqueue_floor (id, payload) VALUES ($1, $2)', values: [id, body] });
      await floor.queue.add('deliver', { body }, { jobId: id, removeOnComplete: true });
      return performance.now() - t0;
    },
    close: floor.close,
  };
}

/**
 * enqueue→received latency at the receiver, events offered one by one at `ratePerSecond` through
 * the producer, delivered by one worker process (concurrency 64). With `floor`, a bare INSERT +
 * `queue.add` pair (openEnqueueFloor) is offered half an interval after each enqueue, at the same
 * rate and with the same worker draining: the single enqueue's figures read against it.
 */
export async function runLatency(opts: {
  ratePerSecond: number;
  seconds: number;
  receiverUrl: string;
  stats: () => Promise<{ count: number; latencies: number[] }>;
  reset: () => Promise<void>;
  env?: Record<string, string>;
  floor?: boolean;
  /** Another checkout's build of the worker (a before/after latency figure). */
  workerRoot?: string;
  /** Extra node flags for the worker (after the bin's: a later V8 flag wins). */
  nodeFlags?: string[];
}): Promise<{ p50: number; p99: number; count: number; offered: number; enqueueP50: number; enqueueP99: number; floorP50: number; floorP99: number }> {
  const stack = await openBenchStore('latency');
  const floor = opts.floor ? await openEnqueueFloor(stack.schema.url) : undefined;
  const queueName = uniqueName('latency');
  const producer = producerFor(stack.store, queueName);
  const worker = await startWorkerProcess({
    databaseUrl: stack.schema.url,
    queueName,
    concurrency: 64,
    ...(opts.env ? { env: opts.env } : {}),
    ...(opts.workerRoot ? { root: opts.workerRoot } : {}),
    ...(opts.nodeFlags ? { nodeFlags: opts.nodeFlags } : {}),
  });
  try {
    // Warm connections and JIT first.
    await Promise.all(events(0, 200, opts.receiverUrl).map((e) => producer.enqueue(e)));
    while ((await deliveredCount(stack.store)) < 200) await sleep(POLL_MS);
    await opts.reset();

    const total = Math.round(opts.ratePerSecond * opts.seconds);
    const intervalMs = 1000 / opts.ratePerSecond;
    if (floor) for (let w = 0; w < 200; w += 1) await floor.once(-1 - w); // warm its connection and statement
    const started = performance.now();
    const pending: Promise<unknown>[] = [];
    const enqueueMs: number[] = [];
    const floorMs: number[] = [];
    const timedEnqueue = async (input: EnqueueInput) => {
      const t0 = performance.now();
      await producer.enqueue(input);
      enqueueMs.push(performance.now() - t0);
    };
    for (let i = 0; i < total; i += 1) {
      const due = started + i * intervalMs;
      const wait = due - performance.now();
      if (wait > 1) await sleep(wait);
      const [input] = events(1000 + i, 1, opts.receiverUrl, { sentAt: Date.now() });
      pending.push(timedEnqueue(input as EnqueueInput));
      if (floor) {
        const half = due + intervalMs / 2 - performance.now();
        if (half > 1) await sleep(half);
        pending.push(floor.once(i).then((ms) => void floorMs.push(ms)));
      }
    }
    await Promise.all(pending);
    const deadline = Date.now() + 30_000;
    let stats = await opts.stats();
    while (stats.count < total && Date.now() < deadline) {
      await sleep(50);
      stats = await opts.stats();
    }
    return {
      p50: percentile(stats.latencies, 50),
      p99: percentile(stats.latencies, 99),
      count: stats.count,
      offered: total,
      enqueueP50: percentile(enqueueMs, 50),
      enqueueP99: percentile(enqueueMs, 99),
      floorP50: floor ? percentile(floorMs, 50) : Number.NaN,
      floorP99: floor ? percentile(floorMs, 99) : Number.NaN,
    };
  } finally {
    await floor?.close();
    await worker.stop();
    await obliterate(queueName);
    await producer.close();
    await stack.close();
  }
}

/** Peak RSS (MiB) of the real worker process draining `queued` events. */
export async function runWorkerRss(opts: { queued: number; receiverUrl: string }): Promise<{ peakMb: number; seconds: number }> {
  const stack = await openBenchStore('rss');
  const queueName = uniqueName('rss');
  const producer = producerFor(stack.store, queueName);
  let worker: WorkerProcess | undefined;
  try {
    for (let i = 0; i < opts.queued; i += ENQUEUE_BATCH) await producer.enqueueMany(events(i, Math.min(ENQUEUE_BATCH, opts.queued - i), opts.receiverUrl));
    worker = await startWorkerProcess({ databaseUrl: stack.schema.url, queueName, concurrency: 64 });
    const started = performance.now();
    let peakMb = 0;
    while ((await deliveredCount(stack.store)) < opts.queued) {
      peakMb = Math.max(peakMb, worker.peakRssMb() || 0);
      await sleep(200);
    }
    peakMb = Math.max(peakMb, worker.peakRssMb() || 0);
    return { peakMb, seconds: (performance.now() - started) / 1000 };
  } finally {
    await worker?.stop();
    await obliterate(queueName);
    await producer.close();
    await stack.close();
  }
}
