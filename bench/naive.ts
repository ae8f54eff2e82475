/**
 * The naive baseline, exactly as specified: a BullMQ worker whose processor POSTs the job with
 * the global `fetch`, then runs one `UPDATE … SET status='delivered'` per job through a `pg.Pool`
 * of max 10. Jobs (1 KiB JSON payloads, `removeOnComplete`) are pre-enqueued with `addBulk`; a
 * warm-up of jobs runs first. Also the no-op variant (BullMQ with an empty processor), same setup.
 */
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import pg from 'pg';
import { type CpuPerDelivery, cpuMeter, perDelivery, taggedUrl } from './cost.ts';
import { BENCH_PREFIX, BENCH_REDIS_URL, kibPayload, sleep, uniqueName } from './support.ts';

export const NAIVE_POOL_MAX = 10;
const ADD_BULK_CHUNK = 1000;

type NaiveJob = { id: string; payload: { i: number; blob: string } };

async function preEnqueue(queue: Queue<NaiveJob>, ids: readonly string[]): Promise<void> {
  for (let i = 0; i < ids.length; i += ADD_BULK_CHUNK) {
    await queue.addBulk(
      ids.slice(i, i + ADD_BULK_CHUNK).map((id, k) => ({ name: 'deliver', data: { id, payload: kibPayload(i + k) }, opts: { removeOnComplete: true } })),
    );
  }
}

/**
 * Runs `count` pre-enqueued jobs through a worker in this process; returns jobs/s (warm-up
 * excluded) and the CPU per job of this process, its Postgres backends and redis-server.
 */
async function drain(
  kind: 'naive' | 'noop',
  opts: { concurrency: number; jobs: number; warmup: number; receiverUrl: string; databaseUrl: string },
): Promise<{ perSecond: number; cpu: CpuPerDelivery }> {
  const name = uniqueName(kind);
  const connection = new Redis(BENCH_REDIS_URL, { maxRetriesPerRequest: null });
  const queue = new Queue<NaiveJob>(name, { connection, prefix: BENCH_PREFIX });
  const pgTag = uniqueName(`hrbench-${kind}`);
  const pool = new pg.Pool({ connectionString: taggedUrl(opts.databaseUrl, pgTag), max: NAIVE_POOL_MAX });
  const meter = cpuMeter({ pgTag, includeSelf: true });
  const table = `naive_${name.replace(/-/g, '_')}`;
  const total = opts.warmup + opts.jobs;
  const ids = Array.from({ length: total }, (_, i) => `n${i}`);
  if (kind === 'naive') {
    await pool.query(`CREATE TABLE ${table} (id text PRIMARY KEY, status text NOT NULL)`);
    await pool.query(`INSERT INTO ${table} SELECT 'n' || g, 'queued' FROM generate_series(0, ${total - 1}) g`);
  }
  const url = `${opts.receiverUrl}/naive`;
  const processor =
    kind === 'noop'
      ? async () => undefined
      : async (job: { data: NaiveJob }) => {
          const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(job.data) });
          await res.arrayBuffer();
          if (!res.ok) throw new Error(`HTTP ${res.status}`);
          await pool.query(`UPDATE ${table} SET status = 'delivered' WHERE id = $1`, [job.data.id]);
        };

  // Warm-up: its own jobs, drained before the timed ones are added.
  await preEnqueue(queue, ids.slice(0, opts.warmup));
  let done = 0;
  const worker = new Worker<NaiveJob>(name, processor, { connection, prefix: BENCH_PREFIX, concurrency: opts.concurrency });
  worker.on('completed', () => (done += 1));
  while (done < opts.warmup) await sleep(10);
  await worker.pause();
  await preEnqueue(queue, ids.slice(opts.warmup));
  await meter.start();
  const startedAt = performance.now();
  worker.resume();
  while (done < total) await sleep(5);
  const seconds = (performance.now() - startedAt) / 1000;
  const cpu = perDelivery(await meter.stop(), opts.jobs);
  await worker.close();
  await queue.obliterate({ force: true });
  await queue.close();
  if (kind === 'naive') await pool.query(`DROP TABLE ${table}`);
  await pool.end();
  connection.disconnect();
  return { perSecond: opts.jobs / seconds, cpu };
}

export const runNaive = (opts: Parameters<typeof drain>[1]) => drain('naive', opts);
export const runNoop = (opts: Parameters<typeof drain>[1]) => drain('noop', opts);
