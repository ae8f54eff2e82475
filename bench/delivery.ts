/**
 * Delivery benchmarks, same machine, same run, interleaved (product, naive, no-op per round and
 * concurrency), median of the rounds:
 *   (a) product: events pre-enqueued through the producer, drained by the worker process as shipped
 *       (`node bin/hookrelay.mjs worker`, compiled dist/) until the ledger
 *       says delivered; (b) naive BullMQ + fetch + one UPDATE per job (bench/naive.ts);
 *   (c) BullMQ with a no-op processor; plus enqueue rate vs plain addBulk (side by side, one pair
 *   per round and concurrency, with the floor Q1's row-before-job order leaves), enqueue→received
 *   latency at an offered 500 events/s, a single awaited enqueue's p99 at 200/s (beside a bare
 *   INSERT + queue.add floor offered between those enqueues), 1/2/4 worker
 *   processes (scale-out), and the worker process's peak RSS with many queued. Beside each rate:
 *   CPU ms per delivery of the worker (or naive) process, its Postgres backends and redis-server
 *   (bench/cost.ts). Short run: BENCH_JOBS, BENCH_WARMUP, BENCH_ROUNDS.
 * `npx tsx bench/delivery.ts` runs this section alone; `npx tsx bench/enqueueOnly.ts` its enqueue rows
 * alone, in seconds (with ENQ_BASELINE for a before/after in one run).
 */
import { pathToFileURL } from 'node:url';
import { runNaive, runNoop } from './naive.ts';
import { runBulkFloor, runLatency, runPlainAddBulk, runProduct, runWorkerRss } from './product.ts';
import type { CpuPerDelivery } from './cost.ts';
import { createBenchSchema, deleteBenchKeys, median, printTable, startReceiverProcess } from './support.ts';

const QUICK = process.env.BENCH_QUICK === '1';
/** Sizes for a short run on a loaded machine: BENCH_JOBS, BENCH_WARMUP, BENCH_ROUNDS override the defaults. */
const JOBS = Number(process.env.BENCH_JOBS ?? (QUICK ? 3_000 : 20_000));
const WARMUP = Number(process.env.BENCH_WARMUP ?? (QUICK ? 500 : 2_000));
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? (QUICK ? 1 : 3));
const CONCURRENCIES = [16, 64] as const;
const LATENCY_RATE = 500;
/** A request handler's view: one `enqueue` awaited at a time, offered at this rate. */
const ENQUEUE_RATE = 200;
const LATENCY_SECONDS = QUICK ? 4 : 10;
const RSS_QUEUED = QUICK ? 20_000 : 100_000;
const SCALE_OUT = [1, 2, 4] as const;

export const TARGETS = {
  ratioNaive: 3,
  ratioNoop: 0.4,
  p99Ms: 50,
  rssMb: 200,
  enqueueRatio: 0.5,
  isolationRatio: 0.95,
  enqueueP99Ms: 5,
} as const;
/** Offered rates tried for the latency knee (events/s), in order; the walk stops at the first miss. */
const KNEE_RATES = QUICK ? [500, 1000, 2000] : [500, 1000, 1500, 2000, 3000, 4000];

const fmt = (n: number, digits = 0) => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a');
const verdict = (ok: boolean) => (ok ? 'ok' : 'MISSED');
const cpuCell = (c: CpuPerDelivery | undefined) => (c ? `${fmt(c.worker, 3)} / ${fmt(c.pg, 3)} / ${fmt(c.redis, 3)}` : '');

export async function runDeliveryBench(): Promise<{ rows: string[][]; summary: Record<string, number>; summaryLine: string }> {
  await deleteBenchKeys();
  const receiver = await startReceiverProcess();
  const naiveSchema = await createBenchSchema('naive');
  const results = new Map<string, number[]>();
  const cpus = new Map<string, CpuPerDelivery[]>();
  const push = (key: string, v: number, cpu?: CpuPerDelivery) => {
    results.set(key, [...(results.get(key) ?? []), v]);
    if (cpu) cpus.set(key, [...(cpus.get(key) ?? []), cpu]);
  };
  try {
    for (let round = 1; round <= ROUNDS; round += 1) {
      for (const c of CONCURRENCIES) {
        const common = { concurrency: c, jobs: JOBS, warmup: WARMUP, receiverUrl: receiver.url };
        // The enqueue reference right before the producer's enqueue phase (runProduct starts with
        // it): each pair is measured side by side, so the ratio is the pair's, not two moments'.
        const addBulk = await runPlainAddBulk(JOBS);
        const floor = await runBulkFloor(JOBS);
        const product = await runProduct({ ...common, receivedCount: async () => (await receiver.stats()).count });
        push(`product/${c}`, product.deliveriesPerSecond, product.cpu);
        push('enqueue', product.enqueuePerSecond);
        push('addBulk', addBulk);
        push('enqueueRatio', product.enqueuePerSecond / addBulk);
        push('enqueueFloor', floor);
        push('enqueueFloorRatio', floor / addBulk);
        push('enqueueOfFloor', product.enqueuePerSecond / floor);
        const naive = await runNaive({ ...common, databaseUrl: naiveSchema.url });
        push(`naive/${c}`, naive.perSecond, naive.cpu);
        const noop = await runNoop({ ...common, databaseUrl: naiveSchema.url });
        push(`noop/${c}`, noop.perSecond, noop.cpu);
        process.stderr.write(
          `bench round ${round} c=${c}: product=${fmt(product.deliveriesPerSecond)} (${cpuCell(product.cpu)} ms) naive=${fmt(naive.perSecond)} (${cpuCell(naive.cpu)} ms) noop=${fmt(noop.perSecond)}\n`,
        );
      }
    }
    // Scale-out: 1, 2 and 4 worker processes (c=64 each) against one Redis and one Postgres —
    // aggregate rate and per-delivery Redis/Postgres CPU (flat = nothing serialises the workers).
    // And the same worker run from the TypeScript sources under tsx (how the bin ran before the package build).
    // And with endpoint isolation off: what its Lua calls per delivery cost.
    for (let round = 1; round <= ROUNDS; round += 1) {
      const common = { concurrency: 64, jobs: JOBS, warmup: WARMUP, receiverUrl: receiver.url, receivedCount: async () => (await receiver.stats()).count };
      for (const n of SCALE_OUT) {
        const r = await runProduct({ ...common, workers: n });
        push(`workers/${n}`, r.deliveriesPerSecond, r.cpu);
      }
      const tsx = await runProduct({ ...common, workers: 1, variant: 'tsx' });
      push('tsx', tsx.deliveriesPerSecond, tsx.cpu);
      // Isolation on / off as a back-to-back pair whose order alternates by round, so neither side
      // always runs after the scale-out rows (Postgres autovacuum, a warm Redis) and the ratio
      // compares like with like.
      const isolationPair = round % 2 === 1 ? (['on', 'off'] as const) : (['off', 'on'] as const);
      let off = { deliveriesPerSecond: Number.NaN };
      for (const side of isolationPair) {
        const r = await runProduct({ ...common, workers: 1, ...(side === 'off' ? { env: { HOOKRELAY_ENDPOINT_ISOLATION: 'false' } } : {}) });
        push(side === 'off' ? 'off' : 'isolation_on', r.deliveriesPerSecond, r.cpu);
        if (side === 'off') off = r;
      }
      // Tuned (labelled): the fixed per-endpoint cap a user with one receiver might set; every other row is defaults.
      const tuned = await runProduct({ ...common, workers: 1, env: { HOOKRELAY_ENDPOINT_CONCURRENCY: '64' } });
      push('tuned', tuned.deliveriesPerSecond, tuned.cpu);
      process.stderr.write(
        `bench scale round ${round}: ${SCALE_OUT.map((n) => `${n}w=${fmt(results.get(`workers/${n}`)?.at(-1) ?? NaN)}`).join(' ')} off=${fmt(off.deliveriesPerSecond)}\n`,
      );
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
    const enqueueLatency = await runLatency({
      ratePerSecond: ENQUEUE_RATE,
      seconds: LATENCY_SECONDS,
      receiverUrl: receiver.url,
      stats: receiver.stats,
      reset: receiver.reset,
      floor: true,
    });
    const rss = await runWorkerRss({ queued: RSS_QUEUED, receiverUrl: receiver.url });

    const m = (key: string) => median(results.get(key) ?? []);
    const cpuOf = (key: string): CpuPerDelivery | undefined => {
      const all = cpus.get(key);
      if (!all?.length) return undefined;
      return { worker: median(all.map((c) => c.worker)), pg: median(all.map((c) => c.pg)), redis: median(all.map((c) => c.redis)) };
    };
    const isolationRatio = m('isolation_on') / m('off');
    const rows: string[][] = [
      ['benchmark (worker process at its defaults unless labelled)', 'result', 'CPU ms/delivery: worker / Postgres / Redis', 'target', 'status'],
    ];
    for (const c of CONCURRENCIES) {
      const ratioNaive = m(`product/${c}`) / m(`naive/${c}`);
      const ratioNoop = m(`product/${c}`) / m(`noop/${c}`);
      rows.push(
        [`c=${c} product: deliveries/s (${JOBS} events, median of ${ROUNDS})`, fmt(m(`product/${c}`)), cpuCell(cpuOf(`product/${c}`)), '', ''],
        [`c=${c} naive: BullMQ + fetch + UPDATE per job, jobs/s`, fmt(m(`naive/${c}`)), cpuCell(cpuOf(`naive/${c}`)), '', ''],
        [`c=${c} BullMQ no-op processor, jobs/s`, fmt(m(`noop/${c}`)), cpuCell(cpuOf(`noop/${c}`)), '', ''],
        [`c=${c} product / naive`, fmt(ratioNaive, 2), '', `≥ ${TARGETS.ratioNaive}`, verdict(ratioNaive >= TARGETS.ratioNaive)],
        [`c=${c} product / no-op`, fmt(ratioNoop, 2), '', `≥ ${TARGETS.ratioNoop}`, verdict(ratioNoop >= TARGETS.ratioNoop)],
      );
    }
    rows.push(
      ['producer enqueueMany (ledger + job), events/s', fmt(m('enqueue')), '', '', ''],
      ['plain BullMQ addBulk, jobs/s', fmt(m('addBulk')), '', '', ''],
      [
        `producer / addBulk (median of ${results.get('enqueueRatio')?.length ?? 0} side-by-side pairs: ${(results.get('enqueueRatio') ?? []).map((r) => fmt(r, 2)).join(' ')})`,
        fmt(m('enqueueRatio'), 2),
        '',
        `≥ ${TARGETS.enqueueRatio}`,
        verdict(m('enqueueRatio') >= TARGETS.enqueueRatio),
      ],
      [
        'floor: bare multi-row INSERT (primary key only) then the same addBulk, events/s',
        fmt(m('enqueueFloor')),
        '',
        '',
        `floor / addBulk ${fmt(m('enqueueFloorRatio'), 2)}: the most Q1's order leaves`,
      ],
      ['producer / floor (median of the per-round ratios)', fmt(m('enqueueOfFloor'), 2), '', '', ''],
      [
        `single enqueue (awaited) p99 at ${ENQUEUE_RATE}/s offered, worker running (ms; p50 ${fmt(enqueueLatency.enqueueP50, 2)})`,
        fmt(enqueueLatency.enqueueP99, 2),
        '',
        `≤ ${TARGETS.enqueueP99Ms}`,
        verdict(enqueueLatency.enqueueP99 <= TARGETS.enqueueP99Ms),
      ],
      [
        `floor: a bare one-row INSERT + queue.add (no producer), offered between those enqueues, p99 (ms; p50 ${fmt(enqueueLatency.floorP50, 2)})`,
        fmt(enqueueLatency.floorP99, 2),
        '',
        '',
        `enqueue p99 ÷ floor ${fmt(enqueueLatency.enqueueP99 / enqueueLatency.floorP99, 2)}`,
      ],
    );
    for (const n of SCALE_OUT) {
      const scaleNote = n === 1 ? '' : `×${fmt(m(`workers/${n}`) / m('workers/1'), 2)} of 1`;
      rows.push([
        `scale-out: ${n} worker process${n > 1 ? 'es' : ''}, c=64 each, aggregate deliveries/s`,
        fmt(m(`workers/${n}`)),
        cpuCell(cpuOf(`workers/${n}`)),
        '2 cores: no target',
        scaleNote,
      ]);
    }
    rows.push(
      [
        `1 worker process under tsx (sources, before the build), c=64, deliveries/s`,
        fmt(m('tsx')),
        cpuCell(cpuOf('tsx')),
        '',
        `shipped ×${fmt(m('workers/1') / m('tsx'), 2)}`,
      ],
      [`1 worker process, isolation on (paired with the next row), c=64, deliveries/s`, fmt(m('isolation_on')), cpuCell(cpuOf('isolation_on')), '', ''],
      [`1 worker process with HOOKRELAY_ENDPOINT_ISOLATION=false, c=64, deliveries/s`, fmt(m('off')), cpuCell(cpuOf('off')), '', ''],
      [
        'isolation on / off (healthy endpoint, c=64)',
        fmt(isolationRatio, 2),
        '',
        `≥ ${TARGETS.isolationRatio}`,
        verdict(isolationRatio >= TARGETS.isolationRatio),
      ],
      [
        `tuned: HOOKRELAY_ENDPOINT_CONCURRENCY=64, c=64, deliveries/s`,
        fmt(m('tuned')),
        cpuCell(cpuOf('tuned')),
        '',
        `defaults ×${fmt(m('workers/1') / m('tuned'), 2)}`,
      ],
      [`c=64 / c=16 (product, defaults)`, fmt(m('product/64') / m('product/16'), 2), '', '≥ 1', verdict(m('product/64') >= m('product/16'))],
      [`enqueue→received p50 at ${LATENCY_RATE}/s (ms, ${latency.count} events)`, fmt(latency.p50, 1), '', '', ''],
      [`enqueue→received p99 at ${LATENCY_RATE}/s (ms)`, fmt(latency.p99, 1), '', `≤ ${TARGETS.p99Ms}`, verdict(latency.p99 <= TARGETS.p99Ms)],
      [`latency knee: highest offered rate with p99 ≤ ${TARGETS.p99Ms} ms (${kneeTrail.join('; ')})`, `${knee}/s`, '', '', ''],
      [
        `worker process peak RSS, ${RSS_QUEUED} queued (MiB; drained in ${fmt(rss.seconds, 1)} s)`,
        fmt(rss.peakMb, 1),
        '',
        `≤ ${TARGETS.rssMb}`,
        verdict(rss.peakMb <= TARGETS.rssMb),
      ],
    );
    const main = 64;
    const cpuMain = cpuOf(`product/${main}`);
    const summary = {
      product: m(`product/${main}`),
      naive: m(`naive/${main}`),
      noop: m(`noop/${main}`),
      ratio_naive: m(`product/${main}`) / m(`naive/${main}`),
      ratio_noop: m(`product/${main}`) / m(`noop/${main}`),
      ratio_naive_c16: m('product/16') / m('naive/16'),
      worker_cpu_ms: cpuMain?.worker ?? Number.NaN,
      naive_cpu_ms: cpuOf(`naive/${main}`)?.worker ?? Number.NaN,
      pg_cpu_ms: cpuMain?.pg ?? Number.NaN,
      redis_cpu_ms: cpuMain?.redis ?? Number.NaN,
      enqueue: m('enqueue'),
      addBulk: m('addBulk'),
      enqueue_ratio: m('enqueueRatio'),
      enqueue_floor_ratio: m('enqueueFloorRatio'),
      enqueue_p99_ms: enqueueLatency.enqueueP99,
      enqueue_floor_p99_ms: enqueueLatency.floorP99,
      p50_ms: latency.p50,
      p99_ms: latency.p99,
      knee_rps: knee,
      rss_mb: rss.peakMb,
      workers_1: m('workers/1'),
      workers_2: m('workers/2'),
      workers_4: m('workers/4'),
      worker_tsx: m('tsx'),
      worker_isolation_off: m('off'),
      isolation_ratio: isolationRatio,
      worker_tuned: m('tuned'),
    };
    const summaryLine = `bench: product=${fmt(summary.product)} naive=${fmt(summary.naive)} noop=${fmt(summary.noop)} ratio_naive=${fmt(summary.ratio_naive, 2)} ratio_noop=${fmt(summary.ratio_noop, 2)} ratio_naive_c16=${fmt(summary.ratio_naive_c16, 2)} isolation_ratio=${fmt(isolationRatio, 2)} worker_cpu_ms=${fmt(summary.worker_cpu_ms, 3)} naive_cpu_ms=${fmt(summary.naive_cpu_ms, 3)} enqueue_ratio=${fmt(summary.enqueue_ratio, 2)} enqueue_floor_ratio=${fmt(summary.enqueue_floor_ratio, 2)} enqueue_p99_ms=${fmt(summary.enqueue_p99_ms, 2)} enqueue_floor_p99_ms=${fmt(summary.enqueue_floor_p99_ms, 2)} p50_ms=${fmt(summary.p50_ms, 1)} p99_ms=${fmt(summary.p99_ms, 1)} knee_rps=${summary.knee_rps} rss_mb=${fmt(summary.rss_mb, 1)}`;
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
