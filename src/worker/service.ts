/**
 * The delivery service a worker process runs: BullMQ worker + processor, reconciler (Q2),
 * retention (Q11), metrics and the HTTP server (health, readiness, metrics, QStash callbacks),
 * with an ordered, bounded stop (Q9). The store is the caller's (opened and closed by it).
 */
import { setMaxListeners } from 'node:events';
import type { Queue, Worker } from 'bullmq';
import { resolveLoadedConfig, type LoadedConfig } from '../config/resolveConfig.ts';
import { SettingsError } from '../contract/errors.ts';
import { withDefined } from '../util/withDefined.ts';
import { signingSecrets, type Settings } from '../config/settings.ts';
import { FetchTransport } from '../send/fetchTransport.ts';
import { isMissingPackage, QSTASH_PACKAGE } from '../notify/lazyQStashPublisher.ts';
import type { QStashPublisher } from '../send/types.ts';
import { startHttpServer, type PostRoute, type RequestHandler, type RunningHttpServer } from '../observability/httpServer.ts';
import { createCredentialGuard, type CredentialGuard } from '../observability/credentialGuard.ts';
import type { Logger } from '../observability/logger.ts';
import { opsAccessPolicy } from '../observability/opsAccess.ts';
import { createDeliveryMetrics, type DeliveryMetrics } from '../observability/metrics.ts';
import { createWebhookPayloadBuilder, type WebhookPayloadBuilder } from '../notify/buildPayload.ts';
import { pingStore, type Store } from '../store/db.ts';
import { ledgerStats } from '../admin/ledgerStats.ts';
import { createEndpointGate } from '../isolation/endpointGate.ts';
import { createPolicyAcknowledger } from '../isolation/policyAcks.ts';
import { createEndpointIsolation, isolationSettings, type EndpointIsolation } from '../isolation/endpointIsolation.ts';
import { createDependencyHealth } from './dependencyHealth.ts';
import { createInFlightTracker } from './attempt/inFlightTracker.ts';
import { createLedgerWriter, type LedgerWriter } from './attempt/ledgerWriter.ts';
import { createPgGate } from './pgGate.ts';
import { createAdmission, deliveryWaitAllowance } from './attempt/admission.ts';
import { createDeliveryProcessor, type DeliveryProcessor } from './attempt/processor.ts';
import { createOrderingGate } from './attempt/ordering.ts';
import { deadlineBudgetMs } from '../notify/retryPolicy.ts';
import { QSTASH_CALLBACK_PATH, QSTASH_FAILURE_PATH } from './qstash/callbackUrls.ts';
import { createRedisReplayGuard, type ReplayRedis } from './qstash/callbackReplay.ts';
import { createReconciler, type Reconciler } from './sweeps/reconciler.ts';
import { createQueueRedis, type QueueRedis } from '../queue/redisConnection.ts';
import { createRetention, type Retention } from './sweeps/retention.ts';
import { openDeliveryQueue } from '../queue/queueConnection.ts';
import { createSpoolReader, type SpoolSummary } from '../queue/spoolSummary.ts';
import type { DeliveryJobData } from '../queue/types.ts';
import { closeDeliveryWorker, createDeliveryWorker } from './bullWorker.ts';
import { startApprovalWork } from './sweeps/approvalWork.ts';
import { approvalCounts } from '../store/approvalsRepo.ts';

/** Bound on each closing step (Redis, the HTTP server, the ledger flush) once the worker itself has stopped. */
const CLOSE_STEP_TIMEOUT_MS = 3_000;
/** Q9: what a stop may take past HOOKRELAY_SHUTDOWN_TIMEOUT_MS, all closing steps together. */
const CLOSE_BUDGET_MS = 5_000;

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
  let isolation: EndpointIsolation | undefined;
  const metrics = createDeliveryMetrics({
    queueCounts: () =>
      redisReady() ? queue.getJobCounts('waiting', 'active', 'delayed', 'prioritized', 'failed') : Promise.reject(new Error('redis unreachable')),
    // Redis away: the breaker states live there and a read would wait in ioredis' offline queue, holding the scrape (Q13).
    endpointStates: async () => {
      if (!isolation) return {};
      if (isolationRedis?.status !== 'ready') throw new Error('redis unreachable');
      return isolation.stateCounts();
    },
    ledgerStats: () => ledgerStats(store.db, settings.HOOKRELAY_QUEUE),
    approvalStats: () => approvalCounts(store.db),
    dependencies: () => health.snapshot(),
    ledgerWritesWaiting: () => gate.waiting(),
    spool: readSpool,
  });
  // Endpoint isolation: per-endpoint cap, rate limit and breaker in Redis, disable in Postgres.
  const isolationConfig = isolationSettings(settings);
  // Its own connection, auto-pipelined: the admits and releases of one tick go out as one write
  // (on the queue's connection each was a socket write of its own, ~20 % of a delivery's cost).
  const isolationRedis: QueueRedis | undefined = isolationConfig.enabled
    ? createQueueRedis(settings.REDIS_URL, redisCluster, { enableAutoPipelining: true })
    : undefined;
  isolationRedis?.on('error', (err: Error) => logger.debug({ err: err }, 'endpoint isolation redis connection error'));
  if (isolationConfig.enabled && isolationRedis) {
    isolation = createEndpointIsolation({
      gate: createEndpointGate(isolationRedis, { keyPrefix: keys.endpointPrefix, policy: isolationConfig.policy }),
      acks: createPolicyAcknowledger(isolationRedis, keys.endpointPrefix),
      db: store.db,
      defaultCap: isolationConfig.defaultCap,
      logger,
      metrics,
    });
    await isolation.start();
  }

  const fetchTransport = new FetchTransport({ allowedCidrs: settings.HOOKRELAY_ALLOWED_CIDRS ?? '' });
  // The QStash SDK is loaded only when a token is configured (~10 MB of RSS otherwise unused); without
  // one, a 'qstash' hook is treated exactly like a missing token: one direct fetch (D7).
  let qstash: QStashPublisher | undefined;
  if (settings.QSTASH_TOKEN?.trim()) {
    const { createQStashPublisher } = await importQStash(() => import('../notify/qstashTransport.ts'), 'QSTASH_TOKEN');
    qstash = createQStashPublisher({
      url: settings.QSTASH_URL,
      token: settings.QSTASH_TOKEN,
      ...withDefined({ retries: options.qstashRetries }),
    });
  }
  const ledgerWriter = createLedgerWriter(store.db, { logger });
  // Q12: attempts still running after a second get their in_flight row, with a lease of the
  // webhook timeout + one lock duration (past it a row whose job vanished is re-enqueued, Q2).
  // Attempts begun whose outcome is not written yet (delivery ids): what a stop must drain. A job
  // whose outcome is written but that waits on Redis (its acknowledgement, its endpoint's slot) is done.
  const unrecorded = new Set<string>();
  const tracker = createInFlightTracker({
    mark: (marks) => gate.run(() => Promise.all(marks.map((m) => ledger.markInFlight(m)))).then(() => undefined),
    onError: (error) => logger.debug({ err: error }, 'could not mark long-running attempts in_flight'),
  });
  const inFlight: typeof tracker = {
    begin(key, mark) {
      unrecorded.add(mark.id);
      tracker.begin(key, mark);
    },
    end: (key) => tracker.end(key),
    stop: () => tracker.stop(),
  };
  const ledger: LedgerWriter = {
    ...ledgerWriter,
    async record(outcome) {
      await ledgerWriter.record(outcome);
      unrecorded.delete(outcome.id);
    },
  };

  let worker: Worker<DeliveryJobData> | undefined;
  let stopping = false;
  // B5: deliveries still waiting on an email look-up when the shutdown bound is reached give up.
  const abandon = new AbortController();
  setMaxListeners(0, abandon.signal); // one listener per delivery waiting on a look-up: concurrency-many, by design
  // BullMQ 6: Worker#resume is async (a failure reaches the worker's 'error' listener); awaited, never left floating.
  const resumeTaking = async (w: Worker<DeliveryJobData>): Promise<void> => {
    try {
      await w.resume();
    } catch (err) {
      logger.warn({ err }, 'could not resume taking jobs after Postgres came back');
    }
  };
  const gate = createPgGate({
    db: store.db,
    onDown: (error) => {
      health.markDown('postgres', error);
      void worker?.pause(true).catch(() => undefined);
    },
    onUp: () => {
      health.markUp('postgres');
      if (!stopping && worker) void resumeTaking(worker);
    },
  });

  // HOOKRELAY_CONCURRENCY attempts at once; BullMQ runs as many again, which wait in
  // memory (for a slot of the worker or of their endpoint) instead of a moveToDelayed round trip.
  const waitAllowance = deliveryWaitAllowance(settings.HOOKRELAY_CONCURRENCY);
  const admission = createAdmission({ concurrency: settings.HOOKRELAY_CONCURRENCY, waitAllowance, ...withDefined({ isolation }) });
  // Ordered delivery (SEC-H7): with the queue, a settled one wakes the next one at once; with the wait
  // allowance, a successor of a delivery running here waits for it in memory instead of parking.
  const ordering = createOrderingGate({
    db: store.db,
    queue,
    run: gate.run,
    budgetMs: deadlineBudgetMs(settings.retryScheduleSeconds),
    logger,
    waitAllowance,
    blocked: metrics.orderingBlocked,
  });
  const attemptProcessor = createDeliveryProcessor({
    db: store.db,
    ledger,
    gate,
    payloadBuilder: options.payloadBuilder ?? createWebhookPayloadBuilder({ logger }),
    fetchTransport,
    ...withDefined({ qstash }),
    env: config.env,
    templateEnv: config.templateEnv,
    ...withDefined({ appUrl: settings.APP_URL, publicUrl: settings.HOOKRELAY_PUBLIC_URL }),
    signingSecrets: signingSecrets(settings),
    scheduleSeconds: settings.retryScheduleSeconds,
    logger,
    metrics,
    metricsTenants: new Set(settings.HOOKRELAY_METRICS_TENANTS),
    signal: abandon.signal,
    inFlight,
    leaseMarginMs: settings.HOOKRELAY_LOCK_DURATION_MS,
    ...withDefined({ isolation }),
    admission,
    ordering,
  });
  // Jobs running now: what a stop drains (reported in its one shutdown line).
  let running = 0;
  const processor: DeliveryProcessor = async (job, token) => {
    running++;
    try {
      return await attemptProcessor(job, token);
    } finally {
      running--;
      unrecorded.delete(job.data.deliveryId);
    }
  };
  worker = createDeliveryWorker({
    queueName: deliveryQueue.name,
    prefix: deliveryQueue.prefix,
    connection,
    concurrency: settings.HOOKRELAY_CONCURRENCY + waitAllowance,
    lockDurationMs: settings.HOOKRELAY_LOCK_DURATION_MS,
    stalledIntervalMs: settings.HOOKRELAY_STALLED_INTERVAL_MS,
    processor,
    logger,
    quiet: () => !redisReady(),
  });

  const reconciler = createReconciler({
    db: store.db,
    queue: deliveryQueue,
    intervalMs: settings.HOOKRELAY_RECONCILE_INTERVAL_MS,
    ...withDefined({ graceMs: options.reconcileGraceMs }),
    logger,
    metrics,
    // Q4: without a public URL no QStash callback reports an outcome: the deadline decides.
    flagUnreportedQStash: settings.HOOKRELAY_PUBLIC_URL === undefined,
    run: gate.run,
  });
  reconciler.start();
  const retention = createRetention({
    db: store.db,
    retentionDays: settings.HOOKRELAY_RETENTION_DAYS,
    ...withDefined({ deleteDays: settings.HOOKRELAY_RETENTION_DELETE_DAYS }),
    logger,
    metrics,
  });
  retention.start();
  // A1/A3: approvals expire and their events are announced from here, whoever decided.
  const approvalWork = startApprovalWork({ store, config, redis: connection, logger });

  let http: RunningHttpServer | undefined;
  // Redis and Postgres answer: /readyz, and the worker's `ready` line.
  const readiness = {
    redis: async () => redisReady() && (await connection.ping()) === 'PONG',
    postgres: async () => {
      await pingStore(store.db);
      return true;
    },
  };
  if (options.http !== false) {
    // A3: the answer endpoint for chat buttons, when HOOKRELAY_APPROVAL_SECRETS is set.
    const postRoutes: Record<string, PostRoute> = { ...approvalWork.postRoutes };
    if (settings.HOOKRELAY_PUBLIC_URL) {
      const { createQStashCallbackRoute } = await importQStash(() => import('./qstash/callbackRoute.ts'), 'HOOKRELAY_PUBLIC_URL');
      const route = createQStashCallbackRoute({
        db: store.db,
        publicUrl: settings.HOOKRELAY_PUBLIC_URL,
        currentSigningKey: settings.QSTASH_CURRENT_SIGNING_KEY,
        nextSigningKey: settings.QSTASH_NEXT_SIGNING_KEY,
        logger,
        metrics,
        env: config.env,
        maxPayloadBytes: settings.HOOKRELAY_MAX_PAYLOAD_BYTES,
        // Next to the queue's own keys: one prefix to list, expire and delete.
        replay: createRedisReplayGuard({
          redis: connection as unknown as ReplayRedis,
          keyPrefix: keys.qstashSeen,
          ready: redisReady,
        }),
      });
      postRoutes[QSTASH_CALLBACK_PATH] = route;
      postRoutes[QSTASH_FAILURE_PATH] = route;
    }
    const consoleToken = settings.HOOKRELAY_CONSOLE_TOKEN;
    http = await startHttpServer({
      port: settings.HOOKRELAY_HTTP_PORT,
      logger,
      registry: metrics.registry,
      readiness,
      readinessDetails: async () => ({ spool: spoolView(await readSpool()) }),
      postRoutes,
      ops: opsAccessPolicy({
        allowFrom: settings.HOOKRELAY_OPS_ALLOW_FROM,
        hosts: settings.HOOKRELAY_OPS_HOSTS,
        knownUrls: [settings.HOOKRELAY_PUBLIC_URL, settings.HOOKRELAY_CONSOLE_ORIGIN],
      }),
      ...(consoleToken ? { opsBearer: { token: consoleToken, guard: options.credentialGuard ?? createCredentialGuard({ logger }) } } : {}),
      onRefused: (reason) => metrics.httpRefused.inc({ reason }),
      ...withDefined({ handlers: options.httpHandlers }),
    });
  }

  let stopped: Promise<boolean> | undefined;
  const stop = (): Promise<boolean> => {
    stopped ??= (async () => {
      stopping = true;
      const started = Date.now();
      const inFlightAtStop = running;
      const bound = settings.HOOKRELAY_SHUTDOWN_TIMEOUT_MS;
      // Q9: past the bound every remaining step shares CLOSE_BUDGET_MS, whatever Redis and Postgres do.
      const hardDeadline = started + bound + CLOSE_BUDGET_MS;
      await boundedStep(Promise.all([reconciler.stop(), retention.stop(), approvalWork.stop()]), hardDeadline);
      // Jobs waiting in memory (no attempt yet) go back to the queue now; attempts under way drain.
      admission.close();
      ordering.close();
      let cutOff = 0;
      const ended = await closeDeliveryWorker(worker, {
        timeoutMs: Math.max(0, bound - (Date.now() - started)),
        logger,
        onTimeout: () => {
          cutOff = unrecorded.size;
          abandon.abort();
          // Outcomes waiting for Postgres give up: their rows stay in_flight / queued and the reconciler re-enqueues them.
          gate.close();
        },
        idleWithoutRedis: () => unrecorded.size === 0 && health.isDown('redis'),
        // Only when Redis is away: with Redis up, BullMQ's own close finishes once the cut-off jobs unwind.
        disconnect: () => {
          if (redisReady()) return;
          connection.disconnect();
          isolationRedis?.disconnect();
        },
        forceTimeoutMs: CLOSE_STEP_TIMEOUT_MS,
      });
      const drained = ended !== 'bound' || cutOff === 0;
      // Past the bound, the deliveries abandoned above still get their outcome written if they can.
      const flushed = await boundedStep(ledger.drain(), hardDeadline);
      inFlight.stop();
      // The leases go back before the isolation connection closes (else the next worker waits for them to lapse).
      await boundedStep(isolation?.stop(), hardDeadline);
      gate.close();
      health.stop();
      await boundedStep(http?.close(), hardDeadline);
      // Redis away: closing the queue would wait on it; dropping the connection below is the close.
      if (redisReady()) await boundedStep(queue.close(), hardDeadline);
      connection.disconnect();
      isolationRedis?.disconnect();
      await boundedStep(fetchTransport.close(), hardDeadline);
      const clean = drained && flushed;
      const away = health.downNow();
      const fields = { inFlightAtStop, drained: inFlightAtStop - cutOff, cutOff, graceful: clean, unreachable: away, ms: Date.now() - started };
      const awayNote = away.length > 0 ? `; ${away.join(' and ')} unreachable at stop` : '';
      if (clean) logger.info(fields, `stopped: ${inFlightAtStop} in-flight deliveries drained, ledger flushed${awayNote}`);
      else
        logger.warn(
          fields,
          cutOff > 0
            ? `stopped uncleanly: ${inFlightAtStop - cutOff} of ${inFlightAtStop} in-flight deliveries drained; ${cutOff} cut off at the ${bound} ms bound (their ledger rows stay; the reconciler re-enqueues them)${awayNote}`
            : `stopped uncleanly: the ledger could not be flushed (the rows stay; the reconciler re-enqueues them)${awayNote}`,
        );
      return clean;
    })();
    return stopped;
  };

  return { worker, queue, metrics, reconciler, retention, httpPort: http?.port, readiness, stop };
}

/** `/readyz`'s view of the local spools (F1). */
function spoolView(s: SpoolSummary): Record<string, number | null> {
  return {
    events: s.events,
    bytes: s.bytes,
    oldestAgeSeconds: s.oldestAt ? Math.round((Date.now() - s.oldestAt.getTime()) / 1000) : null,
    rejected: s.rejected,
  };
}

/** Waits for `step` at most CLOSE_STEP_TIMEOUT_MS and never past `deadline`; true when it settled without error in time. */
async function boundedStep(step: Promise<unknown> | undefined, deadline: number): Promise<boolean> {
  if (!step) return true;
  let timer: NodeJS.Timeout | undefined;
  const waitMs = Math.max(0, Math.min(CLOSE_STEP_TIMEOUT_MS, deadline - Date.now()));
  const settled = await Promise.race([
    step.then(
      () => true,
      () => false,
    ),
    new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), waitMs))),
  ]);
  clearTimeout(timer);
  return settled;
}

/** @upstash/qstash is an optional peer: configured QStash without it stops the worker with what to install. */
async function importQStash<M>(load: () => Promise<M>, variable: string): Promise<M> {
  try {
    return await load();
  } catch (error) {
    if (isMissingPackage(error))
      throw new SettingsError([variable], `${variable} is set, which needs the optional package ${QSTASH_PACKAGE}: npm install ${QSTASH_PACKAGE}`);
    throw error;
  }
}
