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
import type { DeliveryQueueConnection } from '../queue/queueConnection.ts';
import { type DeliveryQueueKeys, deliveryQueueKeys, type JobCountState, jobCounts } from '../queue/queueKeys.ts';
import type { QueueRedis } from '../queue/redisConnection.ts';
import type { DeliveryJobData } from '../queue/types.ts';

/** How long an operator read waits for Redis before reporting it unknown. */
const OPERATOR_REDIS_TIMEOUT_MS = 3_000;

export type OperatorQueue = {
  /** BullMQ key prefix of the queue (and of the endpoint gate and console sessions next to it). */
  readonly queuePrefix: string;
  /** Every Redis key of the queue (queueKeys.ts builds them). */
  readonly keys: DeliveryQueueKeys;
  /** The BullMQ queue (loaded on first use: a read command never loads BullMQ). */
  queue(): Promise<Queue<DeliveryJobData>>;
  /** hookrelay's own connection under the queue, once ready (policy acknowledgements, console sessions). */
  redis(): Promise<QueueRedis>;
  /** The workers' shared endpoint gate (breaker state, in-flight), on the queue's connection. */
  gate(): Promise<EndpointGate>;
  /** Redis's answer, or undefined when it does not answer within the timeout (Postgres still answers). */
  fromRedis<T>(work: (gate: EndpointGate) => Promise<T>): Promise<T | undefined>;
  /** Job counts per state, or undefined at once when Redis refuses the connection (F2), else after the timeout. */
  jobCounts<S extends JobCountState>(states: readonly S[]): Promise<Record<S, number> | undefined>;
  close(): Promise<void>;
};

/**
 * `config`: the configuration resolved at the tool's start (the CLI's context, the console's
 * start, the worker's start); settings alone are resolved with no explicit prefix.
 */
export function openOperatorQueue(config: LoadedConfig | Settings): OperatorQueue {
  const { settings, queuePrefix: prefix, redisCluster } = loadedConfigOf(config);
  const keys = deliveryQueueKeys(prefix, settings.HOOKRELAY_QUEUE);
  let redis: QueueRedis | undefined;
  let opening: Promise<QueueRedis> | undefined;
  let queue: Promise<DeliveryQueueConnection> | undefined;
  // F2: settles (never resolves) once the connection failed while not ready: a refused Redis is answered at once, not after the timeout.
  let unreachable: Promise<never> | undefined;
  // ioredis and BullMQ load on first use: `deliveries list` needs neither, `stats` and `endpoints list` only ioredis.
  const connection = (): Promise<QueueRedis> =>
    (opening ??= import('../queue/redisConnection.ts').then(({ createQueueRedis }) => {
      const created = createQueueRedis(settings.REDIS_URL, redisCluster, {
        maxRetriesPerRequest: 3,
        enableOfflineQueue: false,
        lazyConnect: false,
      });
      redis = created;
      unreachable = new Promise<never>((_, reject) => {
        created.on('error', (error: Error) => {
          if (created.status !== 'ready') reject(error); // surfaced by the read that needed Redis
        });
      });
      unreachable.catch(() => undefined);
      return created;
    }));
  // No offline queue: a command sent before the connection is ready fails, so wait for it (what `Queue#client` did).
  const ready = async (): Promise<QueueRedis> => {
    const c = await connection();
    if (c.status === 'ready') return c;
    await Promise.race([new Promise<void>((resolve) => c.once('ready', () => resolve())), ...(unreachable ? [unreachable] : [])]);
    return c;
  };
  const openQueue = (): Promise<DeliveryQueueConnection> =>
    (queue ??= Promise.all([connection(), import('../queue/queueConnection.ts')]).then(([c, { openDeliveryQueue }]) =>
      openDeliveryQueue({ name: settings.HOOKRELAY_QUEUE, prefix, redis: c }),
    ));
  const withinTimeout = async <T>(work: () => Promise<T>): Promise<T | undefined> => {
    let timer: NodeJS.Timeout | undefined;
    try {
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('timeout')), OPERATOR_REDIS_TIMEOUT_MS);
      });
      await Promise.race([connection(), timeout]);
      return await Promise.race([work(), ...(unreachable ? [unreachable] : []), timeout]);
    } catch {
      return undefined;
    } finally {
      clearTimeout(timer);
    }
  };
  const gate = async (): Promise<EndpointGate> =>
    createEndpointGate(await ready(), { keyPrefix: keys.endpointPrefix, policy: isolationSettings(settings).policy });
  return {
    queuePrefix: prefix,
    keys,
    queue: async () => (await openQueue()).queue,
    redis: ready,
    gate,
    fromRedis: (work) => withinTimeout(async () => work(await gate())),
    jobCounts: (states) => withinTimeout(async () => jobCounts(await ready(), keys, states)),
    async close() {
      if (queue) await (await queue).close().catch(() => undefined);
      redis?.disconnect();
    },
  };
}
