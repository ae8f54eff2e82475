/**
 * FAULT-enqueue (Q2, Q13, F1): a producer's enqueue never hangs a request handler. With Redis cut it
 * returns once the ledger row is committed (`queued: false`, within its queue timeout; the
 * reconciler adds the job later); with Postgres cut it spools the event (`spooled: true`, drained
 * into the ledger with the same id when Postgres answers) or, with the spool off, fails within its
 * store timeout with an EventNotAcceptedError whose cause names the store. Through a TCP proxy;
 * the shared servers stay up.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHookProducer } from '../../../src/queue/producer.ts';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { EventNotAcceptedError, StoreUnavailableError } from '../../../src/contract/errors.ts';
import { createTestStore, type TestStore } from '../../support/db.ts';
import { deleteKeys, queueKeys, TEST_REDIS_URL } from '../../support/redisKeys.ts';
import { startTcpProxy, type TcpProxy } from '../../support/tcpProxy.ts';

const QUEUE_TIMEOUT_MS = 1_000;
const STORE_TIMEOUT_MS = 2_000;
/** A generous bound: the call answers within its timeout plus scheduling slack, never "eventually". */
const SLACK_MS = 3_000;

const event = (i: number) => ({
  operationId: `op-outage-${i}`,
  type: 'onComplete' as const,
  event: { i },
  hooks: [{ id: 'h', type: 'onComplete' as const, webhook: { url: 'https://example.com/hook' } }],
});

describe('FAULT-enqueue during an outage (Q2, Q13)', () => {
  let db: TestStore;
  let redisProxy: TcpProxy;
  let pgProxy: TcpProxy;
  const queue = `fault-enqueue-${randomBytes(3).toString('hex')}`;
  beforeAll(async () => {
    db = await createTestStore('fault_enqueue');
    redisProxy = await startTcpProxy(Number(new URL(TEST_REDIS_URL).port || 6379));
    pgProxy = await startTcpProxy(Number(new URL(db.url).port || 5432));
  });
  afterAll(async () => {
    await redisProxy.close();
    await pgProxy.close();
    await deleteKeys(queueKeys(queue));
    await db.cleanup();
  });

  it('FAULT-enqueue-redis: Redis cut → ids returned with queued:false within the queue timeout, the row committed; close() returns (Q2, Q13)', async () => {
    const producer = createHookProducer({ store: db.store, redisUrl: redisProxy.url(TEST_REDIS_URL), queueName: queue, queueTimeoutMs: QUEUE_TIMEOUT_MS });
    await producer.enqueue(event(0)); // connected once, then the outage
    await redisProxy.cut();
    try {
      const started = Date.now();
      const result = await producer.enqueue(event(1));
      expect(Date.now() - started).toBeLessThan(QUEUE_TIMEOUT_MS + SLACK_MS);
      expect(result.queued).toBe(false);
      expect(result.deliveryIds).toHaveLength(1);
      expect((await producer.getDelivery(result.deliveryIds[0]!))?.status).toBe('queued');
      const closing = Date.now();
      await producer.close();
      expect(Date.now() - closing).toBeLessThan(5_000 + SLACK_MS);
    } finally {
      await redisProxy.restore();
    }
  });

  it('FAULT-enqueue-postgres (F1, Q13): Postgres cut → the event is spooled within the store timeout (spooled: true) and stored with its id once Postgres answers; close() returns', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'hookrelay-fault-spool-'));
    const producer = createHookProducer({
      databaseUrl: pgProxy.url(db.url),
      redisUrl: TEST_REDIS_URL,
      queueName: queue,
      storeTimeoutMs: STORE_TIMEOUT_MS,
      spool: { dir },
    });
    try {
      await producer.enqueue(event(2));
      await pgProxy.cut();
      const started = Date.now();
      const result = await producer.enqueue(event(3));
      expect(Date.now() - started).toBeLessThan(STORE_TIMEOUT_MS + SLACK_MS);
      expect(result).toMatchObject({ queued: false, spooled: true });
      expect(producer.spoolStatus()?.events).toBe(1);
      await pgProxy.restore();
      const id = result.deliveryIds[0]!;
      const deadline = Date.now() + 15_000;
      while ((await producer.getDelivery(id).catch(() => undefined)) === undefined && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      expect((await producer.getDelivery(id))?.operationId).toBe('op-outage-3');
      const closing = Date.now();
      await producer.close();
      expect(Date.now() - closing).toBeLessThan(10_000 + SLACK_MS);
    } finally {
      await pgProxy.restore();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('FAULT-enqueue-postgres-nospool (F1, Q13): Postgres cut with the spool off → EventNotAcceptedError (spool_off) within the store timeout, its cause naming the store; close() returns', async () => {
    const producer = createHookProducer({
      databaseUrl: pgProxy.url(db.url),
      redisUrl: TEST_REDIS_URL,
      queueName: queue,
      storeTimeoutMs: STORE_TIMEOUT_MS,
      spool: false,
    });
    await producer.enqueue(event(4));
    await pgProxy.cut();
    try {
      const started = Date.now();
      const error = await producer.enqueue(event(5)).catch((e: unknown) => e);
      expect(Date.now() - started).toBeLessThan(STORE_TIMEOUT_MS + SLACK_MS);
      expect(error).toBeInstanceOf(EventNotAcceptedError);
      expect((error as EventNotAcceptedError).code).toBe('HOOKRELAY_EVENT_NOT_ACCEPTED');
      expect((error as EventNotAcceptedError).reason).toBe('spool_off');
      expect((error as EventNotAcceptedError).cause).toBeInstanceOf(StoreUnavailableError);
      expect(((error as EventNotAcceptedError).cause as Error).message).toMatch(
        /^the ledger store \(Postgres at DATABASE_URL\) (is unreachable|did not answer)/,
      );
      const closing = Date.now();
      await producer.close();
      expect(Date.now() - closing).toBeLessThan(10_000 + SLACK_MS);
    } finally {
      await pgProxy.restore();
    }
  });
});
