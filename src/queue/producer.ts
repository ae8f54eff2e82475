/**
 * The producer a server app uses for durable delivery (Q1, Q1a, Q2, Q8): validate everything,
 * commit one ledger row per matching webhook in one multi-row INSERT, then add one BullMQ job
 * per new row (job id = delivery id). Once the ledger commit succeeded the ids are returned even
 * when Redis is away (`queued: false`); the worker's reconciler adds the missing jobs.
 *
 * The steps of an enqueue, each in its own module (the README's profile table names them):
 * prepare (prepareEnqueue.ts) → store (storeRows.ts) → number (enqueueBodies.ts) → add jobs
 * (addStoredJobs.ts) → answer (answerCalls.ts); groupCommit.ts runs the last four for a group of
 * concurrent calls. This file holds the settings, the connections and the tracing span; the
 * front door (frontDoor.ts) decides where a call goes — the ledger, or the local spool while
 * Postgres is away (F1, F2).
 */
import path from 'node:path';
import { createLogger, type Logger } from '../observability/logger.ts';
import { storeOf, type Db, type Store } from '../store/db.ts';
import { getDelivery } from '../store/deliveriesRepo.ts';
import { withTimeout } from '../util/withTimeout.ts';
import { openConfiguredStore } from '../store/openConfigured.ts';
import { handedTemplateEnv, resolveConfig } from '../config/resolveConfig.ts';
import { createQueueRedis, type QueueRedis } from './redisConnection.ts';
import { type DeliveryQueueConnection, openDeliveryQueue } from './queueConnection.ts';
import { createRedisAvailability, type RedisAvailability } from './redisAvailability.ts';
import { activeTracer, inSpan, serializeTraceContext, SpanKind, type Span } from '../observability/tracing.ts';
import { createGroupCommit } from './groupCommit.ts';
import { createFrontDoor, type FrontDoor, spoolFolder } from './frontDoor.ts';
import { DEFAULT_SPOOL_MAX_BYTES } from '../contract/defaults.ts';
import { prepareItems, type EnqueueRules, type PreparedItem } from './prepareEnqueue.ts';
import type { EnqueueInput, EnqueueManyResult, EnqueueResult, HookProducer, HookProducerOptions } from './types.ts';

/** Q2: how long an enqueue waits for Redis before answering `queued: false`. */
export const DEFAULT_QUEUE_TIMEOUT_MS = 2_000;
/** Q13: how long an enqueue waits for the ledger commit before failing with StoreUnavailableError. */
const DEFAULT_STORE_TIMEOUT_MS = 5_000;
/** A producer needs few connections: enqueue is one INSERT. */
const PRODUCER_POOL_SIZE = 10;
const PRODUCER_SETTINGS = [
  'HOOKRELAY_QUEUE',
  'REDIS_URL',
  'DATABASE_URL',
  'HOOKRELAY_DATA_DIR',
  'HOOKRELAY_MAX_PAYLOAD_BYTES',
  'HOOKRELAY_TEMPLATE_ENV',
  'HOOKRELAY_QUEUE_PREFIX',
  'HOOKRELAY_REDIS_CLUSTER',
  'HOOKRELAY_SPOOL_MAX_BYTES',
  'LOG_LEVEL',
] as const;
/** How long close() waits for the queue connection before dropping it. */
const CLOSE_TIMEOUT_MS = 2_000;

export function createHookProducer(options: HookProducerOptions = {}): HookProducer {
  // Resolved once (a bad value throws a SettingsError naming the variable); explicit options win
  // over the environment. Redis Cluster: the prefix must be a hash tag (one slot per queue),
  // refused here, not at the first enqueue. W2: an invalid template pattern fails here too.
  const config = resolveConfig(PRODUCER_SETTINGS, {
    env: options.env,
    templateEnv: options.templateEnv,
    resolvedTemplateEnv: handedTemplateEnv(options),
    queuePrefix: options.queuePrefix,
    ownsRedis: !options.redis,
  });
  const settings = config.settings;
  const logger = options.logger ?? outageLogger(config.env as Record<string, string | undefined>, settings.LOG_LEVEL);
  const queueName = options.queueName ?? settings.HOOKRELAY_QUEUE;
  const queueTimeoutMs = options.queueTimeoutMs ?? DEFAULT_QUEUE_TIMEOUT_MS;
  const storeTimeoutMs = options.storeTimeoutMs ?? DEFAULT_STORE_TIMEOUT_MS;
  const orderingDefault = options.ordering ?? 'none';
  if (orderingDefault !== 'operation' && orderingDefault !== 'none') throw new TypeError("createHookProducer: ordering must be 'operation' or 'none'");
  const rules: EnqueueRules = {
    maxPayloadBytes: options.maxPayloadBytes ?? settings.HOOKRELAY_MAX_PAYLOAD_BYTES,
    templateEnv: config.templateEnv,
    orderingDefault,
    queue: queueName,
  };

  const connections = producerConnections(options, logger, {
    queueName,
    redisUrl: options.redisUrl ?? settings.REDIS_URL,
    redisCluster: config.redisCluster,
    queuePrefix: config.queuePrefix,
    databaseUrl: options.databaseUrl ?? settings.DATABASE_URL,
    dataDir: settings.HOOKRELAY_DATA_DIR,
  });
  const group = createGroupCommit({ db: connections.db, queue: connections.queue, redis: connections.redis, queueTimeoutMs, logger });
  const spool = spoolSettings(options, { ...settings, queueName, queuePrefix: config.queuePrefix });
  const door = createFrontDoor({ ...connections, submit: group.submit, spool, storeTimeoutMs, queueTimeoutMs, logger });
  let closing = false;

  const enqueueMany = async (items: readonly EnqueueInput[]): Promise<EnqueueManyResult> => {
    // Step 1, prepare: everything is validated before anything is stored (D4b, Q8).
    const prepared = prepareItems(items, rules);
    if (prepared.every((p) => p.rows.length === 0)) return { deliveryIds: [], perItem: prepared.map(() => []), queued: true, spooled: false };
    if (closing) throw new Error('the hook producer is closed');
    if (activeTracer() === undefined) return door.accept(prepared);
    return inSpan('hookrelay.enqueue', { kind: SpanKind.PRODUCER, attributes: enqueueSpanAttributes(queueName, items, prepared) }, (span) =>
      commit(door, prepared, span),
    );
  };

  return {
    async enqueue(input) {
      const { deliveryIds, queued, spooled } = await enqueueMany([input]);
      return { deliveryIds, queued, spooled } satisfies EnqueueResult;
    },
    enqueueMany,
    async getDelivery(id) {
      return getDelivery(await connections.db(), id);
    },
    spoolStatus: () => door.spoolStatus(),
    async close() {
      if (closing) return;
      // New calls are refused at once; the calls already submitted finish their commit first —
      // for at most their store timeout (Q13: a Postgres or Redis that does not answer never holds close()).
      closing = true;
      await withTimeout(
        group.drain().then(() => true),
        storeTimeoutMs + queueTimeoutMs,
        false,
      );
      // What the spool holds is drained if Postgres answers (bounded), else handed over (spool.ts).
      await door.close();
      await connections.close();
    },
  };
}

/** Steps 2–5 for one call in a tracing span (the worker's attempt spans continue its trace: its context travels with each row and job). */
async function commit(door: FrontDoor, prepared: PreparedItem[], span: Span | undefined): Promise<EnqueueManyResult> {
  const trace = serializeTraceContext(span);
  if (trace !== undefined) for (const p of prepared) for (const row of p.rows) row.traceContext = trace;
  const result = await door.accept(prepared);
  span?.setAttribute('hookrelay.queued', result.queued);
  if (result.spooled) span?.setAttribute('hookrelay.spooled', true);
  return result;
}

/** F2: the app hears of an outage once each way, on stderr (a library speaks only then), at LOG_LEVEL when it is set. */
function outageLogger(env: Record<string, string | undefined>, level: Logger['level']): Logger {
  return createLogger({ level: env.LOG_LEVEL?.trim() ? level : 'info', pretty: false, destination: process.stderr });
}

/** F1: the spool's folder and bound, or undefined when it is off (`spool: false`, HOOKRELAY_SPOOL_MAX_BYTES=0). */
function spoolSettings(
  options: HookProducerOptions,
  s: { HOOKRELAY_DATA_DIR: string; HOOKRELAY_SPOOL_MAX_BYTES?: number | undefined; DATABASE_URL?: string | undefined; queueName: string; queuePrefix: string },
): { dir: string; maxBytes: number } | undefined {
  if (options.spool === false) return undefined;
  const maxBytes = options.spool?.maxBytes ?? s.HOOKRELAY_SPOOL_MAX_BYTES ?? DEFAULT_SPOOL_MAX_BYTES;
  if (!Number.isSafeInteger(maxBytes) || maxBytes < 0)
    throw new TypeError('createHookProducer: spool.maxBytes must be a whole number of bytes (0 turns the spool off)');
  if (maxBytes === 0) return undefined;
  const ledger = ledgerIdentity(options, options.databaseUrl ?? s.DATABASE_URL, s.HOOKRELAY_DATA_DIR);
  return { dir: options.spool?.dir ?? spoolFolder(s.HOOKRELAY_DATA_DIR, ledger, s.queueName, s.queuePrefix), maxBytes };
}

/** Which ledger the producer writes to, for its spool folder: the URL (its password never used), or the embedded folder. */
function ledgerIdentity(options: HookProducerOptions, databaseUrl: string | undefined, dataDir: string): string {
  if (options.store) {
    const store = storeOf(options.store);
    return store.pool?.options.connectionString ?? `${store.kind}:${path.resolve(dataDir)}`;
  }
  return databaseUrl ?? `embedded:${path.resolve(dataDir)}`;
}

function enqueueSpanAttributes(queueName: string, items: readonly EnqueueInput[], prepared: readonly PreparedItem[]): Record<string, string | number> {
  const first = items[0];
  return {
    'messaging.system': 'bullmq',
    'messaging.operation.type': 'send',
    'messaging.destination.name': queueName,
    'hookrelay.deliveries': prepared.reduce((n, p) => n + p.rows.length, 0),
    ...(items.length === 1 && first
      ? { 'hookrelay.operation_id': first.operationId, 'hookrelay.hook_type': first.type }
      : { 'hookrelay.events': items.length }),
  };
}

type ConnectionSettings = {
  queueName: string;
  redisUrl: string;
  redisCluster: boolean;
  queuePrefix: string;
  databaseUrl: string | undefined;
  dataDir: string | undefined;
};

/** The ledger store and the BullMQ queue, each opened at first use; close() releases what the producer opened. */
function producerConnections(options: HookProducerOptions, logger: Logger, s: ConnectionSettings) {
  let storePromise: Promise<Store> | undefined;
  let queue: DeliveryQueueConnection | undefined;
  let ownedRedis: QueueRedis | undefined;
  let availability: RedisAvailability | undefined;
  let closed = false;
  const openQueue = (): DeliveryQueueConnection => {
    if (queue) return queue;
    let connection: QueueRedis | undefined = options.redis;
    if (!connection) {
      // F3: a command is never kept for later — not while the connection is down (no offline
      // queue), not across a reconnect (no resend of unanswered commands): an add that outlived
      // its enqueue's answer must not run after the reconciler delivered its row.
      ownedRedis = createQueueRedis(s.redisUrl, s.redisCluster, { enableOfflineQueue: false, autoResendUnfulfilledCommands: false });
      // Reconnection is ioredis' job; a down Redis must not crash the server app.
      ownedRedis.on('error', (err: Error) => logger.debug({ err: err }, 'producer redis connection error'));
      connection = ownedRedis;
    }
    availability = createRedisAvailability(connection, logger);
    queue = openDeliveryQueue({ name: s.queueName, prefix: s.queuePrefix, redis: connection });
    queue.queue.on('error', (err: Error) => logger.debug({ err: err }, 'producer queue error'));
    return queue;
  };
  return {
    async db(): Promise<Db> {
      if (closed) throw new Error('the hook producer is closed');
      storePromise ??= options.store
        ? Promise.resolve(storeOf(options.store))
        : openConfiguredStore({ databaseUrl: s.databaseUrl, dataDir: s.dataDir, maxConnections: PRODUCER_POOL_SIZE });
      try {
        return (await storePromise).db;
      } catch (error) {
        storePromise = undefined; // a failed open is retried by the next call
        throw error;
      }
    },
    queue: openQueue,
    redis(): RedisAvailability {
      openQueue();
      return availability!;
    },
    async close(): Promise<void> {
      closed = true;
      availability?.close();
      if (queue)
        await withTimeout(
          queue.close().then(() => true),
          CLOSE_TIMEOUT_MS,
          false,
        );
      ownedRedis?.disconnect();
      if (storePromise && !options.store) {
        const store = await withTimeout(
          storePromise.catch(() => undefined),
          CLOSE_TIMEOUT_MS,
          undefined,
        );
        if (store)
          await withTimeout(
            store.close().then(() => true),
            CLOSE_TIMEOUT_MS,
            false,
          );
      }
    },
  };
}
