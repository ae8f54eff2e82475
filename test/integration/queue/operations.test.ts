import net from 'node:net';
import { Writable } from 'node:stream';
import { randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/observability/logger.ts';
import { openStore } from '../../../src/store/db.ts';
import { TEST_DATABASE_URL } from '../../support/db.ts';
import { startReceiver, type Receiver } from '../../support/receiver.ts';
import { createStack, fetchHook, waitFor, type Stack } from './harness.ts';
import { withApplicationName } from '../../../src/worker/startDeliveryWorker.ts';

type Rows<T> = { rows: T[] };

describe('worker operations: HTTP server, retention, Postgres outages', () => {
  let stack: Stack;
  let rx: Receiver;

  beforeAll(async () => {
    stack = await createStack('ops');
    rx = await startReceiver({ status: 200 });
  });
  afterAll(async () => {
    await stack.cleanup();
    await rx.close();
  });

  it('/healthz, /readyz and /metrics answer on HOOKRELAY_HTTP_PORT=0 (any free port)', async () => {
    const worker = await stack.startWorker();
    // Stopped whatever happens: a worker left running would touch the next tests' rows.
    try {
      expect(worker.httpPort).toBeGreaterThan(0);
      const base = `http://127.0.0.1:${worker.httpPort}`;
      expect((await fetch(`${base}/healthz`)).status).toBe(200);
      const ready = await fetch(`${base}/readyz`);
      expect(ready.status).toBe(200);
      // F1: the local spools' figures ride along (they never decide readiness).
      expect(await ready.json()).toMatchObject({ ready: true, checks: { redis: true, postgres: true }, spool: { events: expect.any(Number) } });
      const { deliveryIds } = await stack.producer.enqueue({ operationId: 'op-m', type: 'onComplete', event: {}, hooks: [fetchHook('m', `${rx.url}/m`)] });
      await waitFor(async () => (await stack.producer.getDelivery(deliveryIds[0] as string))?.status === 'delivered');
      // The counters move right after the ledger write the status check above saw: poll for them.
      let metrics = '';
      await waitFor(async () => {
        metrics = await (await fetch(`${base}/metrics`)).text();
        return /hookrelay_deliveries_total\{outcome="delivered",transport="fetch"\} [1-9]/.test(metrics);
      });
      expect(metrics).toMatch(/hookrelay_delivery_attempts_total\{outcome="delivered",transport="fetch"\} [1-9]/);
      expect(metrics).toMatch(/# HELP hookrelay_delivery_attempts_total Delivery attempts, every try counted \(retries included\)/);
      expect(metrics).toMatch(/hookrelay_deliveries_total\{outcome="delivered",transport="fetch"\} [1-9]/);
      expect(metrics).toMatch(/hookrelay_ledger_rows\{status="delivered"\} [1-9]/);
      expect(metrics).toMatch(/hookrelay_ledger_rows\{status="failed"\} 0/);
      expect(metrics).toMatch(/hookrelay_oldest_undelivered_age_seconds \d/);
      // Standard process metric names (stock dashboards), no hookrelay_ prefix on them.
      expect(metrics).toMatch(/^process_cpu_seconds_total /m);
      expect(metrics).toMatch(/^nodejs_eventloop_lag_seconds /m);
      expect(metrics).not.toMatch(/hookrelay_process_|hookrelay_nodejs_/);
      // HELP texts speak to operators: no specification rule ids.
      for (const help of metrics.split('\n').filter((l) => l.startsWith('# HELP hookrelay_'))) expect(help).not.toMatch(/\([A-Z]\d+[a-z]?\)|§/);
      expect(metrics).toMatch(/hookrelay_attempt_duration_seconds_bucket/);
      expect(metrics).toMatch(/hookrelay_queue_jobs\{state="waiting"\} 0/);
      expect(metrics).toMatch(/hookrelay_reconciled_total/);
      expect(metrics).toMatch(/hookrelay_critical_failures_total 0/);
      expect((await fetch(`${base}/nope`)).status).toBe(404);
    } finally {
      await worker.stop();
    }
  });

  it('a busy HTTP port is logged and delivery goes on', async () => {
    const blocker = net.createServer();
    await new Promise<void>((resolve) => blocker.listen(0, resolve));
    const port = (blocker.address() as net.AddressInfo).port;
    let logged = '';
    const logger = createLogger({
      level: 'info',
      destination: new Writable({
        write: (chunk: Buffer, _enc, cb) => {
          logged += chunk.toString();
          cb();
        },
      }),
    });
    try {
      const worker = await stack.startWorker({ HOOKRELAY_HTTP_PORT: String(port) }, { logger });
      expect(worker.httpPort).toBeUndefined();
      expect(logged).toMatch(/could not listen/);
      expect(logged).toMatch(/EADDRINUSE/);
      const { deliveryIds } = await stack.producer.enqueue({
        operationId: 'op-busy',
        type: 'onComplete',
        event: {},
        hooks: [fetchHook('b', `${rx.url}/busy`)],
      });
      await waitFor(async () => (await stack.producer.getDelivery(deliveryIds[0] as string))?.status === 'delivered');
      await worker.stop();
    } finally {
      blocker.close();
    }
  });

  it('Q11: retention prunes payload and attempts of old finished rows; delivered rows keep their metadata; pending rows are untouched', async () => {
    const worker = await stack.startWorker();
    const done = await stack.producer.enqueue({
      operationId: 'op-old',
      type: 'onComplete',
      event: { secret: 'payload' },
      hooks: [fetchHook('r', `${rx.url}/old`)],
    });
    const id = done.deliveryIds[0] as string;
    await waitFor(async () => (await stack.producer.getDelivery(id))?.status === 'delivered');
    await worker.stop();
    const pending = await stack.producer.enqueue({
      operationId: 'op-pending',
      type: 'onComplete',
      event: { keep: true },
      hooks: [fetchHook('p', `${rx.url}/pending`)],
    });
    const pendingId = pending.deliveryIds[0] as string;
    await stack.db.store.db.execute(sql`update deliveries set created_at = now() - interval '31 days' where id in (${id}, ${pendingId})`);

    const pruned = await worker.retention.runOnce();
    expect(pruned).toBe(1);
    const rows = (await stack.db.store.db.execute(
      sql`select id, status, payload, attempts, attempt_count, delivered_at from deliveries where id in (${id}, ${pendingId})`,
    )) as unknown as Rows<{
      id: string;
      status: string;
      payload: unknown;
      attempts: unknown[];
      attempt_count: number;
      delivered_at: Date | null;
    }>;
    const old = rows.rows.find((r) => r.id === id);
    expect(old).toMatchObject({ status: 'delivered', payload: null, attempts: [], attempt_count: 1 });
    expect(old?.delivered_at).not.toBeNull();
    expect(rows.rows.find((r) => r.id === pendingId)?.payload).toEqual({ keep: true, operationId: 'op-pending' });
  });

  it('Q11: with HOOKRELAY_RETENTION_DELETE_DAYS, finished rows older than it are deleted outright (delivered and failed), younger finished rows only lose payload past HOOKRELAY_RETENTION_DAYS, pending rows stay whole', async () => {
    const worker = await stack.startWorker({ HOOKRELAY_RETENTION_DAYS: '30', HOOKRELAY_RETENTION_DELETE_DAYS: '90', HOOKRELAY_RETRY_SCHEDULE: '0' });
    const ids = async (op: string, url: string) =>
      (await stack.producer.enqueue({ operationId: op, type: 'onComplete', event: { op }, hooks: [fetchHook(op, url)] })).deliveryIds[0] as string;
    const ancient = await ids('op-ancient', `${rx.url}/ancient`);
    const ancientFailed = await ids('op-ancient-failed', 'http://127.0.0.1:9/refused');
    const old = await ids('op-old2', `${rx.url}/old2`);
    await waitFor(async () => {
      const [a, f, o] = await Promise.all([ancient, ancientFailed, old].map((id) => stack.producer.getDelivery(id)));
      return a?.status === 'delivered' && f?.status === 'failed' && o?.status === 'delivered';
    });
    await worker.stop();
    const pending = await ids('op-pending2', `${rx.url}/pending2`);
    await stack.db.store.db.execute(sql`update deliveries set created_at = now() - interval '91 days' where id in (${ancient}, ${ancientFailed}, ${pending})`);
    await stack.db.store.db.execute(sql`update deliveries set created_at = now() - interval '31 days' where id = ${old}`);

    await worker.retention.runOnce();
    const rows = (await stack.db.store.db.execute(
      sql`select id, status, payload from deliveries where id in (${ancient}, ${ancientFailed}, ${old}, ${pending})`,
    )) as unknown as Rows<{ id: string; status: string; payload: unknown }>;
    const byId = new Map(rows.rows.map((r) => [r.id, r]));
    expect(byId.has(ancient)).toBe(false);
    expect(byId.has(ancientFailed)).toBe(false);
    expect(byId.get(old)).toMatchObject({ status: 'delivered', payload: null });
    expect(byId.get(pending)).toMatchObject({ status: 'queued', payload: { op: 'op-pending2', operationId: 'op-pending2' } });
    const metrics = await worker.metrics.registry.metrics();
    expect(metrics).toMatch(/hookrelay_retention_deleted_total 2/);
  });

  it('Q2: the worker’s Postgres connections terminated mid-run → it pauses, reconnects, and nothing is lost or acknowledged unrecorded', async () => {
    const appName = `hr_ops_${randomBytes(4).toString('hex')}`;
    const workerStore = await openStore({ databaseUrl: withApplicationName(stack.db.url, appName), maxConnections: 10, onPoolError: () => undefined });
    const admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
    await admin.connect();
    try {
      const worker = await stack.startWorker({ HOOKRELAY_CONCURRENCY: '16' }, { store: workerStore });
      const N = 600;
      const { deliveryIds } = await stack.producer.enqueueMany(
        Array.from({ length: N }, (_, i) => ({
          operationId: `op-pg-${i}`,
          type: 'onComplete' as const,
          event: { i },
          hooks: [fetchHook('pg', `${rx.url}/pg`)],
        })),
      );
      let kills = 0;
      for (let round = 0; round < 3; round += 1) {
        await new Promise((r) => setTimeout(r, 150));
        const res = await admin.query('select pg_terminate_backend(pid) from pg_stat_activity where application_name = $1', [appName]);
        kills += res.rowCount ?? 0;
      }
      expect(kills).toBeGreaterThan(0);
      await waitFor(
        async () => {
          const r = (await stack.db.store.db.execute(
            sql`select count(*)::int as n from deliveries where id = any(${sql.param(deliveryIds)}::text[]) and status = 'delivered'`,
          )) as unknown as Rows<{ n: number }>;
          return r.rows[0]?.n === N;
        },
        30_000,
        'all deliveries recorded',
      );
      const ids = new Set(rx.requests.filter((r) => r.path === '/pg').map((r) => r.headers['webhook-id'] as string));
      expect(ids.size).toBe(N);
      await worker.stop();
    } finally {
      await admin.end();
      await workerStore.close().catch(() => undefined);
    }
  });
});
