/**
 * PERF-38 (issue 38): what the faster enqueue path stores and queues is what the old one did. A
 * single enqueue's INSERT runs as a prepared statement on the pool; the row's payload is the
 * event (serialized once); the job's body, built while Postgres stored the row, is byte for byte
 * what buildDeliveryBody makes of the event (as the producer built it before), and the same
 * document the worker builds from the ledger row for a job that carries none (jsonb keeps its own
 * key order, so that one is compared parsed).
 */
import { randomBytes } from 'node:crypto';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ParsedSerializedHook } from '../../../src/contract/hook.ts';
import { buildDeliveryBody } from '../../../src/notify/deliveryBody.ts';
import { createHookProducer } from '../../../src/queue/producer.ts';
import type { DeliveryJobData, HookProducer } from '../../../src/queue/types.ts';
import { openStore, type Store } from '../../../src/store/db.ts';
import { getDeliveryRow } from '../../../src/store/deliveriesRepo.ts';
import { createTestSchema, createTestStore, type TestStore } from '../../support/db.ts';
import { deleteKeys } from '../../support/redisKeys.ts';
import { TEST_REDIS_URL } from './harness.ts';

describe('PERF-38 enqueue steps store and queue what they did before', () => {
  let test: TestStore;
  let oneConnection: Store;
  let producer: HookProducer;
  let queue: Queue<DeliveryJobData>;
  let redis: Redis;
  const prefix = `hrtest_perf38_${randomBytes(4).toString('hex')}`;
  const queueName = 'q-perf38';
  const hooks = [
    { id: 'plain', type: 'onComplete' as const, webhook: { url: 'https://hooks.example.com/a' } },
    { id: 'shaped', type: 'onComplete' as const, webhook: { url: 'https://hooks.example.com/b', eventFields: ['text', 'userId'], body: { source: 'ci' } } },
  ];

  beforeAll(async () => {
    test = await createTestStore('perf38');
    // One connection, so the statement prepared by the producer's INSERT is visible to this session.
    oneConnection = await openStore({ databaseUrl: test.url, maxConnections: 1 });
    producer = createHookProducer({ store: oneConnection, redisUrl: TEST_REDIS_URL, queueName, queuePrefix: prefix, env: {} });
    redis = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: null });
    queue = new Queue<DeliveryJobData>(queueName, { connection: redis, prefix });
  });
  afterAll(async () => {
    await producer.close();
    await queue.close();
    await deleteKeys(`${prefix}:*`, redis);
    redis.disconnect();
    await oneConnection.close();
    await test.cleanup();
  });

  it('PERF-38 Q1: a single enqueue stores the event and queues the body the worker would build from the row', async () => {
    const event = { text: 'ünïcödé — 中文 \ud83d\ude00 "quoted" \\ back', userId: 'u-1', big: 9007199254740991, nested: { list: [1, null, true] } };
    const { deliveryIds, queued } = await producer.enqueue({ operationId: 'op-38', type: 'onComplete', event, hooks, occurredAt: '2026-12-06T10:00:00.123Z' });
    expect(queued).toBe(true);
    expect(deliveryIds).toHaveLength(2);

    const prepared = await oneConnection.pool?.query<{ name: string }>('select name from pg_prepared_statements');
    expect(prepared?.rows.map((r) => r.name)).toContain('hookrelay_insert_deliveries');

    for (const id of deliveryIds) {
      const row = await getDeliveryRow(oneConnection.db, id);
      expect(row?.payload).toEqual({ ...event, operationId: 'op-38' });
      const job = await queue.getJob(id);
      const attempt = job?.data.attempt;
      const hook = JSON.parse(attempt?.hook ?? 'null') as ParsedSerializedHook;
      expect(hook).toEqual(row?.hook);
      const occurredAt = row?.occurredAt as Date;
      const fromEvent = buildDeliveryBody({ hook, event: { ...event, operationId: 'op-38' }, deliveryId: id, occurredAt });
      expect(attempt?.body).toBe(fromEvent.body);
      expect(attempt?.emailUserId).toBe(fromEvent.emailUserId);
      const fromRow = buildDeliveryBody({
        hook: row?.hook as ParsedSerializedHook,
        event: row?.payload as Record<string, unknown>,
        deliveryId: id,
        occurredAt,
      });
      expect(JSON.parse(attempt?.body ?? '{}')).toEqual(JSON.parse(fromRow.body));
      expect(JSON.parse(attempt?.body ?? '{}')).toMatchObject({ deliveryId: id, occurredAt: '2026-12-06T10:00:00.123Z' });
    }
  });

  it('PERF-38 Q1a: a keyed call (one transaction, no prepared statement) returns the same ids when repeated', async () => {
    const input = { operationId: 'op-38k', type: 'onComplete' as const, event: { n: 1 }, hooks, idempotencyKey: 'k-1' };
    const first = await producer.enqueue(input);
    const again = await producer.enqueue(input);
    expect(again.deliveryIds).toEqual(first.deliveryIds);
    for (const id of first.deliveryIds) expect((await queue.getJob(id))?.data.attempt?.body).toContain(`"deliveryId":"${id}"`);
  });

  it('PERF-38 Q1: jobs staged while the INSERT runs are sent only once it committed: a refused INSERT leaves Redis empty', async () => {
    // A schema without the ledger tables: the INSERT fails after the jobs were staged.
    const bare = await createTestSchema('perf38bare');
    const store = await openStore({ databaseUrl: bare.url, maxConnections: 2 });
    const name = 'q-perf38-bare';
    // No spool: a missing table (not migrated) would be spooled for later (F1); here the INSERT's refusal must reach the caller.
    const failing = createHookProducer({ store, redisUrl: TEST_REDIS_URL, queueName: name, queuePrefix: prefix, env: {}, spool: false });
    const bareQueue = new Queue<DeliveryJobData>(name, { connection: redis, prefix });
    try {
      const events = Array.from({ length: 20 }, (_, i) => ({ operationId: `op-bare-${i}`, type: 'onComplete' as const, event: { i }, hooks }));
      await expect(failing.enqueueMany(events)).rejects.toThrow();
      await new Promise((resolve) => setTimeout(resolve, 100));
      const counts = await bareQueue.getJobCounts('waiting', 'delayed', 'prioritized', 'active');
      expect(Object.values(counts).reduce((a, b) => a + b, 0)).toBe(0);
    } finally {
      await failing.close();
      await bareQueue.close();
      await store.close();
      await bare.drop();
    }
  });

  it('PERF-38 SEC-H7: ordered rows without a key are inserted and numbered in one statement: contiguous per (operation, hook) across concurrent producers, unordered rows unnumbered', async () => {
    const ordered = [
      { id: 'o1', type: 'onComplete' as const, webhook: { url: 'https://hooks.example.com/o1', ordering: 'operation' as const } },
      { id: 'o2', type: 'onComplete' as const, webhook: { url: 'https://hooks.example.com/o2', ordering: 'operation' as const } },
      { id: 'free', type: 'onComplete' as const, webhook: { url: 'https://hooks.example.com/free' } },
    ];
    const other = createHookProducer({ store: test.store, redisUrl: TEST_REDIS_URL, queueName, queuePrefix: prefix, env: {} });
    try {
      const calls = Array.from({ length: 40 }, (_, i) =>
        (i % 2 ? other : producer).enqueue({ operationId: 'op-38o', type: 'onComplete', event: { i }, hooks: ordered }),
      );
      const results = await Promise.all(calls);
      const byHook = new Map<string, number[]>();
      for (const { deliveryIds } of results) {
        for (const id of deliveryIds) {
          const row = await getDeliveryRow(test.store.db, id);
          const job = (await queue.getJob(id))?.data.attempt;
          if (row?.hookId === 'free') {
            expect(row.sequence).toBeNull();
            expect(job?.sequence).toBeUndefined();
            continue;
          }
          expect(job?.sequence).toBe(row?.sequence);
          expect(JSON.parse(job?.body ?? '{}').sequence).toBe(row?.sequence);
          byHook.set(row?.hookId ?? '', [...(byHook.get(row?.hookId ?? '') ?? []), row?.sequence as number]);
        }
      }
      for (const hook of ['o1', 'o2']) expect([...(byHook.get(hook) ?? [])].sort((a, b) => a - b)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
      // One producer's calls keep their call order (ordered calls commit one group at a time).
      const mine = results.filter((_, i) => i % 2 === 0).map((r) => r.deliveryIds[0] as string);
      const seqs = await Promise.all(mine.map(async (id) => (await getDeliveryRow(test.store.db, id))?.sequence as number));
      expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    } finally {
      await other.close();
    }
  });
});
