/**
 * One owner of a delivery queue's Redis connection, prefix and keys (BullMQ's QueueBase and
 * QueueKeys are the model). BullMQ 6 no longer lends its client (`Queue#client` is gone), so
 * hookrelay keeps its own: the producer, the worker, the reconciler and the operator tools reach
 * Redis through this handle, and every key it writes next to the queue comes from queueKeys.ts.
 */
import { createIORedisClient, type IRedisTransaction, Queue, type QueueOptions, type RedisClient } from 'bullmq';
import { type DeliveryQueueKeys, deliveryQueueKeys } from './queueKeys.ts';
import type { QueueRedis } from './redisConnection.ts';
import type { DeliveryJobData } from './types.ts';
import { withDefined } from '../util/withDefined.ts';

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

export function openDeliveryQueue(options: { name: string; prefix: string; redis: QueueRedis; streams?: QueueOptions['streams'] }): DeliveryQueueConnection {
  const { name, prefix, redis } = options;
  const queue = new Queue<DeliveryJobData>(name, { connection: redis, prefix, ...withDefined({ streams: options.streams }) });
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
