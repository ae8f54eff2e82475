/**
 * Issue 30 (`BENCH_ONLY=ordering`): ordered vs unordered delivery on the same run. 200 operations ×
 * 20 events (sent in 20 rounds of 200 enqueues, as an agent's steps arrive), 8 endpoints on one
 * receiver process, the shipped worker process at c=64 with its defaults. Each row: deliveries/s
 * (first enqueue → last receipt) and p50/p99 enqueue→receive; the ordered row's throughput ÷ the
 * unordered one (target ≥ 0.7). Unordered runs first, on a fresh schema and queue each.
 */
import { sql } from 'drizzle-orm';
import { createHookProducer } from '../src/queue/producer.ts';
import { openStore } from '../src/store/db.ts';
import { migrateStore } from '../src/store/migrate.ts';
import {
  BENCH_PREFIX,
  BENCH_REDIS_URL,
  createBenchSchema,
  deleteBenchKeys,
  median,
  percentile,
  sleep,
  startReceiverProcess,
  uniqueName,
  type ReceiverProcess,
} from './support.ts';
import { startWorkerProcess } from './workerProcess.ts';

const QUICK = process.env.BENCH_QUICK === '1';
const OPERATIONS = QUICK ? 50 : 200;
const EVENTS = 20;
const ENDPOINTS = 8;
const CONCURRENCY = 64;
const DRAIN_BOUND_MS = 180_000;
const TARGET_RATIO = 0.7;

type Row = { label: string; deliveries: number; perSecond: number; p50: number; p99: number; drained: boolean; cpuMsPerDelivery: number };

/**
 * `rounds`: event k of every operation, then k+1 (an agent's steps arriving over time); `bursts`:
 * one operation's 20 events at once, operation after operation — nearly every event reaches a
 * worker while its predecessor is still pending (the turn keeper's waiting path).
 */
type Shape = 'rounds' | 'bursts';

async function runRow(label: string, ordering: 'operation' | 'none', receiver: ReceiverProcess, shape: Shape = 'rounds'): Promise<Row> {
  const schema = await createBenchSchema('ordering');
  const store = await openStore({ databaseUrl: schema.url, maxConnections: 6 });
  await migrateStore(store);
  const queueName = uniqueName('ordering');
  const producer = createHookProducer({ store, redisUrl: BENCH_REDIS_URL, queueName, queuePrefix: BENCH_PREFIX, env: {}, ordering });
  const worker = await startWorkerProcess({ databaseUrl: schema.url, queueName, concurrency: CONCURRENCY, env: { HOOKRELAY_QUEUE_PREFIX: BENCH_PREFIX } });
  try {
    await sleep(1_500); // the worker is up (migrated store, queue connected)
    await receiver.reset();
    const cpuBefore = worker.cpuMs();
    const total = OPERATIONS * EVENTS;
    const started = Date.now();
    const enqueue = (op: number, k: number) =>
      producer.enqueue({
        operationId: `bench-${op}`,
        type: 'onComplete',
        event: { k, sentAt: Date.now() },
        hooks: [{ id: `e${op % ENDPOINTS}`, type: 'onComplete', webhook: { url: `${receiver.url}/e${op % ENDPOINTS}` } }],
      });
    if (shape === 'rounds') {
      for (let k = 1; k <= EVENTS; k++) await Promise.all(Array.from({ length: OPERATIONS }, (_, op) => enqueue(op, k)));
    } else {
      // Calls not awaited in between keep their order (the producer numbers them in call order).
      for (let op = 0; op < OPERATIONS; op++) await Promise.all(Array.from({ length: EVENTS }, (_, i) => enqueue(op, i + 1)));
    }
    let stats = await receiver.stats();
    while (stats.count < total && Date.now() - started < DRAIN_BOUND_MS) {
      await sleep(100);
      stats = await receiver.stats();
    }
    const elapsedMs = Date.now() - started;
    const cpuMs = worker.cpuMs() - cpuBefore;
    return {
      label,
      deliveries: stats.count,
      perSecond: (stats.count / elapsedMs) * 1000,
      p50: median(stats.latencies),
      p99: percentile(stats.latencies, 99),
      drained: stats.count >= total,
      cpuMsPerDelivery: cpuMs / Math.max(1, stats.count),
    };
  } finally {
    await worker.stop();
    await producer.close();
    await store.db.execute(sql`select 1`).catch(() => undefined);
    await store.close();
    await schema.drop();
  }
}

export async function runOrderingBench(): Promise<{ rows: string[][]; summary: Record<string, number>; summaryLine: string }> {
  await deleteBenchKeys();
  const receiver = await startReceiverProcess();
  try {
    const unordered = await runRow(`unordered (${OPERATIONS} ops × ${EVENTS}, c=${CONCURRENCY})`, 'none', receiver);
    const ordered = await runRow(`ordered: ordering 'operation' (same)`, 'operation', receiver);
    const unorderedBursts = await runRow(`unordered, bursts (each operation's ${EVENTS} events at once)`, 'none', receiver, 'bursts');
    const orderedBursts = await runRow(`ordered, bursts (same)`, 'operation', receiver, 'bursts');
    const ratio = ordered.perSecond / unordered.perSecond;
    const burstRatio = orderedBursts.perSecond / unorderedBursts.perSecond;
    const rows = [
      ['row', 'received', 'deliveries/s', 'p50 enqueue→receive ms', 'p99 ms', 'drained', 'worker CPU ms/delivery'],
      ...[unordered, ordered, unorderedBursts, orderedBursts].map((r) => [
        r.label,
        String(r.deliveries),
        r.perSecond.toFixed(0),
        r.p50.toFixed(0),
        r.p99.toFixed(0),
        r.drained ? 'yes' : 'NO',
        r.cpuMsPerDelivery.toFixed(2),
      ]),
      ['ordered ÷ unordered throughput', '', ratio.toFixed(2), `target ≥ ${TARGET_RATIO}`, ratio >= TARGET_RATIO ? 'met' : 'NOT met', '', ''],
      ['ordered ÷ unordered throughput, bursts', '', burstRatio.toFixed(2), '', '', '', ''],
    ];
    const summary = {
      unorderedPerSecond: Math.round(unordered.perSecond),
      orderedPerSecond: Math.round(ordered.perSecond),
      ratio: Number(ratio.toFixed(2)),
      orderedP99Ms: Math.round(ordered.p99),
      unorderedP99Ms: Math.round(unordered.p99),
      burstRatio: Number(burstRatio.toFixed(2)),
      orderedBurstsPerSecond: Math.round(orderedBursts.perSecond),
      orderedBurstsCpuMsPerDelivery: Number(orderedBursts.cpuMsPerDelivery.toFixed(2)),
      orderedCpuMsPerDelivery: Number(ordered.cpuMsPerDelivery.toFixed(2)),
      unorderedCpuMsPerDelivery: Number(unordered.cpuMsPerDelivery.toFixed(2)),
    };
    return {
      rows,
      summary,
      summaryLine: `bench[ordering]: ratio=${summary.ratio} ordered=${summary.orderedPerSecond}/s unordered=${summary.unorderedPerSecond}/s ordered_p99=${summary.orderedP99Ms}ms cpu_ms/delivery ordered=${summary.orderedCpuMsPerDelivery} unordered=${summary.unorderedCpuMsPerDelivery} bursts: ratio=${summary.burstRatio} ordered=${summary.orderedBurstsPerSecond}/s cpu_ms/delivery=${summary.orderedBurstsCpuMsPerDelivery}`,
    };
  } finally {
    receiver.close();
  }
}
