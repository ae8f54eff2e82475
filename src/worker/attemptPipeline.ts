/**
 * What takes a job to its attempt: the worker's slots and in-memory endpoint waits (admission),
 * the turn keeper (SEC-H7), the processor, and the BullMQ worker that runs it.
 */
import type { Queue, Worker } from 'bullmq';
import type { LoadedConfig } from '../config/resolveConfig.ts';
import { signingSecrets } from '../config/settings.ts';
import type { EndpointIsolation } from '../isolation/endpointIsolation.ts';
import { createWebhookPayloadBuilder, type WebhookPayloadBuilder } from '../notify/buildPayload.ts';
import { deadlineBudgetMs } from '../notify/retryPolicy.ts';
import type { Logger } from '../observability/logger.ts';
import type { DeliveryMetrics } from '../observability/metrics.ts';
import type { QueueRedis } from '../queue/redisConnection.ts';
import type { DeliveryJobData } from '../queue/types.ts';
import type { FetchTransport } from '../send/fetchTransport.ts';
import type { QStashPublisher } from '../send/types.ts';
import type { Db } from '../store/db.ts';
import { withDefined } from '../util/withDefined.ts';
import { type Admission, createAdmission, deliveryWaitAllowance } from './attempt/admission.ts';
import { createTurnKeeper, type TurnKeeper } from './attempt/ordering.ts';
import { createDeliveryProcessor } from './attempt/processor.ts';
import type { AttemptAccounting } from './attemptAccounting.ts';
import { createDeliveryWorker } from './bullWorker.ts';
import type { PostgresWait } from './postgresWait.ts';

export function startAttemptPipeline(p: {
  config: LoadedConfig;
  db: Db;
  queue: Queue<DeliveryJobData>;
  connection: QueueRedis;
  redisReady: () => boolean;
  gate: PostgresWait;
  accounting: AttemptAccounting;
  fetchTransport: FetchTransport;
  qstash: QStashPublisher | undefined;
  isolation: EndpointIsolation | undefined;
  payloadBuilder: WebhookPayloadBuilder | undefined;
  metrics: DeliveryMetrics;
  logger: Logger;
  /** B5: aborted when the stop gives up waiting; deliveries waiting on an email look-up give up. */
  signal: AbortSignal;
}): { worker: Worker<DeliveryJobData>; admission: Admission; ordering: TurnKeeper } {
  const { config, db, gate, isolation, metrics, logger } = p;
  const { settings } = config;
  // HOOKRELAY_CONCURRENCY attempts at once; BullMQ runs as many again, which wait in
  // memory (for a slot of the worker or of their endpoint) instead of a moveToDelayed round trip.
  const waitAllowance = deliveryWaitAllowance(settings.HOOKRELAY_CONCURRENCY);
  const admission = createAdmission({ concurrency: settings.HOOKRELAY_CONCURRENCY, waitAllowance, ...(isolation ? { isolation } : {}) });
  // Ordered delivery (SEC-H7): with the queue, a settled one wakes the next one at once; with the wait
  // allowance, a successor of a delivery running here waits for it in memory instead of parking.
  const ordering = createTurnKeeper({
    db,
    queue: p.queue,
    run: gate.run,
    budgetMs: deadlineBudgetMs(settings.retryScheduleSeconds),
    logger,
    waitAllowance,
    blocked: metrics.orderingBlocked,
  });
  const attemptProcessor = createDeliveryProcessor({
    db,
    ledger: p.accounting.ledger,
    gate,
    payloadBuilder: p.payloadBuilder ?? createWebhookPayloadBuilder({ logger }),
    fetchTransport: p.fetchTransport,
    ...(p.qstash ? { qstash: p.qstash } : {}),
    env: config.env,
    templateEnv: config.templateEnv,
    ...withDefined({ appUrl: settings.APP_URL, publicUrl: settings.HOOKRELAY_PUBLIC_URL }),
    signingSecrets: signingSecrets(settings),
    scheduleSeconds: settings.retryScheduleSeconds,
    logger,
    metrics,
    metricsTenants: new Set(settings.HOOKRELAY_METRICS_TENANTS),
    signal: p.signal,
    inFlight: p.accounting.inFlight,
    leaseMarginMs: settings.HOOKRELAY_LOCK_DURATION_MS,
    ...(isolation ? { isolation } : {}),
    admission,
    ordering,
  });
  const worker = createDeliveryWorker({
    queueName: settings.HOOKRELAY_QUEUE,
    prefix: config.queuePrefix,
    connection: p.connection,
    concurrency: settings.HOOKRELAY_CONCURRENCY + waitAllowance,
    lockDurationMs: settings.HOOKRELAY_LOCK_DURATION_MS,
    stalledIntervalMs: settings.HOOKRELAY_STALLED_INTERVAL_MS,
    processor: p.accounting.counted(attemptProcessor),
    logger,
    quiet: () => !p.redisReady(),
  });
  return { worker, admission, ordering };
}
