/**
 * Where each of the worker's gauges reads from (metrics.ts): the queue, endpoint breaker states,
 * ledger and approval counts, dependency health (Q13), the ledger writes waiting for Postgres,
 * the local spools (F1). A read whose dependency is away fails at once instead of holding the scrape.
 */
import type { Queue } from 'bullmq';
import { ledgerStats } from '../admin/ledgerStats.ts';
import { createDeliveryMetrics, type DeliveryMetrics } from '../observability/metrics.ts';
import type { SpoolSummary } from '../queue/spoolSummary.ts';
import type { DeliveryJobData } from '../queue/types.ts';
import { approvalCounts } from '../store/approvalsRepo.ts';
import type { Db } from '../store/db.ts';
import type { DependencyHealth } from './dependencyHealth.ts';
import type { WorkerIsolation } from './workerIsolation.ts';

export function createServiceMetrics(p: {
  db: Db;
  queueName: string;
  queue: Queue<DeliveryJobData>;
  redisReady: () => boolean;
  /** Read at scrape time: isolation is set up after the metrics it reports to. */
  isolation: () => WorkerIsolation | undefined;
  health: DependencyHealth;
  ledgerWritesWaiting: () => number;
  readSpool: () => Promise<SpoolSummary>;
}): DeliveryMetrics {
  const { db, queue, redisReady } = p;
  return createDeliveryMetrics({
    queueCounts: () =>
      redisReady() ? queue.getJobCounts('waiting', 'active', 'delayed', 'prioritized', 'failed') : Promise.reject(new Error('redis unreachable')),
    // Redis away: the breaker states live there and a read would wait in ioredis' offline queue, holding the scrape (Q13).
    endpointStates: async () => {
      const endpoints = p.isolation();
      if (!endpoints) return {};
      if (endpoints.redis.status !== 'ready') throw new Error('redis unreachable');
      return endpoints.isolation.stateCounts();
    },
    ledgerStats: () => ledgerStats(db, p.queueName),
    approvalStats: () => approvalCounts(db),
    dependencies: () => p.health.snapshot(),
    ledgerWritesWaiting: p.ledgerWritesWaiting,
    spool: p.readSpool,
  });
}
