/**
 * Dispatch latency while a dependency is away (issue 48, F2): an agent loop's queue-mode
 * `dispatch`, one after another, while Redis is away (rows committed, `queued: false`) and while
 * Postgres is away (events written, fsync'd, to the local spool), beside the same loop with both
 * up. The outage is a TCP proxy that is cut (test/support/tcpProxy.ts), never the machine's real
 * servers. Target: p99 ≤ 20 ms during either outage (F2: a dependency known down is not waited on).
 * `npx tsx bench/outage.ts` runs this section alone.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { HookDispatcher } from '../src/dispatch/hookDispatcher.ts';
import { silentLogger } from '../src/observability/logger.ts';
import { createHookProducer } from '../src/queue/producer.ts';
import type { HookProducerOptions } from '../src/queue/types.ts';
import { openStore } from '../src/store/db.ts';
import { migrateStore } from '../src/store/migrate.ts';
import { startTcpProxy, type TcpProxy } from '../test/support/tcpProxy.ts';
import { BENCH_PREFIX, BENCH_REDIS_URL, createBenchSchema, deleteBenchKeys, percentile, printTable, uniqueName } from './support.ts';

const QUICK = process.env.BENCH_QUICK === '1';
/** Dispatches measured per phase (each one awaited, as an agent loop awaits its step's event). */
const DISPATCHES = QUICK ? 200 : 1_000;
const WARMUP = 50;
export const OUTAGE_TARGET_P99_MS = 20;

type Phase = { p50: number; p99: number };

/** One producer + queue-mode dispatcher; `during` cuts what `cut` names after the warm-up and restores it after. */
async function measure(options: HookProducerOptions, cut: TcpProxy | undefined, label: string): Promise<Phase> {
  const producer = createHookProducer({ ...options, env: {}, logger: silentLogger() });
  const d = new HookDispatcher({ mode: 'queue', producer, env: {}, logger: silentLogger() });
  const op = uniqueName(`outage-${label}`);
  d.register(op, [{ id: 'audit', type: 'afterStep', webhook: { url: 'https://hooks.example.com/audit' } }]);
  const times: number[] = [];
  try {
    for (let i = 0; i < WARMUP; i++) await d.dispatch(op, 'afterStep', { operationId: op, stepIndex: i });
    await cut?.cut();
    for (let i = 0; i < DISPATCHES; i++) {
      const started = performance.now();
      const report = await d.dispatch(op, 'afterStep', { operationId: op, stepIndex: WARMUP + i });
      times.push(performance.now() - started);
      if (report.notAccepted.length > 0) throw new Error(`bench: a dispatch was not accepted during the ${label} outage`);
    }
    // What the phase claims: during a Postgres outage every measured event went to the spool.
    const spooled = producer.spoolStatus()?.events ?? 0;
    if (label === 'postgres' && spooled < DISPATCHES) throw new Error(`bench: only ${spooled} of ${DISPATCHES} events were spooled`);
  } finally {
    await cut?.restore();
    await d.close();
    await producer.close();
  }
  return { p50: percentile(times, 50), p99: percentile(times, 99) };
}

export async function runOutageBench(): Promise<{ rows: string[][]; summary: Record<string, number> }> {
  await deleteBenchKeys();
  const schema = await createBenchSchema('outage');
  const store = await openStore({ databaseUrl: schema.url });
  await migrateStore(store, { migrationsSchema: schema.schema });
  const redisProxy = await startTcpProxy(Number(new URL(BENCH_REDIS_URL).port || 6379));
  const pgProxy = await startTcpProxy(Number(new URL(schema.url).port || 5432));
  const spoolDir = await mkdtemp(path.join(tmpdir(), 'hookrelay-bench-spool-'));
  const queue = { queueName: uniqueName('outage'), queuePrefix: BENCH_PREFIX };
  try {
    const healthy = await measure({ ...queue, store, redisUrl: BENCH_REDIS_URL }, undefined, 'none');
    const redis = await measure({ ...queue, store, redisUrl: redisProxy.url(BENCH_REDIS_URL) }, redisProxy, 'redis');
    const postgres = await measure(
      { ...queue, databaseUrl: pgProxy.url(schema.url), redisUrl: BENCH_REDIS_URL, spool: { dir: spoolDir } },
      pgProxy,
      'postgres',
    );
    const fmt = (p: Phase) => `${p.p50.toFixed(2)} / ${p.p99.toFixed(2)}`;
    const verdict = (p: Phase) => (p.p99 <= OUTAGE_TARGET_P99_MS ? 'ok' : 'MISSED');
    const rows = [
      ['benchmark', 'result', 'target', 'status'],
      [`queue-mode dispatch, both up (p50 / p99 ms, ${DISPATCHES} awaited)`, fmt(healthy), '', ''],
      [`queue-mode dispatch during a Redis outage (p50 / p99 ms; rows committed, queued: false)`, fmt(redis), `p99 ≤ ${OUTAGE_TARGET_P99_MS}`, verdict(redis)],
      [`queue-mode dispatch during a Postgres outage (p50 / p99 ms; spooled, fsync'd)`, fmt(postgres), `p99 ≤ ${OUTAGE_TARGET_P99_MS}`, verdict(postgres)],
    ];
    return {
      rows,
      summary: {
        dispatchHealthyP50Ms: healthy.p50,
        dispatchHealthyP99Ms: healthy.p99,
        dispatchRedisOutageP50Ms: redis.p50,
        dispatchRedisOutageP99Ms: redis.p99,
        dispatchPostgresOutageP50Ms: postgres.p50,
        dispatchPostgresOutageP99Ms: postgres.p99,
      },
    };
  } finally {
    await redisProxy.close();
    await pgProxy.close();
    await store.close();
    await schema.drop();
    await deleteBenchKeys();
    await rm(spoolDir, { recursive: true, force: true });
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { rows, summary } = await runOutageBench();
  printTable(rows);
  console.log(JSON.stringify(summary));
  process.exit(0);
}
