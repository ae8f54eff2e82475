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
import type { Logger } from '../../observability/logger.ts';
import type { DeliveryMetrics } from '../../observability/metrics.ts';
import type { Db } from '../../store/db.ts';
import {
  failExpiredHeldDeliveries,
  failUnwritableDelivery,
  findDueDeliveries,
  flagUnreportedQStashDeliveries,
  QSTASH_OUTCOME_UNKNOWN,
  type DueDelivery,
} from '../../store/deliveriesRepo.ts';
import { addDeliveryJobs } from '../../queue/jobs.ts';
import type { DeliveryQueueConnection } from '../../queue/queueConnection.ts';
import { DELIVERY_JOB_NAME, type DeliveryJobData } from '../../queue/types.ts';
import { findOrderingHeads, type OrderingKey } from '../../store/orderingRepo.ts';
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
  /** The delivery queue on hookrelay's own connection (queueConnection.ts). */
  queue: DeliveryQueueConnection;
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
   * The worker's Postgres wait (postgresWait.ts): a periodic pass that finds Postgres away reports the
   * outage (Q13: an idle worker's gauge and log too) and waits for it instead of failing each interval.
   */
  run?: <T>(work: () => Promise<T>) => Promise<T>;
};

export function createReconciler(options: ReconcilerOptions): Reconciler {
  return new LedgerReconciler(options);
}

/** Per row: the attempt count it was last re-enqueued at, and how often at that count. */
type Requeue = { generation: number; attemptCount: number; times: number };

/** The periodic pass over the ledger (see the module comment); one pass at a time. */
class LedgerReconciler implements Reconciler {
  private readonly pageRows: number;
  private readonly maxRows: number;
  private readonly graceMs: number;
  private cursor = '';
  /** Where the next page of ordering heads starts (undefined: from the first). */
  private headsAfter: OrderingKey | undefined;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<number> | undefined;
  private stopped = false;
  private readonly requeues = new Map<string, Requeue>();

  constructor(private readonly options: ReconcilerOptions) {
    this.pageRows = options.pageRows ?? RECONCILE_PAGE_ROWS;
    this.maxRows = options.maxRowsPerRun ?? RECONCILE_MAX_ROWS_PER_RUN;
    this.graceMs = options.graceMs ?? DEFAULT_RECONCILE_GRACE_MS;
  }

  runOnce(): Promise<number> {
    this.running ??= this.pass().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  start(): void {
    this.stopped = false;
    // The first pass runs at once (worker start), then every interval.
    void this.runOnce()
      .catch((error: unknown) => this.options.logger.warn({ err: error }, 'reconciler pass failed; retrying next interval'))
      .finally(() => {
        if (!this.stopped) this.tick();
      });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running?.catch(() => undefined);
  }

  private tick(): void {
    this.timer = setTimeout(async () => {
      try {
        await (this.options.run ? this.options.run(() => this.runOnce()) : this.runOnce());
      } catch (error) {
        if (!this.stopped) this.options.logger.warn({ err: error }, 'reconciler pass failed; retrying next interval');
      }
      if (!this.stopped) this.tick();
    }, this.options.intervalMs);
  }

  private async pass(): Promise<number> {
    const requeued = await this.requeueMissing();
    if (requeued > 0) {
      this.options.metrics?.reconciled.inc(requeued);
      this.options.logger.info({ requeued }, 'reconciler re-enqueued deliveries that had no live job');
    }
    await failExpiredHeld(this.options, this.pageRows, this.maxRows);
    if (this.options.flagUnreportedQStash) await flagUnreported(this.options, this.pageRows, this.maxRows);
    await this.wakeOrderingHeads();
    return requeued;
  }

  /** Due rows without a live job, one bounded slice from the cursor: re-enqueued, or failed past the re-enqueue limit. */
  private async requeueMissing(): Promise<number> {
    let seen = 0;
    let requeued = 0;
    while (seen < this.maxRows) {
      const rows = await findDueDeliveries(this.options.db, {
        afterId: this.cursor,
        limit: this.pageRows,
        graceMs: this.graceMs,
        queue: this.options.queue.name,
      });
      if (rows.length === 0) {
        this.cursor = '';
        break;
      }
      seen += rows.length;
      this.cursor = rows[rows.length - 1]?.id ?? '';
      const gone = await withoutLiveJob(this.options.queue, rows);
      const exhausted = gone.filter((row) => this.overLimit(row));
      if (exhausted.length > 0) await failWithoutOutcome(this.options, exhausted);
      const missing = gone.filter((r) => !exhausted.includes(r));
      if (missing.length > 0) {
        await addDeliveryJobs(
          this.options.queue.queue,
          missing.map((r) => ({ deliveryId: r.id, generation: r.generation })),
        );
        requeued += missing.length;
      }
      if (rows.length < this.pageRows) {
        this.cursor = '';
        break;
      }
    }
    return requeued;
  }

  /**
   * Counts a re-enqueue; true when the row already had MAX_REQUEUES_WITHOUT_OUTCOME at this
   * generation and attempt count (no job since wrote anything): then it is failed, not re-sent.
   */
  private overLimit(row: DueDelivery): boolean {
    const last = this.requeues.get(row.id);
    const same = last !== undefined && last.generation === row.generation && last.attemptCount === row.attemptCount;
    const times = same ? last.times + 1 : 1;
    this.requeues.delete(row.id); // re-inserted last: the map's order is oldest first
    if (times > MAX_REQUEUES_WITHOUT_OUTCOME) return true;
    this.requeues.set(row.id, { generation: row.generation, attemptCount: row.attemptCount, times });
    if (this.requeues.size > MAX_TRACKED_REQUEUES) this.requeues.delete(this.requeues.keys().next().value as string);
    return false;
  }

  /** Ordered heads that may go and did not change for the grace period: promote their parked jobs (a refused promote is harmless). */
  private async wakeOrderingHeads(): Promise<void> {
    const heads = await findOrderingHeads(this.options.db, { after: this.headsAfter, limit: this.pageRows, graceMs: this.graceMs });
    const last = heads.at(-1);
    this.headsAfter =
      heads.length < this.pageRows || last === undefined ? undefined : { tenant: last.tenant, operationId: last.operationId, hookId: last.hookId };
    let woken = 0;
    for (const head of heads) {
      if (!head.wake) continue;
      const promoted = await new Job<DeliveryJobData>(this.options.queue.queue, DELIVERY_JOB_NAME, { deliveryId: head.id, generation: 0 }, {}, head.id)
        .promote()
        .then(
          () => true,
          () => false,
        );
      if (promoted) woken++;
    }
    if (woken > 0) this.options.logger.info({ woken }, 'reconciler woke ordered deliveries whose wake was lost');
  }
}

async function failWithoutOutcome(options: ReconcilerOptions, rows: readonly DueDelivery[]): Promise<void> {
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
}

/** Rows whose job hash is gone from Redis. */
async function withoutLiveJob(queue: DeliveryQueueConnection, rows: readonly DueDelivery[]): Promise<DueDelivery[]> {
  const pipeline = (await queue.ready()).pipeline();
  for (const row of rows) pipeline.exists(queue.keys.job(row.id));
  const answers = (await pipeline.exec()) ?? [];
  return rows.filter((_, i) => {
    const [err, exists] = answers[i] ?? [new Error('no answer'), 0];
    if (err) throw err;
    return Number(exists) === 0;
  });
}

/** Held rows past their deadline → failed (`endpoint_disabled`); critical ones counted and logged at error level. */
async function failExpiredHeld(options: ReconcilerOptions, pageRows: number, maxRows: number): Promise<void> {
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
}

/** Q4: critical rows accepted by QStash whose outcome nobody reported by the deadline → flagged, counted and logged at error level. */
async function flagUnreported(options: ReconcilerOptions, pageRows: number, maxRows: number): Promise<void> {
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
}
