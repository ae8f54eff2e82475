/**
 * Delivery benchmarks, same machine, same run, interleaved (product, naive, no-op per round and
 * concurrency), median of the rounds:
 *   (a) product: events pre-enqueued through the producer, drained by the worker process as shipped
 *       (`node bin/hookrelay.mjs worker`, compiled dist/) until the ledger
 *       says delivered; (b) naive BullMQ + fetch + one UPDATE per job (bench/naive.ts);
 *   (c) BullMQ with a no-op processor; plus enqueue rate vs plain addBulk, enqueue→received
 *   latency at an offered 500 events/s, and the worker process's peak RSS with many queued.
 * `npx tsx bench/delivery.ts` runs this section alone.
 */
import { pathToFileURL } from 'node:url';
import { runNaive, runNoop } from './naive.ts';
import { runLatency, runPlainAddBulk, runProduct, runWorkerRss } from './product.ts';
import { createBenchSchema, deleteBenchKeys, median, printTable, startReceiverProcess } from './support.ts';

const QUICK = process.env.BENCH_QUICK === '1';
const JOBS = QUICK ? 3_000 : 20_000;
const WARMUP = QUICK ? 500 : 2_000;
const ROUNDS = QUICK ? 1 : 3;
const CONCURRENCIES = [16, 64] as const;
const LATENCY_RATE = 500;
const LATENCY_SECONDS = QUICK ? 4 : 10;
const RSS_QUEUED = QUICK ? 20_000 : 100_000;

export const TARGETS = { ratioNaive: 3, ratioNoop: 0.4, p99Ms: 50, rssMb: 200, enqueueRatio: 0.5, isolationRatio: 0.95 } as const;
/** Offered rates tried for the latency knee (events/s), in order; the walk stops at the first miss. */
const KNEE_RATES = QUICK ? [500, 1000, 2000] : [500, 1000, 1500, 2000, 3000, 4000];

const fmt = (n: number, digits = 0) => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a');
const verdict = (ok: boolean) => (ok ? 'ok' : 'MISSED');

export async function runDeliveryBench(): Promise<{ rows: string[][]; summary: Record<string, number>; summaryLine: string }> {
  await deleteBenchKeys();
  const receiver = await startReceiverProcess();
  const naiveSchema = await createBenchSchema('naive');
  const results = new Map<string, number[]>();
  const push = (key: string, v: number) => results.set(key, [...(results.get(key) ?? []), v]);
  try {
    for (let round = 1; round <= ROUNDS; round += 1) {
      for (const c of CONCURRENCIES) {
        const common = { concurrency: c, jobs: JOBS, warmup: WARMUP, receiverUrl: receiver.url };
        const product = await runProduct({ ...common, receivedCount: async () => (await receiver.stats()).count });
        push(`product/${c}`, product.deliveriesPerSecond);
        push('enqueue', product.enqueuePerSecond);
        push(`naive/${c}`, await runNaive({ ...common, databaseUrl: naiveSchema.url }));
        push(`noop/${c}`, await runNoop({ ...common, databaseUrl: naiveSchema.url }));
        process.stderr.write(
          `bench round ${round} c=${c}: product=${fmt(product.deliveriesPerSecond)} naive=${fmt(results.get(`naive/${c}`)?.at(-1) ?? NaN)} noop=${fmt(results.get(`noop/${c}`)?.at(-1) ?? NaN)}\n`,
        );
      }
      push('addBulk', await runPlainAddBulk(JOBS));
    }
    // Scale-out on this machine (2 cores: a figure, no target): 1 vs 2 worker processes, c=64.
    // And the same worker run from the TypeScript sources under tsx (how the bin ran before the package build).
    // And with endpoint isolation off: what its two Lua calls per delivery cost.
    const scale = { one: [] as number[], two: [] as number[], tsx: [] as number[], off: [] as number[], tuned: [] as number[] };
    for (let round = 1; round <= ROUNDS; round += 1) {
      const common = { concurrency: 64, jobs: JOBS, warmup: WARMUP, receiverUrl: receiver.url, receivedCount: async () => (await receiver.stats()).count };
      scale.one.push((await runProduct({ ...common, workers: 1 })).deliveriesPerSecond);
      scale.two.push((await runProduct({ ...common, workers: 2 })).deliveriesPerSecond);
      scale.tsx.push((await runProduct({ ...common, workers: 1, variant: 'tsx' })).deliveriesPerSecond);
      scale.off.push((await runProduct({ ...common, workers: 1, env: { HOOKRELAY_ENDPOINT_ISOLATION: 'false' } })).deliveriesPerSecond);
      // Tuned (labelled): the fixed per-endpoint cap a user with one receiver might set; every other row is defaults.
      scale.tuned.push((await runProduct({ ...common, workers: 1, env: { HOOKRELAY_ENDPOINT_CONCURRENCY: '64' } })).deliveriesPerSecond);
    }
    const latencyAt = (rate: number) =>
      runLatency({ ratePerSecond: rate, seconds: LATENCY_SECONDS, receiverUrl: receiver.url, stats: receiver.stats, reset: receiver.reset });
    const latency = await latencyAt(LATENCY_RATE);
    // The knee: the highest offered rate whose p99 stays within the target, everything delivered.
    let knee = latency.p99 <= TARGETS.p99Ms && latency.count >= latency.offered ? LATENCY_RATE : 0;
    const kneeTrail: string[] = [`${LATENCY_RATE}/s p99 ${fmt(latency.p99, 1)}`];
    for (const rate of KNEE_RATES.filter((r) => r > LATENCY_RATE)) {
      if (knee === 0) break;
      const at = await latencyAt(rate);
      kneeTrail.push(`${rate}/s p99 ${fmt(at.p99, 1)}${at.count < at.offered ? ` (${at.count}/${at.offered} in time)` : ''}`);
      if (at.p99 > TARGETS.p99Ms || at.count < at.offered) break;
      knee = rate;
    }
    const rss = await runWorkerRss({ queued: RSS_QUEUED, receiverUrl: receiver.url });

    const m = (key: string) => median(results.get(key) ?? []);
    const isolationRatio = median(scale.one) / median(scale.off);
    const rows: string[][] = [['benchmark (worker process at its defaults unless labelled)', 'result', 'target', 'status']];
    for (const c of CONCURRENCIES) {
      const ratioNaive = m(`product/${c}`) / m(`naive/${c}`);
      const ratioNoop = m(`product/${c}`) / m(`noop/${c}`);
      rows.push(
        [`c=${c} product: deliveries/s (${JOBS} events, median of ${ROUNDS})`, fmt(m(`product/${c}`)), '', ''],
        [`c=${c} naive: BullMQ + fetch + UPDATE per job, jobs/s`, fmt(m(`naive/${c}`)), '', ''],
        [`c=${c} BullMQ no-op processor, jobs/s`, fmt(m(`noop/${c}`)), '', ''],
        [`c=${c} product / naive`, fmt(ratioNaive, 2), `≥ ${TARGETS.ratioNaive}`, verdict(ratioNaive >= TARGETS.ratioNaive)],
        [`c=${c} product / no-op`, fmt(ratioNoop, 2), `≥ ${TARGETS.ratioNoop}`, verdict(ratioNoop >= TARGETS.ratioNoop)],
      );
    }
    rows.push(
      ['producer enqueue (ledger + job), events/s', fmt(m('enqueue')), '', ''],
      ['plain BullMQ addBulk, jobs/s', fmt(m('addBulk')), '', ''],
      ['producer / addBulk', fmt(m('enqueue') / m('addBulk'), 2), `≥ ${TARGETS.enqueueRatio}`, verdict(m('enqueue') / m('addBulk') >= TARGETS.enqueueRatio)],
      [`1 worker process, c=64, deliveries/s (median of ${ROUNDS})`, fmt(median(scale.one)), '', ''],
      [`2 worker processes, c=64 each, deliveries/s`, fmt(median(scale.two)), '2 cores: no target', `×${fmt(median(scale.two) / median(scale.one), 2)}`],
      [
        `1 worker process under tsx (sources, before the build), c=64, deliveries/s`,
        fmt(median(scale.tsx)),
        '',
        `shipped ×${fmt(median(scale.one) / median(scale.tsx), 2)}`,
      ],
      [`1 worker process with HOOKRELAY_ENDPOINT_ISOLATION=false, c=64, deliveries/s`, fmt(median(scale.off)), '', ''],
      ['isolation on / off (healthy endpoint, c=64)', fmt(isolationRatio, 2), `≥ ${TARGETS.isolationRatio}`, verdict(isolationRatio >= TARGETS.isolationRatio)],
      [
        `tuned: HOOKRELAY_ENDPOINT_CONCURRENCY=64, c=64, deliveries/s`,
        fmt(median(scale.tuned)),
        '',
        `defaults ×${fmt(median(scale.one) / median(scale.tuned), 2)}`,
      ],
      [`c=64 / c=16 (product, defaults)`, fmt(m('product/64') / m('product/16'), 2), '≥ 1', verdict(m('product/64') >= m('product/16'))],
      [`enqueue→received p50 at ${LATENCY_RATE}/s (ms, ${latency.count} events)`, fmt(latency.p50, 1), '', ''],
      [`enqueue→received p99 at ${LATENCY_RATE}/s (ms)`, fmt(latency.p99, 1), `≤ ${TARGETS.p99Ms}`, verdict(latency.p99 <= TARGETS.p99Ms)],
      [`latency knee: highest offered rate with p99 ≤ ${TARGETS.p99Ms} ms (${kneeTrail.join('; ')})`, `${knee}/s`, '', ''],
      [
        `worker process peak RSS, ${RSS_QUEUED} queued (MiB; drained in ${fmt(rss.seconds, 1)} s)`,
        fmt(rss.peakMb, 1),
        `≤ ${TARGETS.rssMb}`,
        verdict(rss.peakMb <= TARGETS.rssMb),
      ],
    );
    const main = 64;
    const summary = {
      product: m(`product/${main}`),
      naive: m(`naive/${main}`),
      noop: m(`noop/${main}`),
      ratio_naive: m(`product/${main}`) / m(`naive/${main}`),
      ratio_noop: m(`product/${main}`) / m(`noop/${main}`),
      ratio_naive_c16: m('product/16') / m('naive/16'),
      enqueue: m('enqueue'),
      addBulk: m('addBulk'),
      p50_ms: latency.p50,
      p99_ms: latency.p99,
      knee_rps: knee,
      rss_mb: rss.peakMb,
      workers_1: median(scale.one),
      workers_2: median(scale.two),
      worker_tsx: median(scale.tsx),
      worker_isolation_off: median(scale.off),
      isolation_ratio: isolationRatio,
      worker_tuned: median(scale.tuned),
    };
    const summaryLine = `bench: product=${fmt(summary.product)} naive=${fmt(summary.naive)} noop=${fmt(summary.noop)} ratio_naive=${fmt(summary.ratio_naive, 2)} ratio_noop=${fmt(summary.ratio_noop, 2)} ratio_naive_c16=${fmt(summary.ratio_naive_c16, 2)} isolation_ratio=${fmt(isolationRatio, 2)} p50_ms=${fmt(summary.p50_ms, 1)} p99_ms=${fmt(summary.p99_ms, 1)} knee_rps=${summary.knee_rps} rss_mb=${fmt(summary.rss_mb, 1)}`;
    return { rows, summary, summaryLine };
  } finally {
    receiver.close();
    await naiveSchema.drop();
    await deleteBenchKeys();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { rows, summaryLine } = await runDeliveryBench();
  printTable(rows);
  console.log(summaryLine);
  process.exit(0);
}
