/**
 * `npm run bench`: every benchmark section, one after another, each printing its table; the last
 * line is the delivery summary (`bench: product=… naive=… …`). `BENCH_QUICK=1` runs a smaller
 * version of each. Sections are independent: add one by appending to SECTIONS.
 */
import { runDeliveryBench } from './delivery.ts';
import { runDispatchBench } from './dispatch.ts';
import { runStartupBench } from './startup.ts';
import { printTable } from './support.ts';

export type BenchSection = { title: string; run(): Promise<{ rows: string[][]; summary: Record<string, number>; summaryLine?: string }> };

const SECTIONS: BenchSection[] = [
  { title: 'Durable delivery (worker, producer, latency, memory)', run: runDeliveryBench },
  { title: 'Dispatch (in-process hooks, decision round trip)', run: runDispatchBench },
  { title: 'Startup (CLI --help, idle worker RSS): shipped dist/ vs the same sources under tsx', run: runStartupBench },
];

const summaryLines: string[] = [];
for (const section of SECTIONS) {
  console.log(`\n## ${section.title}\n`);
  const { rows, summary, summaryLine } = await section.run();
  printTable(rows);
  console.log(JSON.stringify(summary));
  if (summaryLine) summaryLines.push(summaryLine);
}
// The delivery summary is the contract's last line.
console.log('');
for (const line of summaryLines) console.log(line);
process.exit(0);
