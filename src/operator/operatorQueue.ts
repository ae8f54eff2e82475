/**
 * The delivery queue and endpoint gate as an operator tool (the CLI, the console) holds them:
 * opened on first use, with a short command timeout so a Redis that is down answers "unknown"
 * instead of hanging a page or a command. One place, so both tools reach Redis the same way.
 */
import { Queue } from 'bullmq';
import type { Settings } from '../config/settings.ts';
import { createEndpointGate, type EndpointGate } from '../isolation/endpointGate.ts';
import { endpointKeyPrefix, isolationSettings } from '../isolation/endpointIsolation.ts';
import { createQueueRedis, type QueueRedis } from '../queue/redisConnection.ts';
import { DEFAULT_QUEUE_PREFIX, type DeliveryJobData } from '../queue/types.ts';

/** How long an operator read waits for Redis before reporting it unknown. */
const OPERATOR_REDIS_TIMEOUT_MS = 3_000;

export type OperatorQueue = {
  queue(): Queue<DeliveryJobData>;
  /** The workers' shared endpoint gate (breaker state, in-flight), on the queue's connection. */
  gate(): Promise<EndpointGate>;
  /** Redis's answer, or undefined when it does not answer within the timeout (Postgres still answers). */
  fromRedis<T>(work: (gate: EndpointGate) => Promise<T>): Promise<T | undefined>;
  close(): Promise<void>;
};

export function openOperatorQueue(settings: Settings): OperatorQueue {
  let queue: Queue<DeliveryJobData> | undefined;
  let redis: ReturnType<typeof createQueueRedis> | undefined;
  const prefix = settings.HOOKRELAY_QUEUE_PREFIX ?? DEFAULT_QUEUE_PREFIX;
  const open = (): Queue<DeliveryJobData> => {
    if (!queue) {
      redis = createQueueRedis(settings.REDIS_URL, settings.HOOKRELAY_REDIS_CLUSTER === true, {
        maxRetriesPerRequest: 3,
        enableOfflineQueue: false,
        lazyConnect: false,
      });
      redis.on('error', () => undefined); // surfaced by the read that needed Redis
      queue = new Queue<DeliveryJobData>(settings.HOOKRELAY_QUEUE, { connection: redis, prefix });
    }
    return queue;
  };
  const gate = async (): Promise<EndpointGate> => {
    const client = await open().client;
    return createEndpointGate(client as unknown as QueueRedis, {
      keyPrefix: endpointKeyPrefix(prefix, settings.HOOKRELAY_QUEUE),
      policy: isolationSettings(settings).policy,
    });
  };
  return {
    queue: open,
    gate,
    async fromRedis(work) {
      let timer: NodeJS.Timeout | undefined;
      try {
        return await Promise.race([
          gate().then(work),
          new Promise<never>((_, reject) => {
            timer = setTimeout(() => reject(new Error('timeout')), OPERATOR_REDIS_TIMEOUT_MS);
          }),
        ]);
      } catch {
        return undefined;
      } finally {
        clearTimeout(timer);
      }
    },
    async close() {
      await queue?.close().catch(() => undefined);
      redis?.disconnect();
    },
  };
}
