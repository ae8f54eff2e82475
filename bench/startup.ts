/**
 * Startup cost of the CLI and an idle worker, as shipped (plain node on dist/) against the way it
 * ran before the package build (TypeScript sources through the tsx loader), same run, medians;
 * then the embedded default, `npm start` in an empty folder (bench/embeddedStart.ts).
 */
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runEmbeddedStartBench } from './embeddedStart.ts';
import { BENCH_REDIS_URL, createBenchSchema } from './support.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const HEAP_FLAGS = ['--max-semi-space-size=16', '--max-old-space-size=384'];
const VARIANTS = {
  shipped: [...HEAP_FLAGS, path.join(root, 'bin/hookrelay.mjs')],
  tsx: [...HEAP_FLAGS, '--import', 'tsx', path.join(root, 'bench/tsxCli.mjs')],
} as const;
type Variant = keyof typeof VARIANTS;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

function helpRun(variant: Variant): { ms: number } {
  const started = process.hrtime.bigint();
  const r = spawnSync(process.execPath, [...VARIANTS[variant], '--help'], { cwd: root, encoding: 'utf8' });
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  if (r.status !== 0) throw new Error(`${variant} --help exited ${r.status}: ${r.stderr}`);
  return { ms };
}

function vmRssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)![1]) / 1024;
}

async function idleWorkerRss(variant: Variant, databaseUrl: string, port: number): Promise<number> {
  const child = spawn(process.execPath, [...VARIANTS[variant], 'worker'], {
    cwd: root,
    stdio: ['ignore', 'ignore', 'ignore'],
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl,
      REDIS_URL: BENCH_REDIS_URL,
      HOOKRELAY_QUEUE: `startup-${variant}-${port}`,
      HOOKRELAY_HTTP_PORT: String(port),
      LOG_LEVEL: 'warn',
    },
  });
  try {
    const deadline = Date.now() + 30_000;
    for (;;) {
      if (Date.now() > deadline) throw new Error(`${variant} worker not ready on :${port} within 30 s`);
      const ok = await fetch(`http://127.0.0.1:${port}/readyz`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    await new Promise((r) => setTimeout(r, 3_000)); // idle: let startup garbage settle
    return vmRssMb(child.pid!);
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
  }
}

/** Peak RSS of a short command, from a wrapper that waits for it and reads its rusage. */
function peakRssMb(variant: Variant): number {
  const script = `const { spawn } = require('node:child_process');
const c = spawn(process.execPath, ${JSON.stringify([...VARIANTS[variant], '--help'])}, { stdio: 'ignore' });
let peak = 0;
const t = setInterval(() => { try { const s = require('fs').readFileSync('/proc/' + c.pid + '/status', 'utf8'); peak = Math.max(peak, Number(/VmRSS:\\s+(\\d+)/.exec(s)[1])); } catch {} }, 5);
c.on('exit', () => { clearInterval(t); process.stdout.write(String(peak / 1024)); });`;
  const r = spawnSync(process.execPath, ['-e', script], { cwd: root, encoding: 'utf8' });
  return Number(r.stdout);
}

export async function runStartupBench(): Promise<{ rows: string[][]; summary: Record<string, number> }> {
  const rounds = process.env.BENCH_QUICK ? 3 : 7;
  const help: Record<Variant, number[]> = { shipped: [], tsx: [] };
  const helpRss: Record<Variant, number[]> = { shipped: [], tsx: [] };
  for (let i = 0; i < rounds; i++) {
    for (const v of ['shipped', 'tsx'] as const) {
      help[v].push(helpRun(v).ms);
      helpRss[v].push(peakRssMb(v));
    }
  }
  const schema = await createBenchSchema('startup');
  const idle: Record<Variant, number[]> = { shipped: [], tsx: [] };
  try {
    let port = 18_700 + Math.floor(Math.random() * 200);
    for (let i = 0; i < (process.env.BENCH_QUICK ? 1 : 3); i++) {
      for (const v of ['shipped', 'tsx'] as const) idle[v].push(await idleWorkerRss(v, schema.url, port++));
    }
  } finally {
    await schema.drop();
  }
  const nodeBare = median(
    Array.from({ length: rounds }, () => {
      const t = process.hrtime.bigint();
      spawnSync(process.execPath, ['-e', '0']);
      return Number(process.hrtime.bigint() - t) / 1e6;
    }),
  );
  // The embedded default (`npm start`, no DATABASE_URL) as the same section's second half.
  const embedded = await runEmbeddedStartBench();
  const f = (n: number) => n.toFixed(0);
  const rows = [
    ['measure', 'shipped (node dist/)', 'same sources under tsx (how the bin ran before)', 'ratio'],
    ['`hookrelay --help` wall, ms (median)', f(median(help.shipped)), f(median(help.tsx)), (median(help.shipped) / median(help.tsx)).toFixed(2)],
    ['`hookrelay --help` peak RSS, MB', f(median(helpRss.shipped)), f(median(helpRss.tsx)), (median(helpRss.shipped) / median(helpRss.tsx)).toFixed(2)],
    ['idle worker RSS, MB (3 s after ready)', f(median(idle.shipped)), f(median(idle.tsx)), (median(idle.shipped) / median(idle.tsx)).toFixed(2)],
    ['bare `node -e 0`, ms', f(nodeBare), '', ''],
    ...embedded.rows,
  ];
  return {
    rows,
    summary: {
      help_ms: Math.round(median(help.shipped)),
      help_ms_tsx: Math.round(median(help.tsx)),
      help_rss_mb: Math.round(median(helpRss.shipped)),
      idle_worker_rss_mb: Math.round(median(idle.shipped)),
      idle_worker_rss_mb_tsx: Math.round(median(idle.tsx)),
      ...embedded.summary,
    },
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { printTable } = await import('./support.ts');
  const { rows, summary } = await runStartupBench();
  printTable(rows);
  console.log(JSON.stringify(summary));
  process.exit(0);
}
