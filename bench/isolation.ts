/**
 * Endpoint isolation under a hanging receiver: does one (or ten) endpoint(s) that accept the TCP
 * connection and never answer hold up a healthy endpoint's deliveries?
 *
 * Per scenario: a fresh ledger schema and queue, one `hookrelay worker` process as shipped
 * (compiled dist/, concurrency 64, isolation at its defaults: the adaptive limit starting at 4 per endpoint, no fixed cap, breaker after 5
 * consecutive failures, 10 s cooldown), warmed with healthy deliveries. Then, through the
 * producer, 400 events whose webhook (timeout 5 s) points at the hanging endpoint(s) — spread
 * round-robin over them — and immediately after, 100 events for a healthy receiver (its own
 * process, answers 200 at once). Figures: enqueue→received p50/p99 of the healthy events, how
 * many arrived, and the attempts the ledger recorded for the hanging endpoints. The baseline is
 * the same run with HOOKRELAY_ENDPOINT_ISOLATION=false, bounded at OFF_BOUND_MS; the reference
 * rows send the healthy burst alone (no hanging endpoint), with isolation on and off.
 * `npx tsx bench/isolation.ts` runs this section alone (build dist/ first: `npm run -s build`).
 */
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import { sql } from 'drizzle-orm';
import { Redis } from 'ioredis';
import { createEndpointGate } from '../src/isolation/endpointGate.ts';
import { endpointKeyPrefix } from '../src/isolation/endpointIsolation.ts';
import { createHookProducer } from '../src/queue/producer.ts';
import type { EnqueueInput } from '../src/queue/types.ts';
import { openStore, type Store } from '../src/store/db.ts';
import { migrateStore } from '../src/store/migrate.ts';
import {
  BENCH_PREFIX,
  BENCH_REDIS_URL,
  createBenchSchema,
  deleteBenchKeys,
  kibPayload,
  percentile,
  printTable,
  sleep,
  startReceiverProcess,
  type ReceiverProcess,
  uniqueName,
} from './support.ts';
import { startWorkerProcess } from './workerProcess.ts';

const HANGING_EVENTS = 400;
const HEALTHY_EVENTS = 100;
const WARMUP_EVENTS = 50;
const WEBHOOK_TIMEOUT_SECONDS = 5;
const CONCURRENCY = 64;
/** Isolation on: wait at most this long for the healthy events. */
const ON_BOUND_MS = 40_000;
/** Isolation off: the healthy events queue behind the hanging ones; stop waiting here and report what arrived. */
const OFF_BOUND_MS = 40_000;
/** Each run lasts at least this long, so the first wave of timed-out attempts (5 s) is in the ledger. */
const MIN_RUN_MS = WEBHOOK_TIMEOUT_SECONDS * 1000 + 2_000;
/** The attempts column compares runs at the same point: this long after the first enqueue. */
const ATTEMPTS_AT_MS = MIN_RUN_MS;
const POLL_MS = 20;
/** Issue 27's target for the healthy endpoint behind 10 hanging ones. */
const HANG10_P99_TARGET_MS = 500;

/** Servers that accept TCP connections, read and discard what arrives, and never answer. */
type HangingEndpoints = { urls: string[]; connections(): number; close(): Promise<void> };

async function startHangingEndpoints(count: number): Promise<HangingEndpoints> {
  const sockets = new Set<net.Socket>();
  const servers: net.Server[] = [];
  let accepted = 0;
  for (let i = 0; i < count; i += 1) {
    const server = net.createServer((socket) => {
      accepted += 1;
      sockets.add(socket);
      socket.on('error', () => undefined); // the client gives up (timeout) by resetting
      socket.on('close', () => sockets.delete(socket));
      socket.resume();
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    servers.push(server);
  }
  return {
    urls: servers.map((s, i) => `http://127.0.0.1:${(s.address() as AddressInfo).port}/hang-${i}`),
    connections: () => accepted,
    async close() {
      const closed = servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve())));
      for (const socket of sockets) socket.destroy();
      await Promise.all(closed);
    },
  };
}

type ScenarioResult = {
  label: string;
  hanging: number;
  isolation: boolean;
  p50: number;
  p99: number;
  received: number;
  deliveredInLedger: number;
  /** enqueue of the first hanging event → the last healthy event received (or the bound). */
  allInMs: number;
  attemptsAtMark: number;
  attemptsAtEnd: number;
  inFlightAtEnd: number;
  runMs: number;
  breakersOpen: number;
  hangingConnections: number;
};

function events(prefix: string, count: number, urls: readonly string[], extra: () => Record<string, unknown> = () => ({})): EnqueueInput[] {
  return Array.from({ length: count }, (_, k) => {
    const e = k % urls.length;
    return {
      operationId: `${prefix}-${k}`,
      type: 'onComplete' as const,
      event: { ...kibPayload(k), ...extra() },
      hooks: [{ id: `${prefix}-${e}`, type: 'onComplete' as const, webhook: { url: urls[e] as string, timeout: WEBHOOK_TIMEOUT_SECONDS } }],
    };
  });
}

async function one<T>(store: Store, query: ReturnType<typeof sql>): Promise<T> {
  const r = await store.db.execute(query);
  return (r as unknown as { rows: T[] }).rows[0] as T;
}

async function runScenario(opts: { label: string; hanging: number; isolation: boolean; receiver: ReceiverProcess }): Promise<ScenarioResult> {
  const schema = await createBenchSchema('isolation');
  const store = await openStore({ databaseUrl: schema.url, maxConnections: 4 });
  await migrateStore(store);
  const queueName = uniqueName('isolation');
  const producer = createHookProducer({ store, redisUrl: BENCH_REDIS_URL, queueName, queuePrefix: BENCH_PREFIX, env: {} });
  const hang = await startHangingEndpoints(opts.hanging);
  const healthyUrl = `${opts.receiver.url}/healthy`;
  const healthyKey = new URL(healthyUrl).origin + new URL(healthyUrl).pathname;
  const worker = await startWorkerProcess({
    databaseUrl: schema.url,
    queueName,
    concurrency: CONCURRENCY,
    env: {
      HOOKRELAY_QUEUE_PREFIX: BENCH_PREFIX,
      // The breaker's "circuit opened" warnings would interleave with the table.
      LOG_LEVEL: 'error',
      ...(opts.isolation ? {} : { HOOKRELAY_ENDPOINT_ISOLATION: 'false' }),
    },
  });
  const attemptsOnHanging = async () =>
    one<{ attempts: number; in_flight: number }>(
      store,
      sql`select coalesce(sum(attempt_count), 0)::int as attempts, count(*) filter (where status = 'in_flight')::int as in_flight
          from deliveries where endpoint_key <> ${healthyKey}`,
    );
  try {
    // Warm the worker (JIT, pools, the healthy endpoint's connection) before the clock starts.
    await opts.receiver.reset();
    await producer.enqueueMany(events('warm', WARMUP_EVENTS, [healthyUrl]));
    const warmDeadline = Date.now() + 20_000;
    while ((await opts.receiver.stats()).count < WARMUP_EVENTS) {
      if (Date.now() > warmDeadline) throw new Error('isolation bench: the worker did not deliver the warm-up events');
      await sleep(POLL_MS);
    }
    await opts.receiver.reset();

    const started = performance.now();
    const hanging = opts.hanging > 0 ? await producer.enqueueMany(events('hang', HANGING_EVENTS, hang.urls)) : { queued: true };
    const healthy = await producer.enqueueMany(events('ok', HEALTHY_EVENTS, [healthyUrl], () => ({ sentAt: Date.now() })));
    if (!hanging.queued || !healthy.queued) throw new Error('isolation bench: the producer could not queue the jobs');
    const minRunMs = opts.hanging > 0 ? MIN_RUN_MS : 0;

    const bound = opts.isolation ? ON_BOUND_MS : OFF_BOUND_MS;
    // Only the healthy events carry sentAt: one latency per healthy request received.
    let latencies = (await opts.receiver.stats()).latencies;
    let allInMs = Number.NaN;
    let attemptsAtMark: number | undefined;
    for (;;) {
      const elapsed = performance.now() - started;
      if (Number.isNaN(allInMs) && latencies.length >= HEALTHY_EVENTS) allInMs = elapsed;
      if (attemptsAtMark === undefined && elapsed >= ATTEMPTS_AT_MS) attemptsAtMark = (await attemptsOnHanging()).attempts;
      if ((latencies.length >= HEALTHY_EVENTS && elapsed >= minRunMs) || elapsed >= bound) break;
      await sleep(POLL_MS);
      latencies = (await opts.receiver.stats()).latencies;
    }
    const runMs = performance.now() - started;
    const atEnd = await attemptsOnHanging();
    // The ledger write follows the response: give the outcomes of the last arrivals a moment.
    const deliveredHealthy = async () =>
      (await one<{ n: number }>(store, sql`select count(*)::int as n from deliveries where endpoint_key = ${healthyKey} and status = 'delivered'`)).n -
      WARMUP_EVENTS;
    let delivered = await deliveredHealthy();
    const ledgerDeadline = Date.now() + 5_000;
    while (delivered < Math.min(HEALTHY_EVENTS, latencies.length) && Date.now() < ledgerDeadline) {
      await sleep(50);
      delivered = await deliveredHealthy();
    }
    let breakersOpen = 0;
    if (opts.isolation) {
      const redis = new Redis(BENCH_REDIS_URL, { maxRetriesPerRequest: null });
      const gate = createEndpointGate(redis, { keyPrefix: endpointKeyPrefix(BENCH_PREFIX, queueName) });
      breakersOpen = (await gate.list()).filter((s) => s.key !== healthyKey && s.state !== 'closed').length;
      redis.disconnect();
    }
    return {
      label: opts.label,
      hanging: opts.hanging,
      isolation: opts.isolation,
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
      received: latencies.length,
      deliveredInLedger: delivered,
      allInMs,
      attemptsAtMark: attemptsAtMark ?? atEnd.attempts,
      attemptsAtEnd: atEnd.attempts,
      inFlightAtEnd: atEnd.in_flight,
      runMs,
      breakersOpen,
      hangingConnections: hang.connections(),
    };
  } finally {
    // Hanging sockets first: the worker's in-flight attempts then end at once and it stops quickly.
    await hang.close();
    await worker.stop();
    await producer.close();
    await store.close();
    await schema.drop();
    await deleteBenchKeys();
  }
}

const fmt = (n: number, digits = 0) => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a');

export async function runIsolationBench(): Promise<{ rows: string[][]; summary: Record<string, number>; summaryLine: string }> {
  await deleteBenchKeys();
  const receiver = await startReceiverProcess();
  try {
    const runs: ScenarioResult[] = [];
    for (const s of [
      { label: 'ref_off', hanging: 0, isolation: false },
      { label: 'ref', hanging: 0, isolation: true },
      { label: 'hang1', hanging: 1, isolation: true },
      { label: 'hang10', hanging: 10, isolation: true },
      { label: 'off_hang1', hanging: 1, isolation: false },
    ]) {
      const r = await runScenario({ ...s, receiver });
      process.stderr.write(
        `bench isolation ${r.label}: p50=${fmt(r.p50)} p99=${fmt(r.p99)} ms, ${r.received}/${HEALTHY_EVENTS} healthy, hanging attempts ${r.attemptsAtEnd} in ${fmt(r.runMs / 1000, 1)} s\n`,
      );
      runs.push(r);
    }
    const rows: string[][] = [
      [
        `${HANGING_EVENTS} events to hanging endpoint(s) (timeout ${WEBHOOK_TIMEOUT_SECONDS} s), then ${HEALTHY_EVENTS} healthy; c=${CONCURRENCY}`,
        'healthy p50 ms',
        'healthy p99 ms',
        'healthy received (ledger delivered)',
        'last healthy in, s',
        `hanging attempts at ${ATTEMPTS_AT_MS / 1000} s / at end (in flight)`,
        'breakers open',
        'run, s',
      ],
    ];
    for (const r of runs) {
      const lost = HEALTHY_EVENTS - Math.min(r.received, r.deliveredInLedger);
      const hanging = r.hanging === 0 ? 'no hanging endpoint (the healthy burst alone)' : `${r.hanging} hanging endpoint${r.hanging > 1 ? 's' : ''}`;
      rows.push([
        `${r.isolation ? 'isolation on (defaults)' : 'HOOKRELAY_ENDPOINT_ISOLATION=false'}, ${hanging}`,
        fmt(r.p50),
        r.received >= HEALTHY_EVENTS ? fmt(r.p99) : `> ${fmt(r.runMs)} (${r.received} in)`,
        `${r.received}/${HEALTHY_EVENTS} (${r.deliveredInLedger})${lost > 0 ? ` MISSING ${lost}` : ' ok'}`,
        fmt(r.allInMs / 1000, 2),
        r.hanging > 0 ? `${r.attemptsAtMark} / ${r.attemptsAtEnd} (${r.inFlightAtEnd})` : '-',
        r.isolation && r.hanging > 0 ? `${r.breakersOpen}/${r.hanging}` : '-',
        fmt(r.runMs / 1000, 1),
      ]);
    }
    const by = (label: string) => runs.find((r) => r.label === label) as ScenarioResult;
    const p99OrBound = (r: ScenarioResult) => (r.received >= HEALTHY_EVENTS ? r.p99 : r.runMs);
    const behindTen = p99OrBound(by('hang10'));
    rows.push([
      `target (issue 27): healthy p99 behind 10 hanging endpoints ≤ ${HANG10_P99_TARGET_MS} ms`,
      '',
      fmt(behindTen),
      behindTen <= HANG10_P99_TARGET_MS ? 'ok' : 'MISSED',
      '',
      '',
      '',
      '',
    ]);
    const summary: Record<string, number> = {};
    for (const r of runs) {
      summary[`${r.label}_p50_ms`] = r.p50;
      summary[`${r.label}_p99_ms`] = p99OrBound(r);
      summary[`${r.label}_received`] = r.received;
      if (r.hanging > 0) summary[`${r.label}_hanging_attempts`] = r.attemptsAtEnd;
    }
    const hang1 = by('hang1');
    const hang10 = by('hang10');
    const off = by('off_hang1');
    const ref = by('ref');
    const summaryLine =
      `isolation: hang1_p50_ms=${fmt(hang1.p50)} hang1_p99_ms=${fmt(p99OrBound(hang1))} hang10_p50_ms=${fmt(hang10.p50)} ` +
      `hang10_p99_ms=${fmt(p99OrBound(hang10))} off_hang1_p50_ms=${fmt(off.p50)} off_hang1_p99_ms=${fmt(p99OrBound(off))}` +
      `${off.received < HEALTHY_EVENTS ? `+ (${off.received}/${HEALTHY_EVENTS} in)` : ''} ` +
      `ref_p50_ms=${fmt(ref.p50)} ref_p99_ms=${fmt(p99OrBound(ref))} ref_off_p99_ms=${fmt(p99OrBound(by('ref_off')))} ` +
      `healthy_received=${runs.map((r) => r.received).join('/')}`;
    return { rows, summary, summaryLine };
  } finally {
    receiver.close();
    await deleteBenchKeys();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { rows, summary, summaryLine } = await runIsolationBench();
  printTable(rows);
  console.log(JSON.stringify(summary));
  console.log(summaryLine);
  process.exit(0);
}
