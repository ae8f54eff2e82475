/**
 * Endpoint isolation with the worker as a process (the bin, compiled dist): a hanging receiver
 * next to a healthy one, a breaker shared by two worker processes, and disable / enable / replay
 * through the CLI. Real Redis, Postgres and HTTP receivers on 127.0.0.1.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { endpointKey } from '../../src/contract/endpoint.ts';
import { createHookProducer } from '../../src/queue/producer.ts';
import { setEndpointLimits } from '../../src/store/endpointsRepo.ts';
import type { HookProducer } from '../../src/queue/types.ts';
import { TEST_REDIS_URL, waitFor } from '../integration/queue/harness.ts';
import { createTestStore, type TestStore } from '../support/db.ts';
import { ROOT, spawnWorker, type HookrelayProcess } from '../support/hookrelayProcess.ts';
import { startReceiver, type Receiver } from '../support/receiver.ts';
import { deleteKeys, queueKeys } from '../support/redisKeys.ts';

const BIN = path.join(ROOT, 'bin/hookrelay.mjs');

/** Accepts every request and never answers; counts them; close() destroys the open sockets. */
async function startHangingReceiver(): Promise<{ url: string; requests: () => number; close(): Promise<void> }> {
  let requests = 0;
  const sockets = new Set<Socket>();
  const server = http.createServer(() => {
    requests += 1;
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests: () => requests,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

function workerEnv(db: TestStore, queue: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    DATABASE_URL: db.url,
    REDIS_URL: TEST_REDIS_URL,
    HOOKRELAY_QUEUE: queue,
    HOOKRELAY_HTTP_PORT: '0',
    HOOKRELAY_ALLOWED_CIDRS: '127.0.0.0/8',
    HOOKRELAY_RECONCILE_INTERVAL_MS: '1000',
    HOOKRELAY_SHUTDOWN_TIMEOUT_MS: '1000',
    ...extra,
  };
}

type Run = { code: number | null; stdout: string; stderr: string };

function cli(args: string[], env: Record<string, string>): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d));
    child.stderr.on('data', (d: Buffer) => (stderr += d));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Log lines (pino JSON) of a worker whose msg matches. */
function logLines(worker: HookrelayProcess, msg: RegExp): { time: number; msg: string; [k: string]: unknown }[] {
  return worker
    .output()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => {
      try {
        return JSON.parse(l) as { time: number; msg: string };
      } catch {
        return undefined;
      }
    })
    .filter((l): l is { time: number; msg: string } => l !== undefined && msg.test(l.msg));
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

describe('endpoints: isolation with the worker as a process', () => {
  let db: TestStore;
  let producer: HookProducer;
  let queue: string;
  const workers: HookrelayProcess[] = [];

  beforeAll(async () => {
    db = await createTestStore('e2e_endpoints');
  });
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.stop('SIGKILL')));
    await producer?.close();
    if (queue) await deleteKeys(queueKeys(queue));
    await db.store.pool!.query('delete from deliveries; delete from endpoints');
  });
  afterAll(async () => {
    await db.cleanup();
  });

  const newQueue = () => {
    queue = `e2e-ep-${randomBytes(4).toString('hex')}`;
    producer = createHookProducer({ store: db.store, redisUrl: TEST_REDIS_URL, queueName: queue, env: {} });
  };

  it('endpoints: 400 events for a hanging endpoint (timeout 5 s) do not delay 100 for a healthy one — healthy p99 ≤ 2 s; deferred jobs record no attempt', async () => {
    newQueue();
    const hanging = await startHangingReceiver();
    const arrivals = new Map<string, number>();
    const healthy: Receiver = await startReceiver((req) => {
      arrivals.set(String(req.headers['webhook-id']), Date.now());
      return { status: 200 };
    });
    try {
      // N3: a 5 s timeout counts against an endpoint only when its floor says 5 s is long enough
      // for it (the default floor is the default 30 s timeout): the operator says so.
      await setEndpointLimits(db.store.db, endpointKey({ url: `${hanging.url}/hook` }), { timeoutFloorMs: 5_000 });
      // Default concurrency (64) and default isolation settings: what a user runs.
      const worker = spawnWorker(workerEnv(db, queue));
      workers.push(worker);
      await worker.ready();
      await producer.enqueueMany(
        Array.from({ length: 400 }, (_, i) => ({
          operationId: `op-hang-${i}`,
          type: 'onComplete' as const,
          event: { i },
          hooks: [{ id: 'hang', type: 'onComplete' as const, webhook: { url: `${hanging.url}/hook`, timeout: 5 } }],
        })),
      );
      const enqueuedAt = Date.now();
      const { deliveryIds } = await producer.enqueueMany(
        Array.from({ length: 100 }, (_, i) => ({
          operationId: `op-ok-${i}`,
          type: 'onComplete' as const,
          event: { i },
          hooks: [{ id: 'ok', type: 'onComplete' as const, webhook: { url: `${healthy.url}/hook` } }],
        })),
      );
      await waitFor(() => deliveryIds.every((id) => arrivals.has(id)), 20_000, 'every healthy event received');
      const latencies = deliveryIds.map((id) => arrivals.get(id)! - enqueuedAt).sort((a, b) => a - b);
      expect(percentile(latencies, 99)).toBeLessThanOrEqual(2_000);

      // The hanging endpoint held at most its adaptive limit's start (4) at once (issue 27; the
      // fixed cap was 16); its attempts time out at 5 s, each failure halves the limit, and the
      // breaker opens after 5 consecutive failures: from then on nothing goes out.
      await waitFor(() => logLines(worker, /endpoint circuit opened/).length === 1, 15_000, 'the breaker opens');
      const sent = hanging.requests();
      expect(sent).toBeGreaterThanOrEqual(5);
      expect(sent).toBeLessThanOrEqual(4 + 5);
      const attempts = async () => {
        const r = await db.store.pool!.query<{ n: number; untouched: number; total: number }>(
          `select coalesce(sum(attempt_count), 0)::int as n, count(*) filter (where attempt_count = 0)::int as untouched, count(*)::int as total
             from deliveries where hook_id = 'hang'`,
        );
        return r.rows[0]!;
      };
      // Every request the receiver saw is one recorded attempt, and only those: deferrals record nothing.
      await waitFor(async () => (await attempts()).n === hanging.requests(), 10_000, 'each attempt sent is recorded');
      const ledger = await attempts();
      expect(ledger.total).toBe(400);
      expect(ledger.n).toBe(hanging.requests());
      expect(ledger.untouched).toBe(400 - ledger.n);
      // None of them is lost: every row is still waiting (not failed, not delivered).
      const statuses = await db.store.pool!.query<{ status: string }>(`select distinct status from deliveries where hook_id = 'hang'`);
      for (const { status } of statuses.rows) expect(['queued', 'retrying', 'in_flight']).toContain(status);
      const delivered = await db.store.pool!.query<{ n: number }>(`select count(*)::int as n from deliveries where hook_id = 'ok' and status = 'delivered'`);
      expect(delivered.rows[0]!.n).toBe(100);
    } finally {
      await hanging.close();
      await healthy.close();
    }
  }, 60_000);

  it('endpoints: breaker open → half-open → closed against a receiver that fails then recovers, shared by two worker processes', async () => {
    newQueue();
    let failing = true;
    const times: number[] = [];
    const rx = await startReceiver(() => {
      times.push(Date.now());
      return { status: failing ? 503 : 200 };
    });
    try {
      const env = workerEnv(db, queue, {
        HOOKRELAY_BREAKER_FAILURES: '3',
        HOOKRELAY_BREAKER_COOLDOWN_MS: '1500',
        HOOKRELAY_RETRY_SCHEDULE: '0.2,0.2,0.2,0.2,0.2,0.2,0.2,0.2,0.2,0.2,0.2,0.2',
        HOOKRELAY_CONCURRENCY: '4',
      });
      const a = spawnWorker(env);
      const b = spawnWorker(env);
      workers.push(a, b);
      await Promise.all([a.ready(), b.ready()]);
      const { deliveryIds } = await producer.enqueueMany(
        Array.from({ length: 20 }, (_, i) => ({
          operationId: `op-br-${i}`,
          type: 'onComplete' as const,
          event: { i },
          hooks: [{ id: 'br', type: 'onComplete' as const, webhook: { url: `${rx.url}/flaky` } }],
        })),
      );
      const opened = () => [...logLines(a, /endpoint circuit opened/), ...logLines(b, /endpoint circuit opened/)];
      await waitFor(() => opened().length >= 1, 15_000, 'the breaker opens');
      const openedAt = Math.min(...opened().map((l) => l.time));
      failing = false;

      await waitFor(
        async () => {
          const r = await db.store.pool!.query<{ n: number }>(`select count(*)::int as n from deliveries where status = 'delivered'`);
          return r.rows[0]!.n === deliveryIds.length;
        },
        30_000,
        'every event delivered after recovery',
      );

      const halfOpen = [...logLines(a, /endpoint circuit half-open/), ...logLines(b, /endpoint circuit half-open/)];
      const closed = [...logLines(a, /endpoint circuit closed/), ...logLines(b, /endpoint circuit closed/)];
      // One shared breaker: each open period ends with exactly one probe (half-open), whichever
      // process took it, and it closed once.
      expect(closed).toHaveLength(1);
      expect(halfOpen.length).toBe(opened().length);
      const firstProbe = Math.min(...halfOpen.map((l) => l.time));
      expect(firstProbe - openedAt).toBeGreaterThanOrEqual(1_400);
      // While open, neither process sent anything (attempts that were already under way may land within a few ms).
      const duringOpen = times.filter((t) => t > openedAt + 100 && t < firstProbe - 50);
      expect(duringOpen).toHaveLength(0);
    } finally {
      await rx.close();
    }
  }, 60_000);

  it('endpoints: disable / enable through the CLI — deliveries held, then replayed with the same webhook-id', async () => {
    newQueue();
    const ids = new Map<string, number>();
    const rx = await startReceiver((req) => {
      const id = String(req.headers['webhook-id']);
      ids.set(id, (ids.get(id) ?? 0) + 1);
      return { status: 200 };
    });
    try {
      const env = workerEnv(db, queue);
      const key = `${rx.url}/held`;
      const disabled = await cli(['endpoints', 'disable', key, '--reason', 'maintenance', '--json'], env);
      expect(disabled.code).toBe(0);
      expect(JSON.parse(disabled.stdout)).toMatchObject({ key, disabled: true, changed: true, reason: 'maintenance' });

      const worker = spawnWorker(env);
      workers.push(worker);
      await worker.ready();
      const { deliveryIds } = await producer.enqueueMany(
        Array.from({ length: 5 }, (_, i) => ({
          operationId: `op-held-${i}`,
          type: 'onComplete' as const,
          event: { i },
          hooks: [{ id: 'held', type: 'onComplete' as const, webhook: { url: `${key}?token=query-is-not-part-of-the-key` } }],
        })),
      );
      await waitFor(
        async () => {
          const r = await db.store.pool!.query<{ n: number }>(`select count(*)::int as n from deliveries where status = 'held' and attempt_count = 0`);
          return r.rows[0]!.n === 5;
        },
        15_000,
        'the deliveries are held',
      );
      expect(rx.requests).toHaveLength(0);

      const list = await cli(['endpoints', 'list', '--json'], env);
      expect(list.code).toBe(0);
      const row = (JSON.parse(list.stdout) as { key: string; state: string; held: number; disabledBy: string }[]).find((e) => e.key === key);
      expect(row).toMatchObject({ state: 'disabled', held: 5, disabledBy: 'operator' });
      const table = await cli(['endpoints', 'list'], env);
      expect(table.stdout).toMatch(/ENDPOINT\s+STATE/);
      expect(table.stdout).toContain(key);

      const limited = await cli(['endpoints', 'limit', key, '--concurrency', '3', '--rate', '2.5', '--json'], env);
      expect(limited.code).toBe(0);
      expect(JSON.parse(limited.stdout)).toEqual({ key, tenant: '*', timeoutFloorMs: null, concurrency: 3, ownConcurrency: 3, rateLimit: 2.5 });
      const badRate = await cli(['endpoints', 'limit', key, '--rate', 'fast'], env);
      expect(badRate.code).toBe(2);
      expect(badRate.stderr).toMatch(/--rate must be a number/);
      const cleared = await cli(['endpoints', 'limit', key, '--concurrency', 'default', '--rate', 'none', '--json'], env);
      // Issue 27: the default is no fixed cap (0), the adaptive limit alone.
      expect(JSON.parse(cleared.stdout)).toEqual({ key, tenant: '*', timeoutFloorMs: null, concurrency: 0, ownConcurrency: null, rateLimit: null });

      const missing = await cli(['endpoints', 'show', 'https://nowhere.example/none'], env);
      expect(missing.code).toBe(2);
      expect(missing.stderr).toMatch(/no endpoint/);

      const enabled = await cli(['endpoints', 'enable', key, '--replay', '--json'], env);
      expect(enabled.code).toBe(0);
      expect(JSON.parse(enabled.stdout)).toMatchObject({ replayed: 5 });
      await waitFor(() => deliveryIds.every((id) => ids.has(id)), 15_000, 'every held delivery replayed');
      // Same delivery id = same webhook-id, each sent once.
      for (const id of deliveryIds) expect(ids.get(id)).toBe(1);
      const shown = await cli(['endpoints', 'show', key, '--json'], env);
      expect(shown.code).toBe(0);
      await waitFor(
        async () => {
          const r = await db.store.pool!.query<{ n: number }>(`select count(*)::int as n from deliveries where status = 'delivered'`);
          return r.rows[0]!.n === 5;
        },
        10_000,
        'rows delivered',
      );
      const after = JSON.parse((await cli(['endpoints', 'show', key, '--json'], env)).stdout) as { state: string; deliveries: Record<string, number> };
      expect(after.state).toBe('closed');
      expect(after.deliveries).toEqual({ delivered: 5 });
    } finally {
      await rx.close();
    }
  }, 60_000);
});
