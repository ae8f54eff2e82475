/**
 * The ledger at scale: producer enqueue rate and shipped-worker delivery rate on an empty
 * ledger, then again with LEDGER_ROWS (default 5,000,000) finished rows already in it (made by
 * one INSERT … SELECT generate_series, like a ledger after months of traffic), same schema,
 * same run. The hot path must not slow down by more than 20 %.
 *
 * Slow (minutes) and large (~3 GB of Postgres), so `npm run bench` runs it only when asked:
 * `BENCH_ONLY=ledger npm run bench`.
 */
import { sql } from 'drizzle-orm';
import { createHookProducer } from '../src/queue/producer.ts';
import type { HookProducer } from '../src/queue/types.ts';
import { openStore, type Store } from '../src/store/db.ts';
import { migrateStore } from '../src/store/migrate.ts';
import { BENCH_REDIS_URL, createBenchSchema, kibPayload, median, sleep, startReceiverProcess, uniqueName } from './support.ts';
import { startWorkerProcess } from './workerProcess.ts';

const LEDGER_ROWS = Number(process.env.LEDGER_ROWS ?? 5_000_000);
const EVENTS = Number(process.env.LEDGER_EVENTS ?? 10_000);
const ROUNDS = 3;
const BATCH = 500;
export const MAX_SLOWDOWN = 0.2;

type Rates = { enqueue: number; deliver: number };

async function count(store: Store, sinceIso: string): Promise<number> {
  // (status, created_at) index range: cheap even with millions of older rows.
  const r = await store.db.execute(sql`select count(*)::int as n from deliveries where status = 'delivered' and created_at >= ${sinceIso}::timestamptz`);
  return (r as unknown as { rows: Array<{ n: number }> }).rows[0]?.n ?? 0;
}

async function measure(store: Store, url: string, databaseUrl: string): Promise<Rates> {
  const queueName = uniqueName('ledger');
  const producer: HookProducer = createHookProducer({ store, redisUrl: BENCH_REDIS_URL, queueName, env: {} });
  const hooks = [{ id: 'bench', type: 'onComplete' as const, webhook: { url: `${url}/ledger` } }];
  const since = new Date(Date.now() - 1000).toISOString();
  try {
    const started = performance.now();
    for (let i = 0; i < EVENTS; i += BATCH)
      await producer.enqueueMany(
        Array.from({ length: BATCH }, (_, k) => ({ operationId: `scale-${i + k}`, type: 'onComplete' as const, event: kibPayload(i + k), hooks })),
      );
    const enqueue = EVENTS / ((performance.now() - started) / 1000);
    const worker = await startWorkerProcess({ databaseUrl, queueName, concurrency: 64 });
    // Steady rate: from the 1,000th delivery (the worker process is up and warm) to the last.
    const warm = Math.min(1_000, EVENTS / 10);
    while ((await count(store, since)) < warm) await sleep(20);
    const t0 = performance.now();
    while ((await count(store, since)) < EVENTS) await sleep(50);
    const deliver = (EVENTS - warm) / ((performance.now() - t0) / 1000);
    await worker.stop();
    return { enqueue, deliver };
  } finally {
    await producer.close();
  }
}

async function fill(store: Store, rows: number): Promise<number> {
  const started = performance.now();
  // Finished rows as retention leaves them within HOOKRELAY_RETENTION_DAYS: a small event, one
  // attempt, spread over 30 days, ids that sort before today's.
  for (let from = 1; from <= rows; from += 1_000_000) {
    const to = Math.min(rows, from + 999_999);
    await store.db.execute(sql`
      INSERT INTO deliveries (id, operation_id, event_type, hook_id, hook, transport, status, attempt_count, payload, attempts, occurred_at, created_at, updated_at, delivered_at, next_attempt_at)
      SELECT 'dlv_00' || lpad(n::text, 24, '0'), 'old-op-' || (n % 100000), 'onComplete', 'hook-' || (n % 50),
             '{"id":"bench","type":"onComplete","webhook":{"url":"http://127.0.0.1:9/x"}}'::jsonb, 'fetch',
             CASE WHEN n % 100 = 0 THEN 'failed' ELSE 'delivered' END, 1,
             jsonb_build_object('i', n, 'operationId', 'old-op-' || (n % 100000)),
             jsonb_build_array(jsonb_build_object('attempt', 1, 'outcome', 'delivered', 'durationMs', 3)),
             now() - interval '1 hour' - (n % 2592000) * interval '1 second', now() - interval '1 hour' - (n % 2592000) * interval '1 second',
             now() - interval '1 hour', now() - interval '1 hour', now() - interval '1 hour'
        FROM generate_series(${from}::bigint, ${to}::bigint) AS n`);
  }
  await store.db.execute(sql`VACUUM ANALYZE deliveries`);
  // Measure the steady state, not the fill's aftermath: flush the ~3 GB of dirty pages it left
  // (otherwise the next minutes are a checkpoint writing them, plus a full-page image in the WAL
  // for the first touch of every page).
  await store.db.execute(sql`CHECKPOINT`);
  return (performance.now() - started) / 1000;
}

export async function runLedgerScaleBench(): Promise<{ rows: string[][]; summary: Record<string, number> }> {
  const receiver = await startReceiverProcess();
  const schema = await createBenchSchema('ledger');
  const store = await openStore({ databaseUrl: schema.url, maxConnections: 10 });
  try {
    await migrateStore(store);
    const empty: Rates[] = [];
    for (let r = 0; r < ROUNDS; r++) empty.push(await measure(store, receiver.url, schema.url));
    const fillSeconds = await fill(store, LEDGER_ROWS);
    const full: Rates[] = [];
    for (let r = 0; r < ROUNDS; r++) full.push(await measure(store, receiver.url, schema.url));
    const m = (rs: Rates[], k: keyof Rates) => median(rs.map((x) => x[k]));
    const enqueueRatio = m(full, 'enqueue') / m(empty, 'enqueue');
    const deliverRatio = m(full, 'deliver') / m(empty, 'deliver');
    const ok = (ratio: number) => (ratio >= 1 - MAX_SLOWDOWN ? 'ok' : 'MISSED');
    const f = (n: number) => n.toFixed(0);
    return {
      rows: [
        ['measure', `empty ledger`, `${LEDGER_ROWS.toLocaleString('en')} finished rows (filled in ${fillSeconds.toFixed(0)} s)`, 'ratio', 'target'],
        [
          `producer enqueue, events/s (${EVENTS} events, median of ${ROUNDS})`,
          f(m(empty, 'enqueue')),
          f(m(full, 'enqueue')),
          enqueueRatio.toFixed(2),
          `≥ ${1 - MAX_SLOWDOWN} ${ok(enqueueRatio)}`,
        ],
        [
          'shipped worker, deliveries/s (c=64)',
          f(m(empty, 'deliver')),
          f(m(full, 'deliver')),
          deliverRatio.toFixed(2),
          `≥ ${1 - MAX_SLOWDOWN} ${ok(deliverRatio)}`,
        ],
      ],
      summary: {
        ledger_rows: LEDGER_ROWS,
        enqueue_empty: m(empty, 'enqueue'),
        enqueue_full: m(full, 'enqueue'),
        deliver_empty: m(empty, 'deliver'),
        deliver_full: m(full, 'deliver'),
      },
    };
  } finally {
    await store.close();
    await schema.drop();
    receiver.close();
  }
}
