/**
 * Issue 25 / Q3 / Q4 with the worker as a process on DEFAULT settings (isolation on, breaker,
 * default reconcile interval) and `HOOKRELAY_RETRY_SCHEDULE=1,1`: the retry schedule is a promise
 * in time. Four endpoints run side by side in one worker:
 *  A — 300 deliveries to a receiver answering 503: all `failed` by their deadline, then
 *      `replay --status failed --yes` with the receiver back delivers each once, same webhook-id;
 *  B — a breaker already open for the whole schedule: its deliveries fail at the deadline with
 *      reason `circuit_open`, and the receiver saw only the half-open probes;
 *  C — `fallback: 'none'` to a disabled endpoint: a critical failure, recorded, counted, logged;
 *  D — the same with `endpoints disable --hold`: held, no deadline, no failure until the operator acts.
 * Real Redis, Postgres, HTTP receivers on 127.0.0.1, the compiled bin.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deadlineBudgetMs } from '../../src/notify/retryPolicy.ts';
import { createHookProducer } from '../../src/queue/producer.ts';
import type { HookProducer } from '../../src/queue/types.ts';
import { TEST_REDIS_URL, waitFor } from '../integration/queue/harness.ts';
import { createTestStore, type TestStore } from '../support/db.ts';
import { ROOT, spawnWorker, type HookrelayProcess } from '../support/hookrelayProcess.ts';
import { startReceiver, type Receiver } from '../support/receiver.ts';
import { deleteKeys, queueKeys } from '../support/redisKeys.ts';

const BIN = path.join(ROOT, 'bin/hookrelay.mjs');
const SCHEDULE = '1,1';
/** deadline = first attempt (or first wait) + 2 s × 1.2 + 30 s (docs/delivery.md). */
const BUDGET_MS = deadlineBudgetMs([1, 1]);

type Run = { code: number | null; stdout: string; stderr: string };
type Row = {
  id: string;
  status: string;
  last_error_class: string | null;
  failure_reason: string | null;
  attempt_count: number;
  deadline_at: Date | null;
  created_at: Date;
  operation_id: string;
};

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

function logLines(worker: HookrelayProcess): { level: number; msg: string; [k: string]: unknown }[] {
  return worker
    .output()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .flatMap((l) => {
      try {
        return [JSON.parse(l) as { level: number; msg: string }];
      } catch {
        return [];
      }
    });
}

describe('Q3/Q4 (issue 25): on default settings a down receiver’s deliveries still end failed on schedule, and critical failures surface', () => {
  let db: TestStore;
  let producer: HookProducer;
  let worker: HookrelayProcess;
  let httpPort: number;
  const queue = `e2e-deadline-${randomBytes(4).toString('hex')}`;
  let a: Receiver;
  let b: Receiver;
  let c: Receiver;
  let d: Receiver;
  let aUp = false;
  const aOk = new Map<string, number>();
  let idsA: string[] = [];
  let idsB: string[] = [];
  let idsC: string[] = [];
  let idsD: string[] = [];

  const env = (): Record<string, string> => ({
    DATABASE_URL: db.url,
    REDIS_URL: TEST_REDIS_URL,
    HOOKRELAY_QUEUE: queue,
    HOOKRELAY_ALLOWED_CIDRS: '127.0.0.0/8',
    HOOKRELAY_RETRY_SCHEDULE: SCHEDULE,
    HOOKRELAY_HTTP_PORT: String(httpPort),
    HOOKRELAY_SHUTDOWN_TIMEOUT_MS: '1000',
  });
  const cli = (args: string[]): Promise<Run> =>
    new Promise((resolve) => {
      const child = spawn(process.execPath, [BIN, ...args], {
        cwd: ROOT,
        env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', LOG_LEVEL: 'warn', ...env() },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (x: Buffer) => (stdout += x));
      child.stderr.on('data', (x: Buffer) => (stderr += x));
      child.on('exit', (code) => resolve({ code, stdout, stderr }));
    });
  const rows = async (ids: readonly string[]): Promise<Row[]> =>
    (
      await db.store.pool!.query<Row>(
        'select id, status, last_error_class, failure_reason, attempt_count, deadline_at, created_at, operation_id from deliveries where id = any($1) order by id',
        [ids],
      )
    ).rows;
  const allStatus = async (ids: readonly string[], status: string) => (await rows(ids)).every((r) => r.status === status);
  const enqueue = async (prefix: string, n: number, hook: Record<string, unknown>) =>
    (
      await producer.enqueueMany(
        Array.from({ length: n }, (_, i) => ({
          operationId: `${prefix}-${i}`,
          type: 'onComplete' as const,
          event: { operationId: `${prefix}-${i}` },
          hooks: [hook as never],
        })),
      )
    ).deliveryIds;

  beforeAll(async () => {
    db = await createTestStore('e2e_deadline');
    httpPort = await freePort();
    a = await startReceiver((req) => {
      if (!aUp) return { status: 503 };
      const id = String(req.headers['webhook-id']);
      aOk.set(id, (aOk.get(id) ?? 0) + 1);
      return { status: 204 };
    });
    b = await startReceiver({ status: 503 });
    c = await startReceiver({ status: 204 });
    d = await startReceiver({ status: 204 });
    producer = createHookProducer({ store: db.store, redisUrl: TEST_REDIS_URL, queueName: queue, env: {} });
    worker = spawnWorker(env());
    await waitFor(() => logLines(worker).some((l) => l.msg === 'ready'), 30_000, 'the worker to be ready');

    // C and D are disabled before anything is sent to them; D with --hold.
    expect((await cli(['endpoints', 'disable', `${c.url}/hook`, '--reason', 'down for maintenance'])).code).toBe(0);
    const held = await cli(['endpoints', 'disable', `${d.url}/hook`, '--hold', '--reason', 'keep everything']);
    expect(held.code).toBe(0);
    expect(held.stdout).toContain('--hold');
    // Workers re-read endpoint policies every 2 s (docs/delivery.md): wait until this one sees both disabled.
    await waitFor(
      async () => /hookrelay_endpoint_state\{state="disabled"\} 2\b/.test(await (await fetch(`http://127.0.0.1:${httpPort}/metrics`)).text()),
      30_000,
      'the worker to see C and D disabled',
    );

    // B's breaker opens first (5 consecutive failures), then its victims are enqueued behind it.
    const trips = await enqueue('b-trip', 8, { id: 'trip', type: 'onComplete', webhook: { url: `${b.url}/hook` } });
    await waitFor(
      () => logLines(worker).some((l) => l.msg.startsWith('endpoint circuit opened') && l.endpoint === `${b.url}/hook`),
      30_000,
      'B’s breaker to open',
    );
    expect(trips).toHaveLength(8);
    b.requests.length = 0;

    [idsA, idsB, idsC, idsD] = await Promise.all([
      enqueue('a', 300, { id: 'receiver', type: 'onComplete', webhook: { url: `${a.url}/hook` } }),
      enqueue('b', 20, { id: 'victim', type: 'onComplete', webhook: { url: `${b.url}/hook` } }),
      enqueue('c', 3, { id: 'critical', type: 'onComplete', webhook: { url: `${c.url}/hook`, fallback: 'none' } }),
      enqueue('d', 3, { id: 'critical-held', type: 'onComplete', webhook: { url: `${d.url}/hook`, fallback: 'none' } }),
    ]);
  }, 120_000);

  afterAll(async () => {
    await worker?.stop('SIGTERM');
    await producer?.close();
    await Promise.all([a, b, c, d].map((r) => r?.close()));
    await deleteKeys(queueKeys(queue));
    await db?.cleanup();
  }, 60_000);

  it('Q3: 300 deliveries to a 503 receiver (schedule 1,1, isolation on) are all failed within the deadline; replay with the receiver back delivers each once with the same webhook-id', async () => {
    // Bounded by the deadline budget plus one reconcile interval and start-up: "within deadline + slack".
    await waitFor(() => allStatus(idsA, 'failed'), BUDGET_MS + 30_000, 'all 300 failed');
    const failed = await rows(idsA);
    expect(failed).toHaveLength(300);
    for (const r of failed) {
      expect(r.deadline_at).not.toBeNull();
      // The clock started when the worker first took it (moments after enqueue), never later than the budget allows.
      expect(r.deadline_at!.getTime() - r.created_at.getTime()).toBeLessThanOrEqual(BUDGET_MS + 15_000);
      expect(['circuit_open', 'http_error']).toContain(r.failure_reason);
      expect(r.last_error_class).toBe(r.failure_reason);
    }
    // The breaker protected the receiver: most were never sent.
    expect(failed.filter((r) => r.failure_reason === 'circuit_open').length).toBeGreaterThan(250);
    expect(a.requests.length).toBeLessThan(60);

    const listed = await cli(['deliveries', 'list', '--status', 'failed', '--endpoint', `${a.url}/hook`, '--limit', '1000', '--json']);
    expect(listed.code).toBe(0);
    expect((JSON.parse(listed.stdout) as unknown[]).length).toBe(300);

    aUp = true;
    const run = await cli(['replay', '--status', 'failed', '--endpoint', `${a.url}/hook`, '--yes']);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout.trim().split('\n').at(-1)).toBe('replayed 300, skipped 0, failed 0');
    await waitFor(() => allStatus(idsA, 'delivered'), 120_000, 'all 300 delivered');
    expect(new Set(aOk.keys())).toEqual(new Set(idsA));
    expect([...aOk.values()].every((n) => n === 1)).toBe(true);
  }, 240_000);

  it('Q3: a breaker open during the whole schedule → failed at the deadline with reason circuit_open; the receiver saw only the half-open probes', async () => {
    await waitFor(() => allStatus(idsB, 'failed'), BUDGET_MS + 30_000, 'B’s victims failed');
    const victims = await rows(idsB);
    const attempted = victims.filter((r) => r.attempt_count > 0);
    const probes = logLines(worker).filter((l) => l.msg.startsWith('endpoint circuit half-open') && l.endpoint === `${b.url}/hook`).length;
    const victimHits = b.requests.filter((r) => idsB.includes(String(r.headers['webhook-id']))).length;
    // Every request the receiver saw for them was a half-open probe (one per cooldown end).
    expect(victimHits).toBe(attempted.reduce((n, r) => n + r.attempt_count, 0));
    expect(victimHits).toBeLessThanOrEqual(probes);
    expect(victims.filter((r) => r.failure_reason === 'circuit_open').length).toBeGreaterThanOrEqual(20 - victimHits);
    for (const r of victims.filter((v) => v.attempt_count === 0)) {
      expect(r.failure_reason).toBe('circuit_open');
      expect(r.last_error_class).toBe('circuit_open');
      expect(r.deadline_at).not.toBeNull();
    }
  }, 120_000);

  it('Q4: fallback none to a disabled endpoint → a critical failure, recorded on its operation, in deliveries list --critical, counted and logged at error level; --hold keeps its deliveries held with no failure until the operator acts', async () => {
    // Held first (with a deadline), then failed there by the reconciler.
    await waitFor(() => allStatus(idsC, 'failed'), BUDGET_MS + 45_000, 'C’s critical deliveries failed');
    const critical = await rows(idsC);
    for (const r of critical) {
      expect(r.last_error_class).toBe('CriticalHookDeliveryError');
      expect(r.failure_reason).toBe('endpoint_disabled');
      expect(r.attempt_count).toBe(0);
    }
    const ops = await db.store.pool!.query<{ id: string; critical_delivery_failure: boolean }>(
      'select id, critical_delivery_failure from operations where id = any($1)',
      [critical.map((r) => r.operation_id)],
    );
    expect(ops.rows).toHaveLength(3);
    expect(ops.rows.every((o) => o.critical_delivery_failure)).toBe(true);
    expect(c.requests).toHaveLength(0);

    const listed = await cli(['deliveries', 'list', '--critical', '--json']);
    expect(listed.code).toBe(0);
    expect((JSON.parse(listed.stdout) as { id: string }[]).map((x) => x.id).sort()).toEqual([...idsC].sort());

    const metrics = await (await fetch(`http://127.0.0.1:${httpPort}/metrics`)).text();
    expect(metrics).toMatch(/^hookrelay_critical_failures_total 3$/m);
    const errors = logLines(worker).filter((l) => l.level >= 50 && typeof l.deliveryId === 'string' && idsC.includes(l.deliveryId));
    expect(new Set(errors.map((l) => l.deliveryId))).toEqual(new Set(idsC));

    // D (--hold): still held, no deadline, no flag, shown as hold — past C's deadline and sweeps.
    const kept = await rows(idsD);
    expect(kept.every((r) => r.status === 'held' && r.deadline_at === null && r.attempt_count === 0)).toBe(true);
    const flagged = await db.store.pool!.query('select 1 from operations where id = any($1) and critical_delivery_failure', [kept.map((r) => r.operation_id)]);
    expect(flagged.rows).toHaveLength(0);
    const endpoints = JSON.parse((await cli(['endpoints', 'list', '--json'])).stdout) as { key: string; state: string; hold: boolean; held: number }[];
    expect(endpoints.find((e) => e.key === `${d.url}/hook`)).toMatchObject({ state: 'disabled', hold: true, held: 3 });
    expect(endpoints.find((e) => e.key === `${c.url}/hook`)).toMatchObject({ state: 'disabled', hold: false });
    expect((await cli(['endpoints', 'list'])).stdout).toContain('disabled (hold)');

    // The operator acts: enable and replay — delivered, still never flagged.
    const enabled = await cli(['endpoints', 'enable', `${d.url}/hook`, '--replay']);
    expect(enabled.code).toBe(0);
    await waitFor(() => allStatus(idsD, 'delivered'), 60_000, 'D delivered after enable --replay');
    expect(new Set(d.requests.map((r) => String(r.headers['webhook-id'])))).toEqual(new Set(idsD));
  }, 180_000);
});
