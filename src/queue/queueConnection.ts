/**
 * One owner of a delivery queue's Redis connection, prefix and keys (BullMQ's QueueBase and
 * QueueKeys are the model). BullMQ 6 no longer lends its client (`Queue#client` is gone), so
 * hookrelay keeps its own: the producer, the worker, the reconciler and the operator tools reach
 * Redis through this handle, and every key it writes next to the queue comes from queueKeys.ts.
 */
import { createIORedisClient, type IRedisTransaction, Queue, type RedisClient } from 'bullmq';
import { type DeliveryQueueKeys, deliveryQueueKeys } from './queueKeys.ts';
import type { QueueRedis } from './redisConnection.ts';
import type { DeliveryJobData } from './types.ts';

/**
 * BullMQ writes an event (added, active, completed, delayed…) to the queue's `events` stream
 * inside its scripts; hookrelay reads none of them (no QueueEvents: the ledger is the record).
 * They cannot be switched off, so the stream is kept short (BullMQ's default is 10,000 entries):
 * less Redis memory per queue and less trimming. Tools that watch the stream still see the latest.
 * Every Queue writes its trim into the queue's shared meta hash when it opens, so a Queue opened
 * without it (the operator's, before issue 53) set the whole queue back to 10,000: applied here,
 * not by each caller.
 */
export const DELIVERY_QUEUE_STREAMS = { events: { maxLen: 1_000 } } as const;

export type DeliveryQueueConnection = {
  readonly name: string;
  readonly prefix: string;
  readonly keys: DeliveryQueueKeys;
  /** hookrelay's own connection, shared with the BullMQ queue (and worker) built on it. */
  readonly redis: QueueRedis;
  readonly queue: Queue<DeliveryJobData>;
  /** The connection once it is ready and BullMQ's scripts are defined on it (what `Queue#client` awaited in BullMQ 5). */
  ready(): Promise<QueueRedis>;
  /** A pipeline on the connection that takes BullMQ's script calls (call after ready()). */
  pipeline(): IRedisTransaction;
  /** Closes the BullMQ queue; the connection stays its creator's to disconnect. */
  close(): Promise<void>;
};

/** The one place a delivery queue's BullMQ Queue is built: the producer, the worker and the operator tools open it here. */
export function openDeliveryQueue(options: { name: string; prefix: string; redis: QueueRedis }): DeliveryQueueConnection {
  const { name, prefix, redis } = options;
  const queue = new Queue<DeliveryJobData>(name, { connection: redis, prefix, streams: DELIVERY_QUEUE_STREAMS });
  // BullMQ's adapter over ioredis: it adds `runCommand` to pipelines, which Job#addJob queues its script with.
  const bullRedis: RedisClient = createIORedisClient(redis);
  return {
    name,
    prefix,
    keys: deliveryQueueKeys(prefix, name),
    redis,
    queue,
    async ready() {
      await queue.waitUntilReady();
      return redis;
    },
    pipeline: () => bullRedis.pipeline(),
    close: () => queue.close(),
  };
}
