/**
 * The CLI in an operator's loop (issue 50): wall time of one whole `hookrelay` process per read
 * command — `--version`, `deliveries list`, `stats`, `endpoints list` (and `--help` for scale) —
 * on Postgres (DATABASE_URL, a bench schema) and on the embedded store (`hookrelay start`
 * running in a scratch folder, the CLI finding it through store.json), the bin run with plain
 * node as an operator runs it. Median (min–max) of repeated runs after one warm-up; target ≤ 300 ms.
 * `CLI_BEFORE_ROOT=<another checkout>` adds its figures beside (built: dist/ present) for a before/after.
 *   npx tsx bench/cliLatency.ts     (or BENCH_ONLY=cli npm run bench; BENCH_QUICK=1: 5 runs each)
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createHookProducer } from '../src/queue/producer.ts';
import { BENCH_REDIS_URL, createBenchSchema, median } from './support.ts';

const here = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const ROOTS: Array<{ label: string; root: string }> = [
  ...(process.env.CLI_BEFORE_ROOT ? [{ label: 'before', root: path.resolve(process.env.CLI_BEFORE_ROOT) }] : []),
  { label: process.env.CLI_BEFORE_ROOT ? 'after' : 'ms', root: here },
];
const RUNS = process.env.BENCH_QUICK === '1' ? 5 : 11;
const TARGET_MS = 300;
const COMMANDS: Array<{ label: string; args: string[]; store: boolean }> = [
  { label: '--version', args: ['--version'], store: false },
  { label: '--help', args: ['--help'], store: false },
  { label: 'deliveries list', args: ['deliveries', 'list'], store: true },
  { label: 'stats', args: ['stats'], store: true },
  { label: 'endpoints list', args: ['endpoints', 'list'], store: true },
];
const SEED_EVENTS = 200;

type Where = { label: string; cwd: string; env: NodeJS.ProcessEnv };

function runOnce(root: string, args: string[], where: Where): number {
  const started = process.hrtime.bigint();
  const r = spawnSync(process.execPath, [path.join(root, 'bin/hookrelay.mjs'), ...args], { cwd: where.cwd, env: where.env, encoding: 'utf8' });
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  if (r.status !== 0) throw new Error(`hookrelay ${args.join(' ')} (${where.label}, ${root}) exited ${r.status}: ${r.stderr}`);
  return ms;
}

/** Runs of each root interleaved (A B A B …) so drift of the machine hits both alike. */
function measure(args: string[], where: Where): Map<string, number[]> {
  const times = new Map(ROOTS.map((r) => [r.label, [] as number[]]));
  for (const { root } of ROOTS) runOnce(root, args, where); // warm-up: file cache, JIT of nothing
  for (let i = 0; i < RUNS; i++) for (const { label, root } of ROOTS) times.get(label)!.push(runOnce(root, args, where));
  return times;
}

async function seed(databaseUrl: string, queueName: string): Promise<void> {
  const producer = createHookProducer({ databaseUrl, redisUrl: BENCH_REDIS_URL, queueName, env: {} });
  try {
    const hooks = [{ id: 'cli-bench', type: 'onComplete' as const, webhook: { url: 'http://127.0.0.1:9/cli-bench' } }];
    await producer.enqueueMany(
      Array.from({ length: SEED_EVENTS }, (_, i) => ({ operationId: `op-cli-${i}`, type: 'onComplete' as const, event: { i }, hooks })),
    );
  } finally {
    await producer.close();
  }
}

/** `hookrelay start` in `cwd` until its `ready` line; resolves to a stop function. */
async function startEmbedded(cwd: string, env: NodeJS.ProcessEnv): Promise<() => Promise<void>> {
  const child = spawn(process.execPath, [path.join(here, 'bin/hookrelay.mjs'), 'start'], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let output = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`hookrelay start not ready within 60 s:\n${output}`)), 60_000);
    const onData = (d: Buffer) => {
      output += d.toString();
      if (/"msg":"ready"/.test(output)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`hookrelay start exited ${code} before ready:\n${output}`));
    });
  });
  return async () => {
    child.kill('SIGTERM');
    await exited;
  };
}

export async function runCliLatencyBench(): Promise<{ rows: string[][]; summary: Record<string, number> }> {
  const queueName = `cli-bench-${process.pid}`;
  const base: NodeJS.ProcessEnv = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? tmpdir(),
    REDIS_URL: BENCH_REDIS_URL,
    HOOKRELAY_QUEUE: queueName,
    LOG_LEVEL: 'warn',
  };
  const results: Array<{ store: string; command: string; times: Map<string, number[]> }> = [];

  const schema = await createBenchSchema('cli');
  const scratch = mkdtempSync(path.join(tmpdir(), 'hookrelay-cli-bench-'));
  let stopEmbedded: (() => Promise<void>) | undefined;
  try {
    // Postgres: a migrated bench schema with SEED_EVENTS deliveries (no worker: they stay queued).
    const pg: Where = { label: 'postgres', cwd: scratch, env: { ...base, DATABASE_URL: schema.url } };
    runOnce(here, ['migrate'], pg);
    await seed(schema.url, queueName);
    for (const c of COMMANDS) results.push({ store: c.store ? 'postgres' : '—', command: c.label, times: measure(c.args, pg) });

    // The embedded store: `hookrelay start` serving it on its socket, the CLI finding it through store.json.
    const embeddedCwd = path.join(scratch, 'embedded');
    const embeddedEnv: NodeJS.ProcessEnv = { ...base, HOOKRELAY_DATA_DIR: path.join(embeddedCwd, '.hookrelay'), HOOKRELAY_HTTP_PORT: '0' };
    spawnSync('mkdir', ['-p', embeddedCwd]);
    stopEmbedded = await startEmbedded(embeddedCwd, { ...embeddedEnv, LOG_LEVEL: 'info' }); // its `ready` line is info
    const discovery = JSON.parse(readFileSync(path.join(embeddedCwd, '.hookrelay/store.json'), 'utf8')) as { databaseUrl: string };
    await seed(discovery.databaseUrl, queueName);
    const embedded: Where = { label: 'embedded', cwd: embeddedCwd, env: embeddedEnv };
    for (const c of COMMANDS.filter((c) => c.store)) results.push({ store: 'embedded', command: c.label, times: measure(c.args, embedded) });
  } finally {
    await stopEmbedded?.();
    rmSync(scratch, { recursive: true, force: true });
    await schema.drop();
  }

  const cell = (xs: number[]) => `${median(xs).toFixed(0)} (${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)})`;
  const rows = [
    ['command', 'store', ...ROOTS.map((r) => `${r.label}: median (min–max) ms, ${RUNS} runs`), 'target'],
    ...results.map((r) => [r.command, r.store, ...ROOTS.map((root) => cell(r.times.get(root.label)!)), r.command === '--help' ? '' : `≤ ${TARGET_MS}`]),
  ];
  const last = ROOTS[ROOTS.length - 1]!.label;
  const key = (r: (typeof results)[number]) => `cli_${r.store === '—' ? '' : `${r.store}_`}${r.command.replace(/^--/, '').replace(/\s+/g, '_')}_ms`;
  return { rows, summary: Object.fromEntries(results.map((r) => [key(r), Math.round(median(r.times.get(last)!))])) };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { printTable } = await import('./support.ts');
  const { rows, summary } = await runCliLatencyBench();
  printTable(rows);
  console.log(JSON.stringify(summary));
  process.exit(0);
}
