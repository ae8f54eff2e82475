/**
 * The delivery service a worker process runs, wired from its parts: BullMQ worker + processor
 * (attemptPipeline.ts), the sweeps — reconciler (Q2), retention (Q11), approvals (supervisor.ts) —,
 * metrics and the HTTP server (health, readiness, metrics, QStash callbacks), with an ordered,
 * bounded stop (Q9, serviceStop.ts). The store is the caller's (opened and closed by it).
 */
import { setMaxListeners } from 'node:events';
import type { Queue, Worker } from 'bullmq';
import { type LoadedConfig, resolveLoadedConfig } from '../config/resolveConfig.ts';
import type { Settings } from '../config/settings.ts';
import type { WebhookPayloadBuilder } from '../notify/buildPayload.ts';
import type { CredentialGuard } from '../observability/credentialGuard.ts';
import type { RequestHandler } from '../observability/httpServer.ts';
import type { Logger } from '../observability/logger.ts';
import type { DeliveryMetrics } from '../observability/metrics.ts';
import { openDeliveryQueue } from '../queue/queueConnection.ts';
import { createQueueRedis, type QueueRedis } from '../queue/redisConnection.ts';
import { createSpoolReader } from '../queue/spoolSummary.ts';
import type { DeliveryJobData } from '../queue/types.ts';
import { FetchTransport } from '../send/fetchTransport.ts';
import type { Store } from '../store/db.ts';
import { createAttemptAccounting } from './attemptAccounting.ts';
import { startAttemptPipeline } from './attemptPipeline.ts';
import { createDependencyHealth } from './dependencyHealth.ts';
import { loadQStashPublisher } from './qstashLoading.ts';
import { dependencyReadiness, startServiceHttp } from './serviceHttp.ts';
import { createServiceMetrics } from './serviceMetrics.ts';
import { orderedStop } from './serviceStop.ts';
import type { Reconciler } from './sweeps/reconciler.ts';
import type { Retention } from './sweeps/retention.ts';
import { startSupervisor } from './supervisor.ts';
import { createWorkerIsolation, type WorkerIsolation } from './workerIsolation.ts';
import { createWorkerPostgresWait } from './workerPostgresWait.ts';

export type DeliveryServiceOptions = (
  | {
      /**
       * The configuration resolved at the worker's start (startDeliveryWorker): the settings, the
       * environment header templates resolve from at send time (W2), the queue prefix.
       */
      config: LoadedConfig;
    }
  | {
      /** Settings alone: resolved here, with `env` and `queuePrefix`. */
      settings: Settings;
      /** Header templates resolve from this environment at send time (W2). Default: the live `process.env`. */
      env?: Record<string, string | undefined>;
      /** BullMQ key prefix. Default HOOKRELAY_QUEUE_PREFIX, else `bull`. */
      queuePrefix?: string;
    }
) & {
  store: Store;
  logger: Logger;
  /** Start the HTTP server (default true). */
  http?: boolean;
  /** Reconciler grace for freshly queued rows (tests shorten it). */
  reconcileGraceMs?: number;
  payloadBuilder?: WebhookPayloadBuilder;
  /** Upstash-Retries for QStash publishes (Q7); the publisher's default (3) when absent. */
  qstashRetries?: number;
  /** More HTTP request handlers on the worker's server (the operator console). */
  httpHandlers?: RequestHandler[];
  /** The token-guess throttle the console shares with /metrics' bearer check; default: one of its own. */
  credentialGuard?: CredentialGuard;
};

export type DeliveryService = {
  worker: Worker<DeliveryJobData>;
  queue: Queue<DeliveryJobData>;
  metrics: DeliveryMetrics;
  reconciler: Reconciler;
  retention: Retention;
  /** The HTTP port actually bound; undefined when the server is off or the port was busy. */
  httpPort: number | undefined;
  /** Does each dependency answer now (a throw or false = no)? */
  readiness: { redis: () => Promise<boolean>; postgres: () => Promise<boolean> };
  /** Q9: stop taking jobs, finish in-flight ones within the bound, close Redis. True when nothing was cut off. */
  stop(): Promise<boolean>;
};

export async function startDeliveryService(options: DeliveryServiceOptions): Promise<DeliveryService> {
  const { store, logger } = options;
  const config = 'config' in options ? options.config : resolveLoadedConfig(options.settings, { env: options.env, queuePrefix: options.queuePrefix });
  const { settings, queuePrefix: prefix, redisCluster } = config;
  const connection: QueueRedis = createQueueRedis(settings.REDIS_URL, redisCluster);
  connection.on('error', (err: Error) => logger.debug({ err: err }, 'redis connection error'));
  // Q13: one line when Redis or Postgres goes away and one when it is back; readiness, the stop and the metrics read it.
  const health = createDependencyHealth(logger);
  health.watchRedis(connection);
  // Redis away: a command would wait in ioredis' offline queue until it is back; scrapes and probes answer at once instead.
  const redisReady = () => connection.status === 'ready';

  // One owner of the queue's connection, prefix and keys (queueConnection.ts).
  const deliveryQueue = openDeliveryQueue({ name: settings.HOOKRELAY_QUEUE, prefix, redis: connection });
  const { queue, keys } = deliveryQueue;
  queue.on('error', (err: Error) => logger.debug({ err: err }, 'queue error'));
  // F1: the spools producers on this host keep while Postgres is away (the gauges and /readyz show them).
  const readSpool = createSpoolReader(settings.HOOKRELAY_DATA_DIR);
  let endpoints: WorkerIsolation | undefined;
  const metrics = createServiceMetrics({
    db: store.db,
    queueName: settings.HOOKRELAY_QUEUE,
    queue,
    redisReady,
    isolation: () => endpoints,
    health,
    ledgerWritesWaiting: () => gate.waiting(),
    readSpool,
  });
  endpoints = createWorkerIsolation({ settings, redisCluster, keyPrefix: keys.endpointPrefix, db: store.db, logger, metrics });
  await endpoints?.isolation.start();
  const isolation = endpoints?.isolation;

  const fetchTransport = new FetchTransport({ allowedCidrs: settings.HOOKRELAY_ALLOWED_CIDRS ?? '' });
  const qstash = await loadQStashPublisher(settings, options.qstashRetries);
  const accounting = createAttemptAccounting({ db: store.db, logger, run: (work) => gate.run(work) });
  // B5: deliveries still waiting on an email look-up when the shutdown bound is reached give up.
  const abandon = new AbortController();
  setMaxListeners(0, abandon.signal); // one listener per delivery waiting on a look-up: concurrency-many, by design
  const gate = createWorkerPostgresWait({ db: store.db, health, logger });
  const { worker, admission, ordering } = startAttemptPipeline({
    config,
    db: store.db,
    queue,
    connection,
    redisReady,
    gate,
    accounting,
    fetchTransport,
    qstash,
    isolation,
    payloadBuilder: options.payloadBuilder,
    metrics,
    logger,
    signal: abandon.signal,
  });
  gate.follow(worker);
  const sweeps = startSupervisor({ store, config, deliveryQueue, run: gate.run, logger, metrics, reconcileGraceMs: options.reconcileGraceMs });

  const readiness = dependencyReadiness(connection, redisReady, store.db);
  const http =
    options.http === false
      ? undefined
      : await startServiceHttp({
          config,
          db: store.db,
          logger,
          metrics,
          readiness,
          readSpool,
          approvalRoutes: sweeps.approvalRoutes,
          connection,
          redisReady,
          keys,
          credentialGuard: options.credentialGuard,
          httpHandlers: options.httpHandlers,
        });
  const stop = orderedStop({
    boundMs: settings.HOOKRELAY_SHUTDOWN_TIMEOUT_MS,
    logger,
    sweeps,
    admission,
    ordering,
    worker,
    accounting,
    abandon,
    gate,
    health,
    connection,
    redisReady,
    endpoints,
    http,
    queue,
    fetchTransport,
  });
  const { reconciler, retention } = sweeps;
  return { worker, queue, metrics, reconciler, retention, httpPort: http?.port, readiness, stop };
}
