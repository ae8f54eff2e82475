/**
 * CPU cost per delivery, read from /proc (Linux): a figure that stays comparable when a loaded,
 * shared machine moves the rates. Worker processes by pid; Postgres as the backends of the
 * connections the measured run opened (tagged with `application_name`, so other clients of the
 * same server are not counted; the WAL writer and checkpointer are not counted either); Redis as
 * the whole redis-server process (one server, shared: its idle cost and any other client's load
 * are included — compare rows of the same run).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { BENCH_DATABASE_URL } from './support.ts';

const TICKS_PER_SECOND = 100;

/** utime + stime of a process (all its threads), in ms; NaN when it is gone or unreadable. */
function processCpuMs(pid: number): number {
  try {
    // The fields after the parenthesised name: utime and stime are the 12th and 13th, in clock ticks.
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
  } catch {
    return Number.NaN;
  }
}

function redisServerPids(): number[] {
  try {
    return execFileSync('pgrep', ['-x', 'redis-server'], { encoding: 'utf8' }).split('\n').filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** Adds `application_name=<tag>` to a connection URL so the run's Postgres backends can be found. */
export function taggedUrl(databaseUrl: string, tag: string): string {
  const url = new URL(databaseUrl);
  url.searchParams.set('application_name', tag);
  return url.toString();
}

async function backendPids(tag: string): Promise<number[]> {
  const c = new pg.Client({ connectionString: BENCH_DATABASE_URL });
  await c.connect();
  try {
    const r = await c.query<{ pid: number }>('select pid from pg_stat_activity where application_name = $1', [tag]);
    return r.rows.map((row) => row.pid);
  } finally {
    await c.end();
  }
}

type Snapshot = { pg: Map<number, number>; redis: number; pids: Map<number, number>; self: NodeJS.CpuUsage };

/**
 * A CPU meter over one timed window: `start()` at the window's start, `stop()` at its end (before
 * any measured process exits). Backends opened inside the window count from zero.
 */
export function cpuMeter(opts: { pgTag: string; pids?: () => number[]; includeSelf?: boolean }) {
  const snap = async (): Promise<Snapshot> => {
    const pgPids = await backendPids(opts.pgTag);
    return {
      pg: new Map(pgPids.map((p) => [p, processCpuMs(p)])),
      redis: redisServerPids().reduce((s, p) => s + processCpuMs(p), 0),
      pids: new Map((opts.pids?.() ?? []).map((p) => [p, processCpuMs(p)])),
      self: process.cpuUsage(),
    };
  };
  let before: Snapshot | undefined;
  return {
    async start() {
      before = await snap();
    },
    /** CPU ms used in the window: the measured processes (`worker`), this process (`self`), Postgres backends, redis-server. */
    async stop(): Promise<{ workerMs: number; selfMs: number; pgMs: number; redisMs: number }> {
      const after = await snap();
      const b = before!;
      const delta = (a: Map<number, number>, z: Map<number, number>) => [...a].reduce((s, [p, ms]) => s + (Number.isFinite(ms) ? ms - (z.get(p) ?? 0) : 0), 0);
      const self = process.cpuUsage(b.self);
      return {
        workerMs: delta(after.pids, b.pids),
        selfMs: opts.includeSelf ? (self.user + self.system) / 1000 : 0,
        pgMs: delta(after.pg, b.pg),
        redisMs: after.redis - b.redis,
      };
    },
  };
}

export type CpuPerDelivery = { worker: number; pg: number; redis: number };

export function perDelivery(cpu: { workerMs: number; selfMs: number; pgMs: number; redisMs: number }, deliveries: number): CpuPerDelivery {
  return { worker: (cpu.workerMs + cpu.selfMs) / deliveries, pg: cpu.pgMs / deliveries, redis: cpu.redisMs / deliveries };
}
