/**
 * The worker as users run it: `node <heap flags> bin/hookrelay.mjs worker` (compiled dist/, plain
 * node), one process per call, configured only through its environment.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { BENCH_REDIS_URL, sleep } from './support.ts';

/** The V8 flags of the bin's shebang, `npm start` and the Dockerfile. */
export const WORKER_NODE_FLAGS = ['--max-semi-space-size=16', '--max-old-space-size=384'];
const root = path.resolve(import.meta.dirname, '..');

export type WorkerProcess = { pid: number; peakRssMb(): number; cpuMs(): number; stop(): Promise<void> };

export async function startWorkerProcess(opts: {
  databaseUrl: string;
  queueName: string;
  concurrency: number;
  env?: Record<string, string>;
  nodeFlags?: string[];
  /** `tsx`: the same sources through the tsx loader (how the bin ran before the package build), for a before/after figure. */
  variant?: 'shipped' | 'tsx';
  /** Another checkout's build (a before/after figure); default this one. */
  root?: string;
}): Promise<WorkerProcess> {
  // Issue 27: the worker as installed — nothing set but the connection URLs, the queue and
  // HOOKRELAY_CONCURRENCY (plus what a row adds through `env`, labelled by that row).
  const base = opts.root ?? root;
  const entry = opts.variant === 'tsx' ? ['--import', 'tsx', path.join(base, 'bench/tsxCli.mjs')] : [path.join(base, 'bin/hookrelay.mjs')];
  const child = spawn(process.execPath, [...WORKER_NODE_FLAGS, ...(opts.nodeFlags ?? []), ...entry, 'worker'], {
    cwd: base,
    env: {
      PATH: process.env.PATH ?? '',
      DATABASE_URL: opts.databaseUrl,
      REDIS_URL: BENCH_REDIS_URL,
      HOOKRELAY_QUEUE: opts.queueName,
      HOOKRELAY_CONCURRENCY: String(opts.concurrency),
      HOOKRELAY_ALLOWED_CIDRS: '127.0.0.0/8',
      HOOKRELAY_HTTP_PORT: '0',
      LOG_LEVEL: 'warn',
      ...opts.env,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await sleep(50);
  if (child.exitCode !== null) throw new Error(`worker process exited at once (${child.exitCode})`);
  return {
    pid: child.pid!,
    peakRssMb() {
      try {
        const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'));
        return hwm ? Number(hwm[1]) / 1024 : Number.NaN;
      } catch {
        return Number.NaN;
      }
    },
    /** CPU time (user + system) the process used so far: a cost figure less noisy than throughput on a shared machine. */
    cpuMs() {
      try {
        // Fields after the parenthesised name: utime and stime are the 12th and 13th, in clock ticks (100 per second).
        const fields = readFileSync(`/proc/${child.pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
        return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
      } catch {
        return Number.NaN;
      }
    },
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}
