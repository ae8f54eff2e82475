/**
 * FAULT- outages mid-drain (Q2, Q13): Redis, then Postgres, cut for 20 s through a TCP proxy in
 * front of the worker (the shared servers stay up) while it drains EVENTS deliveries. The worker
 * keeps running, logs the outage once each way, reports not ready meanwhile and ready after,
 * resumes by itself, and every delivery arrives; a second arrival only repeats its webhook-id.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHookProducer } from '../../src/queue/producer.ts';
import { createTestStore, type TestStore } from '../support/db.ts';
import { startReceiver, type Receiver } from '../support/receiver.ts';
import { waitFor } from '../integration/queue/harness.ts';
import { spawnWorker } from '../support/hookrelayProcess.ts';
import { deleteKeys, queueKeys, TEST_REDIS_URL } from '../support/redisKeys.ts';
import { startTcpProxy, type TcpProxy } from '../support/tcpProxy.ts';

const EVENTS = 1_000;
const OUTAGE_MS = 20_000;

describe('FAULT- outages mid-drain (Q2, Q13)', () => {
  let db: TestStore;
  let rx: Receiver;
  let redisProxy: TcpProxy;
  let pgProxy: TcpProxy;
  const queues: string[] = [];
  beforeAll(async () => {
    db = await createTestStore('fault_outage');
    rx = await startReceiver({ status: 200, delayMs: 20 });
    redisProxy = await startTcpProxy(Number(new URL(TEST_REDIS_URL).port || 6379));
    pgProxy = await startTcpProxy(Number(new URL(db.url).port || 5432));
  });
  afterAll(async () => {
    await redisProxy.close();
    await pgProxy.close();
    await rx.close();
    for (const q of queues) await deleteKeys(queueKeys(q));
    await db.cleanup();
  });

  async function drainThrough(dependency: 'redis' | 'postgres'): Promise<void> {
    const proxy = dependency === 'redis' ? redisProxy : pgProxy;
    const queue = `fault-outage-${dependency}-${randomBytes(3).toString('hex')}`;
    queues.push(queue);
    const path = `/${dependency}`;
    const producer = createHookProducer({ store: db.store, redisUrl: TEST_REDIS_URL, queueName: queue });
    const { deliveryIds } = await producer.enqueueMany(
      Array.from({ length: EVENTS }, (_, i) => ({
        operationId: `op-${dependency}-${i}`,
        type: 'onComplete' as const,
        event: { i },
        hooks: [{ id: dependency, type: 'onComplete' as const, webhook: { url: `${rx.url}${path}` } }],
      })),
    );
    await producer.close();
    const worker = spawnWorker({
      DATABASE_URL: pgProxy.url(db.url),
      REDIS_URL: redisProxy.url(TEST_REDIS_URL),
      HOOKRELAY_QUEUE: queue,
      HOOKRELAY_HTTP_PORT: '0',
      HOOKRELAY_ALLOWED_CIDRS: '127.0.0.0/8',
      HOOKRELAY_CONCURRENCY: '8',
      HOOKRELAY_LOCK_DURATION_MS: '5000',
      HOOKRELAY_STALLED_INTERVAL_MS: '2000',
      HOOKRELAY_RECONCILE_INTERVAL_MS: '1000',
      HOOKRELAY_MIGRATE: 'false',
    });
    const arrived = () => rx.requests.filter((r) => r.path === path);
    try {
      await worker.ready();
      const port = Number(/"httpPort":(\d+)/.exec(worker.output())?.[1]);
      const readyz = async () => (await fetch(`http://127.0.0.1:${port}/readyz`)).status;
      expect(await readyz()).toBe(200);
      await waitFor(() => arrived().length >= EVENTS / 5, 30_000, 'a fifth delivered');
      await proxy.cut();
      expect(await worker.waitForOutput(new RegExp(`"msg":"${dependency} is unreachable`), 15_000)).toBe(true);
      expect(await readyz()).toBe(503);
      await new Promise((r) => setTimeout(r, OUTAGE_MS));
      expect(arrived().length).toBeLessThan(EVENTS);
      expect(await readyz()).toBe(503);
      await proxy.restore();
      expect(await worker.waitForOutput(new RegExp(`"msg":"${dependency} answers again`), 20_000)).toBe(true);
      await waitFor(() => new Set(arrived().map((r) => String(r.headers['webhook-id']))).size === EVENTS, 40_000, 'every delivery arrived');
      expect(await readyz()).toBe(200);
      const ids = new Set(arrived().map((r) => String(r.headers['webhook-id'])));
      expect(ids).toEqual(new Set(deliveryIds));
      const msgs = worker.output().split('\n');
      expect(msgs.filter((l) => l.includes(`"msg":"${dependency} is unreachable`))).toHaveLength(1);
      expect(msgs.filter((l) => l.includes(`"msg":"${dependency} answers again`))).toHaveLength(1);
      expect(worker.child.exitCode).toBeNull();
    } finally {
      expect(await worker.stop('SIGTERM')).toBe(0);
    }
    const { rows } = await db.store.pool!.query<{ n: string }>(`select count(*) as n from deliveries where status = 'delivered' and id = any($1)`, [
      deliveryIds,
    ]);
    expect(Number(rows[0]?.n)).toBe(EVENTS);
  }

  it(`FAULT-redis-outage: ${EVENTS} deliveries, Redis cut for 20 s mid-drain → one line each way, not ready meanwhile, all delivered, duplicates only with the same webhook-id (Q2, Q13)`, async () => {
    await drainThrough('redis');
  }, 120_000);

  it(`FAULT-postgres-outage: ${EVENTS} deliveries, Postgres cut for 20 s mid-drain → deliveries pause, one line each way, not ready meanwhile, all delivered, no outcome lost (Q2, Q13)`, async () => {
    await drainThrough('postgres');
  }, 120_000);
});
