/** Shared pieces of the delivery benchmarks: schema, Redis cleanup, the receiver process, stats. */
import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { Redis } from 'ioredis';
import pg from 'pg';

export const BENCH_DATABASE_URL = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
/** A Redis db index of its own; only keys under the bench prefix are ever deleted. */
export const BENCH_REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379/11';
export const BENCH_PREFIX = 'hrbench';

export type BenchSchema = { url: string; schema: string; drop(): Promise<void> };

export async function createBenchSchema(name: string): Promise<BenchSchema> {
  const schema = `bench_${name}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: BENCH_DATABASE_URL });
  await admin.connect();
  await admin.query(`CREATE SCHEMA "${schema}"`);
  await admin.end();
  const url = new URL(BENCH_DATABASE_URL);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return {
    url: url.toString(),
    schema,
    async drop() {
      const c = new pg.Client({ connectionString: BENCH_DATABASE_URL });
      await c.connect();
      await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await c.end();
    },
  };
}

export async function deleteBenchKeys(redisUrl = BENCH_REDIS_URL): Promise<void> {
  const redis = new Redis(redisUrl);
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${BENCH_PREFIX}:*`, 'COUNT', 5000);
    cursor = next;
    if (keys.length) await redis.del(...keys);
  } while (cursor !== '0');
  redis.disconnect();
}

export type ReceiverProcess = { url: string; reset(): Promise<void>; stats(): Promise<{ count: number; latencies: number[] }>; close(): void };

export async function startReceiverProcess(): Promise<ReceiverProcess> {
  const child: ChildProcess = fork(path.join(import.meta.dirname, 'receiverProcess.ts'), [], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const port = await new Promise<number>((resolve) => child.once('message', (m: { port: number }) => resolve(m.port)));
  const ask = <T>(cmd: string) =>
    new Promise<T>((resolve) => {
      child.once('message', (m: T) => resolve(m));
      child.send({ cmd });
    });
  return {
    url: `http://127.0.0.1:${port}`,
    reset: async () => {
      await ask('reset');
    },
    stats: () => ask('stats'),
    close: () => child.kill('SIGTERM'),
  };
}

export function median(values: readonly number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? (s[mid] ?? 0) : ((s[mid - 1] ?? 0) + (s[mid] ?? 0)) / 2;
}

export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))] ?? Number.NaN;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** A ~1 KiB JSON-able payload. */
export function kibPayload(i: number): { i: number; blob: string } {
  return { i, blob: 'x'.repeat(1000) };
}

export function uniqueName(kind: string): string {
  return `${kind}-${randomBytes(3).toString('hex')}`;
}

export function printTable(rows: string[][]): void {
  const header = rows[0] ?? [];
  const widths = header.map((_, c) => Math.max(...rows.map((r) => (r[c] ?? '').length)));
  const line = (r: string[]) => `| ${r.map((cell, c) => cell.padEnd(widths[c] ?? 0)).join(' | ')} |`;
  console.log(line(header));
  console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
  for (const r of rows.slice(1)) console.log(line(r));
}
