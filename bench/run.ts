/**
 * `npm run bench`: every benchmark section, one after another, each printing its table; the last
 * line is the delivery summary (`bench: product=… naive=… …`). `BENCH_QUICK=1` runs a smaller
 * version of each. Sections are independent: add one by appending to SECTIONS. `BENCH_ONLY=startup`
 * (or `delivery`, `dispatch`, `outage`, `isolation`, `cli`, comma-separated) runs only those.
 */
import { runCliLatencyBench } from './cliLatency.ts';
import { runDeliveryBench } from './delivery.ts';
import { runDispatchBench } from './dispatch.ts';
import { runIsolationBench } from './isolation.ts';
import { runLedgerScaleBench } from './ledgerScale.ts';
import { runOrderingBench } from './ordering.ts';
import { runOutageBench } from './outage.ts';
import { runRedactionBench } from './redaction.ts';
import { runStartupBench } from './startup.ts';
import { printTable } from './support.ts';

export type BenchSection = {
  key: string;
  title: string;
  onlyWhenAsked?: boolean;
  run(): Promise<{ rows: string[][]; summary: Record<string, number>; summaryLine?: string }>;
};

const SECTIONS: BenchSection[] = [
  { key: 'delivery', title: 'Durable delivery (worker, producer, latency, memory)', run: runDeliveryBench },
  { key: 'dispatch', title: 'Dispatch (in-process hooks, decision round trip)', run: runDispatchBench },
  {
    key: 'outage',
    title: 'Dispatch while a dependency is away (issue 48, F2): queue mode, Redis or Postgres cut through a TCP proxy',
    run: runOutageBench,
  },
  { key: 'isolation', title: 'Endpoint isolation: hanging endpoints vs a healthy one (worker process, c=64, defaults)', run: runIsolationBench },
  {
    key: 'ledger',
    title: 'The ledger at scale: enqueue and delivery with millions of finished rows (slow: BENCH_ONLY=ledger)',
    onlyWhenAsked: true,
    run: runLedgerScaleBench,
  },
  { key: 'ordering', title: 'Ordered delivery (issue 30): 200 operations × 20 events, ordered vs unordered, worker process c=64', run: runOrderingBench },
  { key: 'redaction', title: 'Secret redaction of a kept excerpt (W7, issue 49): µs per call, 2 template values', run: runRedactionBench },
  {
    key: 'startup',
    title: 'Startup (CLI --help, idle worker RSS): shipped dist/ vs the same sources under tsx; embedded `npm start` (no DATABASE_URL): first and second start',
    run: runStartupBench,
  },
  {
    key: 'cli',
    title:
      "The CLI in an operator's loop (issue 50): one whole process per read command, plain node on dist/, Postgres and the embedded store (target ≤ 300 ms)",
    run: runCliLatencyBench,
  },
];

const only = process.env.BENCH_ONLY?.split(',').map((k) => k.trim());
const unknown = only?.filter((k) => !SECTIONS.some((s) => s.key === k)) ?? [];
if (unknown.length > 0) {
  console.error(`BENCH_ONLY: unknown section(s) ${unknown.join(', ')}; known: ${SECTIONS.map((s) => s.key).join(', ')}`);
  process.exit(2);
}
const summaryLines: { key: string; line: string }[] = [];
for (const section of SECTIONS.filter((s) => (only ? only.includes(s.key) : !s.onlyWhenAsked))) {
  console.log(`\n## ${section.title}\n`);
  const { rows, summary, summaryLine } = await section.run();
  printTable(rows);
  console.log(JSON.stringify(summary));
  if (summaryLine) summaryLines.push({ key: section.key, line: summaryLine });
}
// The delivery summary is the contract's last line.
console.log('');
for (const { line } of [...summaryLines.filter((s) => s.key !== 'delivery'), ...summaryLines.filter((s) => s.key === 'delivery')]) console.log(line);
process.exit(0);
