/**
 * The worker's background sweeps under one start and one stop, as pg-boss's supervisor: the
 * reconciler (Q2), retention (Q11) and the approval work (A1/A3). They start in that order once
 * the BullMQ worker exists, and a stop halts all three together before the worker drains.
 */
import type { LoadedConfig } from '../config/resolveConfig.ts';
import type { PostRoute } from '../observability/httpServer.ts';
import type { Logger } from '../observability/logger.ts';
import type { DeliveryMetrics } from '../observability/metrics.ts';
import type { DeliveryQueueConnection } from '../queue/queueConnection.ts';
import type { Store } from '../store/db.ts';
import { withDefined } from '../util/withDefined.ts';
import type { PostgresWait } from './postgresWait.ts';
import { startApprovalWork } from './sweeps/approvalWork.ts';
import { createReconciler, type Reconciler } from './sweeps/reconciler.ts';
import { createRetention, type Retention } from './sweeps/retention.ts';

type Supervisor = {
  reconciler: Reconciler;
  retention: Retention;
  /** The approval answer endpoint (A3), for the worker's HTTP server; empty without HOOKRELAY_APPROVAL_SECRETS. */
  approvalRoutes: Record<string, PostRoute>;
  /** Stops every sweep; settles once all three have. */
  stop(): Promise<unknown>;
};

export function startSupervisor(p: {
  store: Store;
  config: LoadedConfig;
  deliveryQueue: DeliveryQueueConnection;
  run: PostgresWait['run'];
  logger: Logger;
  metrics: DeliveryMetrics;
  reconcileGraceMs: number | undefined;
}): Supervisor {
  const { store, logger, metrics } = p;
  const { settings } = p.config;
  const reconciler = createReconciler({
    db: store.db,
    queue: p.deliveryQueue,
    intervalMs: settings.HOOKRELAY_RECONCILE_INTERVAL_MS,
    ...withDefined({ graceMs: p.reconcileGraceMs }),
    logger,
    metrics,
    // Q4: without a public URL no QStash callback reports an outcome: the deadline decides.
    flagUnreportedQStash: settings.HOOKRELAY_PUBLIC_URL === undefined,
    run: p.run,
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
  const approvalWork = startApprovalWork({ store, config: p.config, redis: p.deliveryQueue.redis, logger });
  return {
    reconciler,
    retention,
    approvalRoutes: approvalWork.postRoutes,
    stop: () => Promise.all([reconciler.stop(), retention.stop(), approvalWork.stop()]),
  };
}
