/**
 * The embedded default as a user meets it: `npm start` (no DATABASE_URL) in an empty folder.
 * Spawns the shipped bin with the V8 flags of package.json's "start" script, cwd a fresh temp
 * folder (so `.hookrelay/pgdata` is created there), REDIS_URL the local Redis with a queue of its
 * own; measures the wall time from spawn to the `ready` log line and VmRSS 10 s after it, for a
 * first start (initdb + migrations) and a second start on the same folder; rounds → median/min/max.
 *
 *   npx tsx bench/embeddedStart.ts          (BENCH_QUICK=1: one round; EMBEDDED_IDLE_MS to change the 10 s;
 *                                            WORKER_ROOT=<checkout, built> measures another build)
 *   BENCH_ONLY=startup npm run bench        (the `startup` section's embedded rows)
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { BENCH_REDIS_URL } from './support.ts';

const here = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
/** The checkout whose bin and package.json flags are measured: `WORKER_ROOT=<checkout>` for a before/after. */
const root = process.env.WORKER_ROOT ? path.resolve(process.env.WORKER_ROOT) : here;
const IDLE_MS = Number(process.env.EMBEDDED_IDLE_MS ?? 10_000);
const READY = /"msg":"ready"/;

/** The node flags of `npm start`, read from package.json so the bench follows them. */
export function startFlags(): string[] {
  const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { scripts: { start: string } };
  return pkg.scripts.start.split(/\s+/).filter((t) => t.startsWith('--'));
}

type Memory = { rssMb: number; anonMb: number; fileMb: number };

function memoryOf(pid: number): Memory {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (key: string) => Number(new RegExp(`${key}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
  return { rssMb: kb('VmRSS') / 1024, anonMb: kb('RssAnon') / 1024, fileMb: kb('RssFile') / 1024 };
}

export type EmbeddedStartRun = { readyMs: number } & Memory;

/** One `npm start` in `cwd`: time to ready, memory after IDLE_MS idle, then SIGTERM (exit awaited). */
export async function embeddedStartOnce(cwd: string, queue: string): Promise<EmbeddedStartRun> {
  const env: NodeJS.ProcessEnv = { ...process.env, REDIS_URL: BENCH_REDIS_URL, HOOKRELAY_QUEUE: queue, HOOKRELAY_HTTP_PORT: '0', LOG_LEVEL: 'info' };
  delete env.DATABASE_URL;
  delete env.HOOKRELAY_DATA_DIR;
  const started = process.hrtime.bigint();
  const child = spawn(process.execPath, [...startFlags(), path.join(root, 'bin/hookrelay.mjs'), 'start'], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  try {
    const readyMs = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`not ready within 60 s:\n${output}`)), 60_000);
      const onData = (d: Buffer) => {
        output += d.toString();
        if (READY.test(output)) {
          clearTimeout(timer);
          resolve(Number(process.hrtime.bigint() - started) / 1e6);
        }
      };
      child.stdout.on('data', onData);
      child.stderr.on('data', onData);
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`exited ${code} before ready:\n${output}`));
      });
    });
    await new Promise((r) => setTimeout(r, IDLE_MS));
    return { readyMs, ...memoryOf(child.pid!) };
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
}

async function dropQueue(queue: string): Promise<void> {
  const redis = new Redis(BENCH_REDIS_URL);
  try {
    const keys = await redis.keys(`bull:${queue}:*`);
    if (keys.length > 0) await redis.del(...keys);
  } finally {
    redis.disconnect();
  }
}

const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return { median: s[Math.floor(s.length / 2)]!, min: s[0]!, max: s[s.length - 1]! };
};

export async function runEmbeddedStartBench(): Promise<{ rows: string[][]; summary: Record<string, number> }> {
  const rounds = process.env.BENCH_QUICK ? 1 : 3;
  const first: EmbeddedStartRun[] = [];
  const second: EmbeddedStartRun[] = [];
  for (let i = 0; i < rounds; i++) {
    const cwd = mkdtempSync(path.join(tmpdir(), 'hookrelay-embedded-bench-'));
    const queue = `embedded-start-${process.pid}-${i}`;
    try {
      first.push(await embeddedStartOnce(cwd, queue));
      second.push(await embeddedStartOnce(cwd, queue));
    } finally {
      rmSync(cwd, { recursive: true, force: true });
      await dropQueue(queue);
    }
  }
  const fmt = (xs: number[]) => {
    const s = stats(xs);
    return `${s.median.toFixed(0)} (${s.min.toFixed(0)}–${s.max.toFixed(0)})`;
  };
  const idle = `${(IDLE_MS / 1000).toFixed(0)} s`;
  const rows = [
    [`\`npm start\`, empty folder, ${rounds} round(s): median (min–max)`, 'first start (new folder)', 'second start (same folder)', 'target'],
    ['spawn → `ready`, ms', fmt(first.map((r) => r.readyMs)), fmt(second.map((r) => r.readyMs)), '≤ 3,000 (first)'],
    [`RSS ${idle} after ready, MB`, fmt(first.map((r) => r.rssMb)), fmt(second.map((r) => r.rssMb)), '≤ 300'],
    ['  of which anonymous (heap, WASM memory), MB', fmt(first.map((r) => r.anonMb)), fmt(second.map((r) => r.anonMb)), ''],
    ['  of which file-backed (code, mapped files), MB', fmt(first.map((r) => r.fileMb)), fmt(second.map((r) => r.fileMb)), ''],
  ];
  return {
    rows,
    summary: {
      embedded_first_ready_ms: Math.round(stats(first.map((r) => r.readyMs)).median),
      embedded_first_rss_mb: Math.round(stats(first.map((r) => r.rssMb)).median),
      embedded_second_ready_ms: Math.round(stats(second.map((r) => r.readyMs)).median),
      embedded_second_rss_mb: Math.round(stats(second.map((r) => r.rssMb)).median),
    },
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { printTable } = await import('./support.ts');
  const { rows, summary } = await runEmbeddedStartBench();
  printTable(rows);
  console.log(JSON.stringify(summary));
  process.exit(0);
}
