/**
 * Q2: the ledger is the source of truth. At start and every interval, rows that are due but have
 * no live BullMQ job (Redis lost its data, a producer could not reach Redis, a job was dropped
 * after too many stalls) are re-enqueued with the same id. Keyset pages, bounded per run; the
 * cursor carries over to the next run so a large backlog is walked in slices.
 *
 * Each pass also fails the held rows whose deadline passed (Q3: held for a disabled
 * endpoint is not a hiding place, unless an operator disabled it with `--hold`), flags the
 * critical rows QStash accepted whose outcome no callback reported by their deadline (Q4), and wakes the
 * ordered deliveries (SEC-H7) that may go but whose wake was lost (a worker killed between an
 * outcome and its wake, a flushed Redis): their parked jobs are promoted.
 */
import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from '../observability/logger.ts';
import type { DeliveryMetrics } from '../observability/metrics.ts';
import type { Db } from '../store/db.ts';
import {
  failExpiredHeldDeliveries,
  failUnwritableDelivery,
  findDueDeliveries,
  flagUnreportedQStashDeliveries,
  QSTASH_OUTCOME_UNKNOWN,
  type DueDelivery,
} from '../store/deliveriesRepo.ts';
import { addDeliveryJobs } from '../queue/jobs.ts';
import { DELIVERY_JOB_NAME, type DeliveryJobData } from '../queue/types.ts';
import { findOrderingHeads, type OrderingKey } from '../store/orderingRepo.ts';
import { Job } from 'bullmq';

const RECONCILE_PAGE_ROWS = 500;
const RECONCILE_MAX_ROWS_PER_RUN = 20_000;
/** A queued row younger than this may still be getting its job from the producer. */
const DEFAULT_RECONCILE_GRACE_MS = 5_000;
/**
 * Re-enqueues of one row at one attempt count (its jobs keep ending without an outcome written)
 * before the row is failed with REQUEUE_LIMIT_REASON instead: never an endless re-send.
 */
export const MAX_REQUEUES_WITHOUT_OUTCOME = 5;
export const REQUEUE_LIMIT_REASON = 'requeued_without_outcome';
/** Tracked rows kept at most; the oldest are forgotten first. */
const MAX_TRACKED_REQUEUES = 10_000;

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
  /**
   * Q4: no QStash callbacks come back to this deployment (no HOOKRELAY_PUBLIC_URL): critical rows
   * QStash accepted are flagged at their deadline, their outcome unknown.
   */
  flagUnreportedQStash?: boolean;
  /**
   * The worker's Postgres gate (pgGate.ts): a periodic pass that finds Postgres away reports the
   * outage (Q13: an idle worker's gauge and log too) and waits for it instead of failing each interval.
   */
  run?: <T>(work: () => Promise<T>) => Promise<T>;
};

export function createReconciler(options: ReconcilerOptions): Reconciler {
  const pageRows = options.pageRows ?? RECONCILE_PAGE_ROWS;
  const maxRows = options.maxRowsPerRun ?? RECONCILE_MAX_ROWS_PER_RUN;
  const graceMs = options.graceMs ?? DEFAULT_RECONCILE_GRACE_MS;
  let cursor = '';
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<number> | undefined;
  let stopped = false;
  /** Per row: the attempt count it was last re-enqueued at, and how often at that count. */
  const requeues = new Map<string, { generation: number; attemptCount: number; times: number }>();

  /**
   * Counts a re-enqueue; true when the row already had MAX_REQUEUES_WITHOUT_OUTCOME at this
   * generation and attempt count (no job since wrote anything): then it is failed, not re-sent.
   */
  const overLimit = (row: DueDelivery): boolean => {
    const last = requeues.get(row.id);
    const same = last !== undefined && last.generation === row.generation && last.attemptCount === row.attemptCount;
    const times = same ? last.times + 1 : 1;
    requeues.delete(row.id); // re-inserted last: the map's order is oldest first
    if (times > MAX_REQUEUES_WITHOUT_OUTCOME) return true;
    requeues.set(row.id, { generation: row.generation, attemptCount: row.attemptCount, times });
    if (requeues.size > MAX_TRACKED_REQUEUES) requeues.delete(requeues.keys().next().value as string);
    return false;
  };

  const failWithoutOutcome = async (rows: readonly DueDelivery[]): Promise<void> => {
    for (const row of rows) {
      const failed = await failUnwritableDelivery(options.db, {
        id: row.id,
        generation: row.generation,
        attemptCount: row.attemptCount,
        reason: REQUEUE_LIMIT_REASON,
      });
      if (failed) {
        options.logger.error(
          { deliveryId: row.id, generation: row.generation, requeues: MAX_REQUEUES_WITHOUT_OUTCOME, errorClass: REQUEUE_LIMIT_REASON },
          'a delivery was re-enqueued repeatedly without any outcome written; recorded as failed instead of re-sent (replayable)',
        );
      }
    }
  };

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

  /** Ordered heads that may go and did not change for the grace period: promote their parked jobs (a refused promote is harmless). */
  let headsAfter: OrderingKey | undefined;
  const wakeOrderingHeads = async (): Promise<void> => {
    const heads = await findOrderingHeads(options.db, { after: headsAfter, limit: pageRows, graceMs });
    const last = heads.at(-1);
    headsAfter = heads.length < pageRows || last === undefined ? undefined : { operationId: last.operationId, hookId: last.hookId };
    let woken = 0;
    for (const head of heads) {
      if (!head.wake) continue;
      const promoted = await new Job<DeliveryJobData>(options.queue, DELIVERY_JOB_NAME, { deliveryId: head.id, generation: 0 }, {}, head.id).promote().then(
        () => true,
        () => false,
      );
      if (promoted) woken++;
    }
    if (woken > 0) options.logger.info({ woken }, 'reconciler woke ordered deliveries whose wake was lost');
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
          options.logger.error(
            { ...log, errorClass: 'CriticalHookDeliveryError' },
            'critical webhook delivery failed at its deadline (endpoint disabled); operation flagged',
          );
        } else {
          options.logger.warn(log, 'delivery failed at its deadline: its endpoint stayed disabled; replayable from the ledger');
        }
      }
      if (failed.length < pageRows) break;
    }
  };

  /** Q4: critical rows accepted by QStash whose outcome nobody reported by the deadline → flagged, counted and logged at error level. */
  const flagUnreported = async (): Promise<void> => {
    for (let done = 0; done < maxRows; ) {
      const marked = await flagUnreportedQStashDeliveries(options.db, pageRows);
      done += marked.length;
      for (const m of marked) {
        options.metrics?.criticalFailures.inc();
        options.logger.error(
          {
            deliveryId: m.id,
            hookId: m.hookId,
            operationId: m.operationId,
            endpoint: m.endpointKey,
            errorClass: 'CriticalHookDeliveryError',
            reason: QSTASH_OUTCOME_UNKNOWN,
          },
          'critical webhook delivery accepted by QStash has no reported outcome past its deadline (no QStash callbacks: set HOOKRELAY_PUBLIC_URL); operation flagged',
        );
      }
      if (marked.length < pageRows) break;
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
      const gone = await withoutLiveJob(rows);
      const exhausted = gone.filter(overLimit);
      if (exhausted.length > 0) await failWithoutOutcome(exhausted);
      const missing = gone.filter((r) => !exhausted.includes(r));
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
    if (options.flagUnreportedQStash) await flagUnreported();
    await wakeOrderingHeads();
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
        await (options.run ? options.run(runOnce) : runOnce());
      } catch (error) {
        if (!stopped) options.logger.warn({ err: error }, 'reconciler pass failed; retrying next interval');
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
