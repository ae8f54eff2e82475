/**
 * The delivery queue and endpoint gate as an operator tool (the CLI, the console) holds them:
 * opened on first use, with a short command timeout so a Redis that is down answers "unknown"
 * instead of hanging a page or a command. One place, so both tools reach Redis the same way.
 */
import type { Queue } from 'bullmq';
import { loadedConfigOf, type LoadedConfig } from '../config/resolveConfig.ts';
import type { Settings } from '../config/settings.ts';
import { createEndpointGate, type EndpointGate } from '../isolation/endpointGate.ts';
import { isolationSettings } from '../isolation/endpointIsolation.ts';
import { type DeliveryQueueConnection, type DeliveryQueueKeys, deliveryQueueKeys, openDeliveryQueue } from '../queue/queueConnection.ts';
import { createQueueRedis, type QueueRedis } from '../queue/redisConnection.ts';
import type { DeliveryJobData } from '../queue/types.ts';

/** How long an operator read waits for Redis before reporting it unknown. */
const OPERATOR_REDIS_TIMEOUT_MS = 3_000;

export type OperatorQueue = {
  /** BullMQ key prefix of the queue (and of the endpoint gate and console sessions next to it). */
  readonly queuePrefix: string;
  /** Every Redis key of the queue (queueConnection.ts builds them). */
  readonly keys: DeliveryQueueKeys;
  queue(): Queue<DeliveryJobData>;
  /** hookrelay's own connection under the queue, once ready (policy acknowledgements, console sessions). */
  redis(): Promise<QueueRedis>;
  /** The workers' shared endpoint gate (breaker state, in-flight), on the queue's connection. */
  gate(): Promise<EndpointGate>;
  /** Redis's answer, or undefined when it does not answer within the timeout (Postgres still answers). */
  fromRedis<T>(work: (gate: EndpointGate) => Promise<T>): Promise<T | undefined>;
  /** The queue's answer, or undefined at once when Redis refuses the connection (F2), else after the timeout. */
  fromQueue<T>(work: (queue: Queue<DeliveryJobData>) => Promise<T>): Promise<T | undefined>;
  close(): Promise<void>;
};

/**
 * `config`: the configuration resolved at the tool's start (the CLI's context, the console's
 * start, the worker's start); settings alone are resolved with no explicit prefix.
 */
export function openOperatorQueue(config: LoadedConfig | Settings): OperatorQueue {
  const { settings, queuePrefix: prefix, redisCluster } = loadedConfigOf(config);
  let queue: DeliveryQueueConnection | undefined;
  let redis: QueueRedis | undefined;
  const keys = deliveryQueueKeys(prefix, settings.HOOKRELAY_QUEUE);
  // F2: settles (never resolves) once the connection failed while not ready: a refused Redis is answered at once, not after the timeout.
  let unreachable: Promise<never> | undefined;
  const open = (): DeliveryQueueConnection => {
    if (!queue) {
      const connection = createQueueRedis(settings.REDIS_URL, redisCluster, {
        maxRetriesPerRequest: 3,
        enableOfflineQueue: false,
        lazyConnect: false,
      });
      redis = connection;
      unreachable = new Promise<never>((_, reject) => {
        connection.on('error', (error: Error) => {
          if (connection.status !== 'ready') reject(error); // surfaced by the read that needed Redis
        });
      });
      unreachable.catch(() => undefined);
      queue = openDeliveryQueue({ name: settings.HOOKRELAY_QUEUE, prefix, redis: connection });
    }
    return queue;
  };
  const withinTimeout = async <T>(work: Promise<T>): Promise<T | undefined> => {
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        work,
        ...(unreachable ? [unreachable] : []),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error('timeout')), OPERATOR_REDIS_TIMEOUT_MS);
        }),
      ]);
    } catch {
      return undefined;
    } finally {
      clearTimeout(timer);
    }
  };
  const gate = async (): Promise<EndpointGate> => {
    const client = await open().ready();
    return createEndpointGate(client, {
      keyPrefix: keys.base,
      policy: isolationSettings(settings).policy,
    });
  };
  return {
    queuePrefix: prefix,
    keys,
    queue: () => open().queue,
    redis: () => open().ready(),
    gate,
    fromRedis: (work) => withinTimeout(gate().then(work)),
    fromQueue: (work) => withinTimeout(work(open().queue)),
    async close() {
      await queue?.close().catch(() => undefined);
      redis?.disconnect();
    },
  };
}
