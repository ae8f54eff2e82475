/**
 * FAULT- stop cases (Q9, Q13): a worker process whose Redis or Postgres is cut (through a TCP
 * proxy on 127.0.0.1; the shared servers are never touched) still ends within its shutdown bound
 * on SIGTERM, its exit code and last log line say whether the stop was clean, and what it could
 * not finish is left in the ledger for the next worker. Before, a worker whose Redis was away
 * was still running 91 s after SIGTERM (BullMQ's close waited on Redis without a limit).
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHookProducer } from '../../src/queue/producer.ts';
import type { HookProducer } from '../../src/queue/types.ts';
import { createTestStore, type TestStore } from '../support/db.ts';
import { startReceiver, type Receiver } from '../support/receiver.ts';
import { waitFor } from '../integration/queue/harness.ts';
import { spawnWorker, type HookrelayProcess } from '../support/hookrelayProcess.ts';
import { deleteKeys, queueKeys, TEST_REDIS_URL } from '../support/redisKeys.ts';
import { startTcpProxy, type TcpProxy } from '../support/tcpProxy.ts';

const BOUND_MS = 4_000;
/** Q9: what a stop may take past the bound (the close steps together) plus process start-up slack. */
const SLACK_MS = 7_000;
const EVENTS = 12;

type Line = { msg?: string; level?: number; [k: string]: unknown };
const logLines = (p: HookrelayProcess): Line[] =>
  p
    .output()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Line);

describe('FAULT- stop means stop, whatever Redis and Postgres do (Q9, Q13)', () => {
  let db: TestStore;
  let rx: Receiver;
  let redisProxy: TcpProxy;
  let pgProxy: TcpProxy;
  const queues: string[] = [];

  beforeAll(async () => {
    db = await createTestStore('fault_stop');
    rx = await startReceiver({ status: 200 });
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

  const env = (queue: string, through: boolean): Record<string, string> => ({
    DATABASE_URL: through ? pgProxy.url(db.url) : db.url,
    REDIS_URL: through ? redisProxy.url(TEST_REDIS_URL) : TEST_REDIS_URL,
    HOOKRELAY_QUEUE: queue,
    HOOKRELAY_HTTP_PORT: '0',
    HOOKRELAY_ALLOWED_CIDRS: '127.0.0.0/8',
    HOOKRELAY_CONCURRENCY: '4',
    HOOKRELAY_LOCK_DURATION_MS: '2000',
    HOOKRELAY_STALLED_INTERVAL_MS: '1000',
    HOOKRELAY_RECONCILE_INTERVAL_MS: '1000',
    HOOKRELAY_SHUTDOWN_TIMEOUT_MS: String(BOUND_MS),
    HOOKRELAY_MIGRATE: 'false',
  });

  /** Enqueues EVENTS to a slow receiver, starts a worker through the proxies, waits until attempts are under way. */
  async function drainingWorker(name: string): Promise<{ queue: string; producer: HookProducer; ids: string[]; worker: HookrelayProcess }> {
    const queue = `fault-stop-${name}-${randomBytes(3).toString('hex')}`;
    queues.push(queue);
    const producer = createHookProducer({ store: db.store, redisUrl: TEST_REDIS_URL, queueName: queue });
    const { deliveryIds } = await producer.enqueueMany(
      Array.from({ length: EVENTS }, (_, i) => ({
        operationId: `op-${name}-${i}`,
        type: 'onComplete' as const,
        event: { i },
        hooks: [{ id: name, type: 'onComplete' as const, webhook: { url: `${rx.url}/${name}` } }],
      })),
    );
    const before = rx.requests.length;
    const worker = spawnWorker(env(queue, true));
    await worker.ready();
    await waitFor(() => rx.requests.length - before >= 2, 15_000, 'attempts under way');
    return { queue, producer, ids: deliveryIds, worker };
  }

  /** A second worker on direct connections delivers every id; duplicates repeat a known webhook-id (Q1). */
  async function allDeliveredAfter(queue: string, ids: string[], name: string): Promise<void> {
    rx.setHandler({ status: 200 });
    const second = spawnWorker(env(queue, false));
    try {
      await second.ready();
      await waitFor(
        async () => {
          const { rows } = await db.store.pool!.query<{ n: string }>(`select count(*) as n from deliveries where status = 'delivered' and id = any($1)`, [ids]);
          return Number(rows[0]?.n) === ids.length;
        },
        45_000,
        'every delivery delivered by the next worker',
      );
    } finally {
      await second.stop();
    }
    const seen = rx.requests.filter((r) => r.path === `/${name}`).map((r) => String(r.headers['webhook-id']));
    expect(new Set(seen)).toEqual(new Set(ids));
  }

  it('FAULT-stop-redis: SIGTERM with Redis cut mid-drain → exit within the bound, exit 0 and the stopped line naming Redis; the next worker delivers all (Q9, Q13)', async () => {
    rx.setHandler({ status: 200, delayMs: 1_000 });
    const { queue, producer, ids, worker } = await drainingWorker('redis');
    try {
      await redisProxy.cut();
      expect(await worker.waitForOutput(/"msg":"redis is unreachable/, 10_000)).toBe(true);
      const signalledAt = Date.now();
      const code = await worker.stop('SIGTERM');
      expect(Date.now() - signalledAt).toBeLessThan(BOUND_MS + SLACK_MS);
      const lines = logLines(worker);
      const last = lines.at(-1);
      // The attempts under way finished and their outcomes were written to Postgres (up): a clean stop.
      expect(code, worker.output()).toBe(0);
      expect(last?.msg).toMatch(/^stopped: \d+ in-flight deliveries drained, ledger flushed; redis unreachable at stop$/);
      expect(lines.filter((l) => String(l.msg).startsWith('redis is unreachable'))).toHaveLength(1);
    } finally {
      worker.kill();
      await redisProxy.restore();
      await producer.close();
    }
    await allDeliveredAfter(queue, ids, 'redis');
  }, 90_000);

  it('FAULT-stop-postgres: SIGTERM with Postgres cut mid-drain → exit within the bound, exit 1 and a stopped-uncleanly line; the rows stay for the reconciler and the next worker delivers all (Q9, Q13)', async () => {
    rx.setHandler({ status: 200, delayMs: 1_000 });
    const { queue, producer, ids, worker } = await drainingWorker('pg');
    try {
      await pgProxy.cut();
      expect(await worker.waitForOutput(/"msg":"postgres is unreachable/, 10_000)).toBe(true);
      const signalledAt = Date.now();
      const code = await worker.stop('SIGTERM');
      expect(Date.now() - signalledAt).toBeLessThan(BOUND_MS + SLACK_MS);
      const last = logLines(worker).at(-1);
      // Outcomes of attempts that finished while Postgres was away could not be written: not clean.
      expect(code, worker.output()).toBe(1);
      expect(last?.msg).toMatch(/^stopped uncleanly: .* cut off at the 4000 ms bound .*reconciler re-enqueues them.*postgres unreachable at stop$/);
      // Nothing was recorded as failed: the rows wait for the reconciler.
      const { rows } = await db.store.pool!.query<{ n: string }>(`select count(*) as n from deliveries where status = 'failed' and id = any($1)`, [ids]);
      expect(Number(rows[0]?.n)).toBe(0);
    } finally {
      worker.kill();
      await pgProxy.restore();
      await producer.close();
    }
    await allDeliveredAfter(queue, ids, 'pg');
  }, 90_000);
});
