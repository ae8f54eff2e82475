/**
 * Q2: the ledger is the source of truth. At start and every interval, rows that are due but have
 * no live BullMQ job (Redis lost its data, a producer could not reach Redis, a job was dropped
 * after too many stalls) are re-enqueued with the same id. Keyset pages, bounded per run; the
 * cursor carries over to the next run so a large backlog is walked in slices.
 *
 * Each pass also fails the held rows whose deadline passed (Q3, issue 25: held for a disabled
 * endpoint is not a hiding place, unless an operator disabled it with `--hold`).
 */
import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from '../observability/logger.ts';
import type { DeliveryMetrics } from '../observability/metrics.ts';
import type { Db } from '../store/db.ts';
import { failExpiredHeldDeliveries, findDueDeliveries, type DueDelivery } from '../store/deliveriesRepo.ts';
import { addDeliveryJobs } from './jobs.ts';
import type { DeliveryJobData } from './types.ts';

export const RECONCILE_PAGE_ROWS = 500;
export const RECONCILE_MAX_ROWS_PER_RUN = 20_000;
/** A queued row younger than this may still be getting its job from the producer. */
export const DEFAULT_RECONCILE_GRACE_MS = 5_000;

export type Reconciler = {
  /** One bounded pass; resolves to the number of rows re-enqueued. */
  runOnce(): Promise<number>;
  start(): void;
  stop(): Promise<void>;
};

export type ReconcilerOptions = {
  db: Db;
  queue: Queue<DeliveryJobData>;
  intervalMs: number;
  graceMs?: number;
  pageRows?: number;
  maxRowsPerRun?: number;
  logger: Logger;
  metrics?: DeliveryMetrics;
};

export function createReconciler(options: ReconcilerOptions): Reconciler {
  const pageRows = options.pageRows ?? RECONCILE_PAGE_ROWS;
  const maxRows = options.maxRowsPerRun ?? RECONCILE_MAX_ROWS_PER_RUN;
  const graceMs = options.graceMs ?? DEFAULT_RECONCILE_GRACE_MS;
  let cursor = '';
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<number> | undefined;
  let stopped = false;

  /** Rows whose job hash is gone from Redis. */
  const withoutLiveJob = async (rows: readonly DueDelivery[]): Promise<DueDelivery[]> => {
    const client = (await options.queue.client) as unknown as Redis;
    const pipeline = client.pipeline();
    for (const row of rows) pipeline.exists(options.queue.toKey(row.id));
    const answers = (await pipeline.exec()) ?? [];
    return rows.filter((_, i) => {
      const [err, exists] = answers[i] ?? [new Error('no answer'), 0];
      if (err) throw err;
      return Number(exists) === 0;
    });
  };

  /** Held rows past their deadline → failed (`endpoint_disabled`); critical ones counted and logged at error level. */
  const failExpiredHeld = async (): Promise<void> => {
    for (let done = 0; done < maxRows; ) {
      const failed = await failExpiredHeldDeliveries(options.db, pageRows);
      done += failed.length;
      for (const f of failed) {
        const log = { deliveryId: f.id, hookId: f.hookId, operationId: f.operationId, endpoint: f.endpointKey, reason: 'endpoint_disabled' };
        options.metrics?.finished.inc({ outcome: 'failed', transport: f.transport });
        if (f.critical) {
          options.metrics?.criticalFailures.inc();
          options.logger.error({ ...log, errorClass: 'CriticalHookDeliveryError' }, 'critical webhook delivery failed at its deadline (endpoint disabled); operation flagged');
        } else {
          options.logger.warn(log, 'delivery failed at its deadline: its endpoint stayed disabled; replayable from the ledger');
        }
      }
      if (failed.length < pageRows) break;
    }
  };

  const pass = async (): Promise<number> => {
    let seen = 0;
    let requeued = 0;
    while (seen < maxRows) {
      const rows = await findDueDeliveries(options.db, { afterId: cursor, limit: pageRows, graceMs });
      if (rows.length === 0) {
        cursor = '';
        break;
      }
      seen += rows.length;
      cursor = rows[rows.length - 1]?.id ?? '';
      const missing = await withoutLiveJob(rows);
      if (missing.length > 0) {
        await addDeliveryJobs(
          options.queue,
          missing.map((r) => ({ deliveryId: r.id, generation: r.generation })),
        );
        requeued += missing.length;
      }
      if (rows.length < pageRows) {
        cursor = '';
        break;
      }
    }
    if (requeued > 0) {
      options.metrics?.reconciled.inc(requeued);
      options.logger.info({ requeued }, 'reconciler re-enqueued deliveries that had no live job');
    }
    await failExpiredHeld();
    return requeued;
  };

  const runOnce = (): Promise<number> => {
    running ??= pass().finally(() => {
      running = undefined;
    });
    return running;
  };

  const tick = () => {
    timer = setTimeout(async () => {
      try {
        await runOnce();
      } catch (error) {
        options.logger.warn({ err: error }, 'reconciler pass failed; retrying next interval');
      }
      if (!stopped) tick();
    }, options.intervalMs);
  };

  return {
    runOnce,
    start() {
      stopped = false;
      // The first pass runs at once (worker start), then every interval.
      void runOnce()
        .catch((error: unknown) => options.logger.warn({ err: error }, 'reconciler pass failed; retrying next interval'))
        .finally(() => {
          if (!stopped) tick();
        });
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running?.catch(() => undefined);
    },
  };
}
