/**
 * Issue 53: BullMQ's events stream is trimmed at the length the queue's meta hash holds, and every
 * Queue that opens writes its own setting there. The operator's queue (CLI, console) was opened
 * without hookrelay's 1,000, so a replay set the whole queue back to BullMQ's 10,000. Real Redis
 * and Postgres: the workers' queue sets 1,000, then an operator replays 1,200 failed rows.
 */
import { sql } from 'drizzle-orm';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openOperatorQueue, type OperatorQueue } from '../../../src/admin/operatorQueue.ts';
import { replayDeliveries } from '../../../src/admin/replay.ts';
import { resolveLoadedConfig } from '../../../src/config/resolveConfig.ts';
import { openDeliveryQueue } from '../../../src/queue/queueConnection.ts';
import { deliveryQueueKeys } from '../../../src/queue/queueKeys.ts';
import { insertDeliveries, newDeliveryId } from '../../../src/store/deliveriesRepo.ts';
import { createStack, TEST_REDIS_URL, waitFor, type Stack } from './harness.ts';

const REPLAYED = 1_200;

describe("issue 53: an operator's replay keeps the queue's events stream at 1,000 entries", () => {
  let stack: Stack;
  let redis: Redis;
  let operator: OperatorQueue | undefined;

  beforeAll(async () => {
    stack = await createStack('replay_trim');
    redis = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: null });
  });
  afterAll(async () => {
    await operator?.close();
    redis?.disconnect();
    await stack?.cleanup();
  });

  it('issue 53: after a replay of 1,200 rows through the operator queue, the meta says 1000 and the stream holds ≤ 1,000 + one stream node', async () => {
    const keys = deliveryQueueKeys(stack.prefix, stack.queueName);
    // The workers' (and producers') queue, as they open it: it writes the trim into the queue's meta.
    const workers = openDeliveryQueue({ name: stack.queueName, prefix: stack.prefix, redis });
    await workers.queue.getVersion(); // resolves once its meta is written
    expect(await redis.hget(keys.bull('meta'), 'opts.maxLenEvents')).toBe('1000');

    const ids = Array.from({ length: REPLAYED }, () => newDeliveryId());
    await insertDeliveries(
      stack.db.store.db,
      ids.map((id) => ({
        id,
        operationId: 'op-replay-trim',
        queue: stack.queueName,
        eventType: 'onComplete' as const,
        hookId: 'h',
        hook: { id: 'h', type: 'onComplete', webhook: { url: 'http://127.0.0.1:9/hook' } },
        transport: 'fetch' as const,
        payload: {},
        occurredAt: new Date(),
      })),
    );
    await stack.db.store.db.execute(sql`update deliveries set status = 'failed' where operation_id = 'op-replay-trim'`);

    operator = openOperatorQueue(resolveLoadedConfig(stack.settings(), { queuePrefix: stack.prefix }));
    const queue = await operator.queue();
    const results = await replayDeliveries(stack.db.store.db, queue, ids, { includeAccepted: false });
    expect(results.filter((r) => r.result === 'replayed')).toHaveLength(REPLAYED);
    await queue.getVersion(); // the operator queue's meta write has happened too

    expect(await redis.hget(keys.bull('meta'), 'opts.maxLenEvents')).toBe('1000');
    // BullMQ trims with `XADD MAXLEN ~`: Redis drops whole stream nodes, so up to one node's entries stay over.
    const [, nodeEntries] = (await redis.config('GET', 'stream-node-max-entries')) as [string, string];
    await waitFor(async () => (await redis.xlen(keys.bull('events'))) > 0, 5_000, 'events written');
    const length = await redis.xlen(keys.bull('events'));
    // 1,200 adds write at least 1,200 entries: at BullMQ's 10,000 none would be trimmed.
    expect(length).toBeGreaterThanOrEqual(1000);
    expect(length).toBeLessThanOrEqual(1000 + Number(nodeEntries));
    expect(queue.opts.streams?.events?.maxLen).toBe(1000);
    await workers.close();
  });
});
