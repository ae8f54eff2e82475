/**
 * The worker's ledger access on the hot path: the outcomes (and the rare reads and in_flight
 * marks) of concurrent jobs are coalesced (group commit, see batcher.ts) into one statement per
 * kind per flush. Every call resolves only after the statement carrying it committed, so no job
 * is acknowledged before its row is written.
 *
 * One bad row never fails its batch-mates: when Postgres refuses a batched UPDATE for its data,
 * the outcomes are written again one by one, so each row is written once and only the bad one
 * gets an error. An outcome refused even alone is replaced by `failed` / `outcome_unwritable`
 * (bounded: never an endless re-send) and its caller gets an OutcomeNotStoredError.
 */
import { isRowDataError } from '../../contract/storageError.ts';
import { StorageError, OutcomeNotStoredError } from '../../contract/errors.ts';
import { type Logger, silentLogger } from '../../observability/logger.ts';
import type { Db } from '../../store/db.ts';
import {
  claimableGenerations,
  failUnwritableDelivery,
  loadClaimableDeliveries,
  markDeliveriesInFlight,
  recordAttemptOutcomes,
  type AttemptOutcome,
  type ClaimedDelivery,
  type InFlightMark,
} from '../../store/deliveriesRepo.ts';
import { BatchItemFailure, createBatcher } from '../../queue/batcher.ts';

/** Rows per flush. */
const LEDGER_BATCH_ROWS = 500;
/** Flushes in flight at once (the worker's pool has a few more connections). */
const LEDGER_CONCURRENT_FLUSHES = 3;
/** The error class of a delivery whose attempt outcome Postgres refused even alone. */
export const OUTCOME_UNWRITABLE = 'outcome_unwritable';

export type LedgerWriter = {
  /** The row when it may still be attempted; undefined when delivered, failed, accepted by QStash, or unknown. */
  load(id: string): Promise<ClaimedDelivery | undefined>;
  /** F3: the row's generation when it may still be attempted (no payload read); undefined when final or unknown. */
  claimableGeneration(id: string): Promise<number | undefined>;
  record(outcome: AttemptOutcome): Promise<void>;
  markInFlight(mark: InFlightMark): Promise<void>;
  drain(): Promise<void>;
};

type LedgerOp = { kind: 'load'; id: string } | { kind: 'record'; outcome: AttemptOutcome } | { kind: 'mark'; mark: InFlightMark };

/** F3 status reads: their own flushes, so a job's read never waits behind other jobs' outcome writes. */
const CHECK_CONCURRENT_FLUSHES = 2;

export type LedgerWriterOptions = { logger?: Logger };

/**
 * Writes outcomes (distinct ids) in one statement; when Postgres refuses it for its data, row by
 * row. Returns the failures by index (an outcome refused alone is failed as `outcome_unwritable`).
 */
async function recordIsolated(db: Db, outcomes: readonly AttemptOutcome[], logger: Logger): Promise<Map<number, unknown>> {
  const failures = new Map<number, unknown>();
  let batchError: unknown;
  try {
    await recordAttemptOutcomes(db, outcomes);
    return failures;
  } catch (error) {
    // Not about one row's data (connection lost, pool closed): every outcome waits for a retry.
    if (!isRowDataError(error)) throw error;
    batchError = error;
    if (outcomes.length > 1) logger.warn({ err: error, outcomes: outcomes.length }, 'batched outcome write refused; writing its rows one by one');
  }
  for (const [i, outcome] of outcomes.entries()) {
    let error: unknown = batchError;
    if (outcomes.length > 1) {
      try {
        await recordAttemptOutcomes(db, [outcome]);
        continue;
      } catch (rowError) {
        error = rowError;
      }
    }
    failures.set(i, isRowDataError(error) ? await replaceUnwritable(db, outcome, error, logger) : error);
  }
  return failures;
}

/** The outcome itself cannot be stored: the row becomes `failed` (outcome_unwritable) so it is never re-sent. */
async function replaceUnwritable(db: Db, outcome: AttemptOutcome, cause: unknown, logger: Logger): Promise<unknown> {
  const sqlState = cause instanceof StorageError ? cause.sqlState : undefined;
  try {
    await failUnwritableDelivery(db, { id: outcome.id, generation: outcome.attempt.generation, reason: OUTCOME_UNWRITABLE });
  } catch (error) {
    return error;
  }
  logger.error(
    { deliveryId: outcome.id, status: outcome.status, sqlState, errorClass: OUTCOME_UNWRITABLE },
    'an attempt outcome could not be stored; the delivery is recorded as failed (outcome_unwritable) and will not be re-sent',
  );
  return new OutcomeNotStoredError(outcome.id, sqlState);
}

export function createLedgerWriter(db: Db, options: LedgerWriterOptions = {}): LedgerWriter {
  const logger = options.logger ?? silentLogger();
  const checks = createBatcher<string, number | undefined>({
    maxBatch: LEDGER_BATCH_ROWS,
    maxConcurrent: CHECK_CONCURRENT_FLUSHES,
    async run(ids) {
      const generations = await claimableGenerations(db, [...new Set(ids)]);
      return ids.map((id) => generations.get(id));
    },
  });
  const batcher = createBatcher<LedgerOp, ClaimedDelivery | undefined>({
    maxBatch: LEDGER_BATCH_ROWS,
    maxConcurrent: LEDGER_CONCURRENT_FLUSHES,
    async run(ops) {
      // Outcomes first: a read or mark in the same flush then sees the row as the outcome left it.
      // One UPDATE changes a row once, so a second outcome for an id (a duplicate job) waits for
      // the next statement instead of being merged away.
      const failed = new Map<number, unknown>(); // op index → its own error
      let pending = ops.flatMap((op, i) => (op.kind === 'record' ? [{ i, outcome: op.outcome }] : []));
      while (pending.length > 0) {
        const seen = new Set<string>();
        const now: typeof pending = [];
        const later: typeof pending = [];
        for (const p of pending) {
          (seen.has(p.outcome.id) ? later : now).push(p);
          seen.add(p.outcome.id);
        }
        const failures = await recordIsolated(
          db,
          now.map((p) => p.outcome),
          logger,
        );
        for (const [k, error] of failures) failed.set((now[k] as (typeof now)[number]).i, error);
        pending = later;
      }
      const marks = ops.flatMap((op) => (op.kind === 'mark' ? [op.mark] : []));
      if (marks.length > 0) await markDeliveriesInFlight(db, marks);
      const loadIds = [...new Set(ops.flatMap((op) => (op.kind === 'load' ? [op.id] : [])))];
      const byId = new Map((await loadClaimableDeliveries(db, loadIds)).map((r) => [r.id, r]));
      return ops.map((op, i) => (failed.has(i) ? new BatchItemFailure(failed.get(i)) : op.kind === 'load' ? byId.get(op.id) : undefined));
    },
  });
  return {
    load: (id) => batcher.submit({ kind: 'load', id }),
    claimableGeneration: (id) => checks.submit(id),
    async record(outcome) {
      await batcher.submit({ kind: 'record', outcome });
    },
    async markInFlight(mark) {
      await batcher.submit({ kind: 'mark', mark });
    },
    drain: async () => {
      await Promise.all([batcher.drain(), checks.drain()]);
    },
  };
}
