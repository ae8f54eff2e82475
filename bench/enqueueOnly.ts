/**
 * The enqueue rows of `npm run bench` alone, in seconds instead of minutes
 * (`npx tsx bench/enqueueOnly.ts`):
 *   - producer `enqueueMany` (ledger row + job) vs plain BullMQ `addBulk` of the same 1 KiB
 *     events, same batch size, interleaved, ENQ_ROUNDS rounds (default 5) of N events (default
 *     10,000): the median rate of each and the median of the per-round ratios;
 *   - a single awaited `enqueue` at 200/s offered for ENQ_SECONDS (default 5) with one worker
 *     process running (compiled dist/: build it first), its p50/p99, as the bench's row
 *     (runLatency) measures it. ENQ_LATENCY=0 skips it.
 * ENQ_BASELINE=<path to another checkout's src/queue/producer.ts> adds that producer to every
 * round (before/after in one run, same machine state). `node --cpu-prof --import tsx
 * bench/enqueueOnly.ts` writes a CPU profile of it (the producer's steps are named functions).
 */
import { createHookProducer } from '../src/queue/producer.ts';
import type { HookProducer, HookProducerOptions } from '../src/queue/types.ts';
import { openStore } from '../src/store/db.ts';
import { migrateStore } from '../src/store/migrate.ts';
import { ENQUEUE_BATCH, obliterate, runPlainAddBulk } from './product.ts';
import {
  BENCH_PREFIX,
  BENCH_REDIS_URL,
  createBenchSchema,
  deleteBenchKeys,
  kibPayload,
  median,
  percentile,
  sleep,
  startReceiverProcess,
  uniqueName,
} from './support.ts';
import { startWorkerProcess } from './workerProcess.ts';
import { cpuMeter, taggedUrl } from './cost.ts';

const JOBS = Number(process.env.N ?? 10_000);
const ROUNDS = Number(process.env.ENQ_ROUNDS ?? 5);
const LATENCY_SECONDS = Number(process.env.ENQ_SECONDS ?? 5);
const LATENCY_ROUNDS = Number(process.env.ENQ_LATENCY_ROUNDS ?? 2);
const ENQUEUE_RATE = 200;
type ProducerFactory = (options: HookProducerOptions) => HookProducer;
const baseline: ProducerFactory | undefined = process.env.ENQ_BASELINE
  ? ((await import(process.env.ENQ_BASELINE)) as { createHookProducer: ProducerFactory }).createHookProducer
  : undefined;

/** One round of the bench's enqueue row: N events through enqueueMany, ENQUEUE_BATCH per call. */
async function runEnqueueMany(jobs: number, create: ProducerFactory = createHookProducer): Promise<{ perSecond: number; cpuUs: number; pgUs: number }> {
  const hooks = [{ id: 'bench', type: 'onComplete' as const, webhook: { url: 'http://127.0.0.1:9/product' } }];
  const schema = await createBenchSchema('enq');
  const pgTag = uniqueName('hrbench-enq');
  const store = await openStore({ databaseUrl: taggedUrl(schema.url, pgTag), maxConnections: 10 });
  await migrateStore(store);
  // Under the bench prefix: its keys are deleted after the round, so every round starts from the same Redis.
  const producer = create({ store, redisUrl: BENCH_REDIS_URL, queueName: uniqueName('enq'), queuePrefix: BENCH_PREFIX, env: {} });
  const batch = (from: number) =>
    Array.from({ length: ENQUEUE_BATCH }, (_, k) => ({ operationId: `op-${from + k}`, type: 'onComplete' as const, event: kibPayload(from + k), hooks }));
  try {
    await producer.enqueueMany(batch(0)); // warm the producer
    const meter = cpuMeter({ pgTag, includeSelf: true });
    await meter.start();
    const started = performance.now();
    for (let i = ENQUEUE_BATCH; i < jobs + ENQUEUE_BATCH; i += ENQUEUE_BATCH) await producer.enqueueMany(batch(i));
    const perSecond = jobs / ((performance.now() - started) / 1000);
    const cpu = await meter.stop();
    return { perSecond, cpuUs: (cpu.selfMs * 1000) / jobs, pgUs: (cpu.pgMs * 1000) / jobs };
  } finally {
    await producer.close();
    await store.close();
    await schema.drop();
    await deleteBenchKeys();
  }
}

/**
 * runLatency's enqueue side (bench/product.ts) for any producer: one awaited `enqueue` at a time
 * offered at `rate`, one worker process (c=64) delivering them; the enqueue times in ms.
 */
async function runSingleEnqueues(create: ProducerFactory, receiverUrl: string, rate: number, seconds: number): Promise<number[]> {
  const hooks = [{ id: 'bench', type: 'onComplete' as const, webhook: { url: `${receiverUrl}/product` } }];
  const schema = await createBenchSchema('enqlat');
  const store = await openStore({ databaseUrl: schema.url, maxConnections: 10 });
  await migrateStore(store);
  const queueName = uniqueName('enqlat');
  const producer = create({ store, redisUrl: BENCH_REDIS_URL, queueName, env: {} });
  const worker = await startWorkerProcess({ databaseUrl: schema.url, queueName, concurrency: 64 });
  const event = (i: number) => ({ operationId: `op-${i}`, type: 'onComplete' as const, event: { ...kibPayload(i), sentAt: Date.now() }, hooks });
  try {
    await Promise.all(Array.from({ length: 200 }, (_, i) => producer.enqueue(event(i)))); // warm connections and JIT
    const times: number[] = [];
    const pending: Promise<void>[] = [];
    const started = performance.now();
    for (let i = 0; i < rate * seconds; i += 1) {
      const wait = started + (i * 1000) / rate - performance.now();
      if (wait > 1) await sleep(wait);
      const t0 = performance.now();
      pending.push(producer.enqueue(event(1000 + i)).then(() => void times.push(performance.now() - t0)));
    }
    await Promise.all(pending);
    return times;
  } finally {
    await worker.stop();
    await obliterate(queueName);
    await producer.close();
    await store.close();
    await schema.drop();
  }
}

type Runs = Awaited<ReturnType<typeof runEnqueueMany>>[];
const product: Runs = [];
const before: Runs = [];
const plain: number[] = [];
const plainCpuUs: number[] = [];
for (let round = 0; round < ROUNDS; round++) {
  if (baseline) before.push(await runEnqueueMany(JOBS, baseline));
  product.push(await runEnqueueMany(JOBS));
  const c0 = process.cpuUsage();
  plain.push(await runPlainAddBulk(JOBS));
  const c = process.cpuUsage(c0);
  plainCpuUs.push((c.user + c.system) / JOBS);
}
/** Median rate, ratio to the same round's addBulk, and CPU per event: this process (producer) and its Postgres backends. */
const report = (label: string, runs: Runs) => {
  const ratios = runs.map((r, i) => r.perSecond / (plain[i] ?? Number.NaN));
  console.log(
    `${label} enqueueMany ${median(runs.map((r) => r.perSecond)).toFixed(0)}/s  ratio ${median(ratios).toFixed(2)} (rounds ${ratios.map((r) => r.toFixed(2)).join(' ')})` +
      `  CPU µs/event: producer ${median(runs.map((r) => r.cpuUs)).toFixed(1)}, Postgres ${median(runs.map((r) => r.pgUs)).toFixed(1)}`,
  );
};
console.log(`addBulk ${median(plain).toFixed(0)}/s  CPU µs/event: this process ${median(plainCpuUs).toFixed(1)}`);
report('this', product);
if (baseline) report('baseline', before);
if (process.env.ENQ_LATENCY !== '0') {
  const receiver = await startReceiverProcess();
  const after: number[] = [];
  const beforeTimes: number[] = [];
  const show = (label: string, t: number[]) =>
    console.log(
      `${label} single enqueue at ${ENQUEUE_RATE}/s, worker running: p50 ${percentile(t, 50).toFixed(2)} ms  p99 ${percentile(t, 99).toFixed(2)} ms  (${t.length} calls)`,
    );
  try {
    for (let round = 0; round < LATENCY_ROUNDS; round++) {
      if (baseline) beforeTimes.push(...(await runSingleEnqueues(baseline, receiver.url, ENQUEUE_RATE, LATENCY_SECONDS)));
      after.push(...(await runSingleEnqueues(createHookProducer, receiver.url, ENQUEUE_RATE, LATENCY_SECONDS)));
    }
    show('this', after);
    if (baseline) show('baseline', beforeTimes);
  } finally {
    receiver.close();
    await deleteBenchKeys();
  }
}
process.exit(0);
