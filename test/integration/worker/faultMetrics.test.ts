/**
 * FAULT-metrics (Q13): what an operator alerts on during an outage, read from the worker's own
 * /metrics. An in-process worker reaches Redis or Postgres through a TCP proxy on 127.0.0.1 (the
 * shared servers are never touched): cut → hookrelay_dependency_up{dependency} 0, restore → 1 and
 * hookrelay_dependency_outage_seconds_total grew; with a delivery in flight during a Postgres cut,
 * hookrelay_ledger_writes_waiting counts its held outcome, then 0 once it is written.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../../../src/store/db.ts';
import type { DeliveryService } from '../../../src/worker/service.ts';
import { startReceiver, type Receiver } from '../../support/receiver.ts';
import { startTcpProxy, type TcpProxy } from '../../support/tcpProxy.ts';
import { createStack, fetchHook, TEST_REDIS_URL, waitFor, type Stack } from '../queue/harness.ts';

/** One sample of a metric from Prometheus text (`name{labels} value`); undefined when absent. */
function sample(text: string, name: string, labels = ''): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name}${labels} `));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

describe('FAULT-metrics: dependency gauges, outage time and outcomes waiting (Q13)', () => {
  let stack: Stack;
  let rx: Receiver;
  let redisProxy: TcpProxy;
  let pgProxy: TcpProxy;
  let proxiedStore: Store;
  let worker: DeliveryService;

  beforeAll(async () => {
    stack = await createStack('fault_metrics');
    rx = await startReceiver({ status: 200 });
    redisProxy = await startTcpProxy(Number(new URL(TEST_REDIS_URL).port || 6379));
    pgProxy = await startTcpProxy(Number(new URL(stack.db.url).port || 5432));
    proxiedStore = await openStore({ databaseUrl: pgProxy.url(stack.db.url) });
    // No periodic reconciler pass during the tests here: what waits for Postgres is the attempt's own writes.
    worker = await stack.startWorker(
      { REDIS_URL: redisProxy.url(TEST_REDIS_URL), HOOKRELAY_CONCURRENCY: '4', HOOKRELAY_RECONCILE_INTERVAL_MS: '60000' },
      { store: proxiedStore },
    );
  });
  afterAll(async () => {
    await redisProxy?.restore();
    await pgProxy?.restore();
    await stack?.cleanup();
    await proxiedStore?.close().catch(() => undefined);
    await redisProxy?.close();
    await pgProxy?.close();
    await rx?.close();
  });

  // A scrape answers at once during an outage (it used to wait for Redis): 5 s is a generous bound.
  const metrics = async (of = worker) => (await fetch(`http://127.0.0.1:${of.httpPort}/metrics`, { signal: AbortSignal.timeout(5_000) })).text();
  const up = async (dependency: string, of = worker) => sample(await metrics(of), 'hookrelay_dependency_up', `{dependency="${dependency}"}`);
  const outage = async (dependency: string) => sample(await metrics(), 'hookrelay_dependency_outage_seconds_total', `{dependency="${dependency}"}`);
  const waiting = async () => sample(await metrics(), 'hookrelay_ledger_writes_waiting');

  it('FAULT-metrics redis: cut → hookrelay_dependency_up{redis} 0 and outage seconds growing; restore → 1, the outage counted (Q13)', async () => {
    expect(await up('redis')).toBe(1);
    expect(await up('postgres')).toBe(1);
    const before = (await outage('redis')) ?? Number.NaN;
    expect(before).toBe(0);

    await redisProxy.cut();
    let during: number;
    try {
      await waitFor(async () => (await up('redis')) === 0, 10_000, 'redis reported down');
      expect(await up('postgres')).toBe(1);
      during = (await outage('redis')) ?? 0;
      await waitFor(async () => ((await outage('redis')) ?? 0) > during, 5_000, 'outage seconds grow while redis is away');
    } finally {
      await redisProxy.restore();
    }
    await waitFor(async () => (await up('redis')) === 1, 15_000, 'redis reported up again');
    const after = (await outage('redis')) ?? 0;
    expect(after).toBeGreaterThan(during);
    // The counter stops growing once Redis is back: the outage is over, its time kept.
    await new Promise((r) => setTimeout(r, 300));
    expect(await outage('redis')).toBe(after);
    expect(await outage('postgres')).toBe(0);
  }, 30_000);

  it('FAULT-metrics postgres: a delivery in flight during a cut → dependency_up{postgres} 0 and hookrelay_ledger_writes_waiting ≥ 1; restore → 1, 0 waiting, the outcome written (Q13)', async () => {
    rx.setHandler({ status: 200, delayMs: 1_500 });
    const before = rx.requests.length;
    const { deliveryIds } = await stack.producer.enqueue({
      operationId: 'op-fault-metrics-pg',
      type: 'onComplete',
      event: { n: 1 },
      hooks: [fetchHook('fault-metrics-pg', `${rx.url}/pg`)],
    });
    const id = deliveryIds[0]!;
    await waitFor(() => rx.requests.length > before, 10_000, 'the attempt under way');
    await pgProxy.cut();
    let during: number;
    try {
      // The attempt finishes while Postgres is away: its outcome waits in memory, counted.
      await waitFor(async () => ((await waiting()) ?? 0) >= 1, 10_000, 'an outcome waiting for Postgres');
      expect(await up('postgres')).toBe(0);
      during = (await outage('postgres')) ?? 0;
      expect(during).toBeGreaterThan(0);
      const { rows: held } = await stack.db.store.pool!.query<{ status: string }>('select status from deliveries where id = $1', [id]);
      expect(held[0]?.status).not.toBe('delivered');
    } finally {
      await pgProxy.restore();
    }
    await waitFor(async () => (await up('postgres')) === 1, 15_000, 'postgres reported up again');
    await waitFor(async () => (await waiting()) === 0, 10_000, 'no outcome waiting');
    expect((await outage('postgres')) ?? 0).toBeGreaterThan(during);
    await waitFor(
      async () => {
        const { rows } = await stack.db.store.pool!.query<{ status: string }>('select status from deliveries where id = $1', [id]);
        return rows[0]?.status === 'delivered';
      },
      10_000,
      'the held outcome written',
    );
    expect(new Set(rx.requests.filter((r) => r.path === '/pg').map((r) => String(r.headers['webhook-id'])))).toEqual(new Set([id]));
  }, 30_000);

  it('FAULT-metrics postgres idle: a worker with nothing to deliver reports a Postgres cut too (its reconciler finds it away) → 0, restore → 1 (Q13)', async () => {
    const idleStore = await openStore({ databaseUrl: pgProxy.url(stack.db.url) });
    try {
      const idle = await stack.startWorker(
        { REDIS_URL: TEST_REDIS_URL, HOOKRELAY_CONCURRENCY: '4', HOOKRELAY_RECONCILE_INTERVAL_MS: '300' },
        { store: idleStore },
      );
      expect(await up('postgres', idle)).toBe(1);
      await pgProxy.cut();
      try {
        // Before, the gauge stayed 1 for as long as no delivery needed Postgres.
        await waitFor(async () => (await up('postgres', idle)) === 0, 10_000, 'postgres reported down by an idle worker');
      } finally {
        await pgProxy.restore();
      }
      await waitFor(async () => (await up('postgres', idle)) === 1, 15_000, 'postgres reported up again');
      expect(sample(await metrics(idle), 'hookrelay_dependency_outage_seconds_total', '{dependency="postgres"}') ?? 0).toBeGreaterThan(0);
      await idle.stop();
    } finally {
      await idleStore.close().catch(() => undefined);
    }
  }, 30_000);
});
