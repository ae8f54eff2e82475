/**
 * The worker's ledger access on the hot path: the outcomes (and the rare reads and in_flight
 * marks) of concurrent jobs are coalesced (group commit, see batcher.ts) into one statement per
 * kind per flush. Every call resolves only after the statement carrying it committed, so no job
 * is acknowledged before its row is written.
 */
import type { Db } from '../store/db.ts';
import {
  loadClaimableDeliveries,
  markDeliveriesInFlight,
  recordAttemptOutcomes,
  type AttemptOutcome,
  type ClaimedDelivery,
  type InFlightMark,
} from '../store/deliveriesRepo.ts';
import { createBatcher } from './batcher.ts';

/** Rows per flush. */
export const LEDGER_BATCH_ROWS = 500;
/** Flushes in flight at once (the worker's pool has a few more connections). */
export const LEDGER_CONCURRENT_FLUSHES = 3;

export type LedgerWriter = {
  /** The row when it may still be attempted; undefined when delivered, failed, accepted by QStash, or unknown. */
  load(id: string): Promise<ClaimedDelivery | undefined>;
  record(outcome: AttemptOutcome): Promise<void>;
  markInFlight(mark: InFlightMark): Promise<void>;
  drain(): Promise<void>;
};

type LedgerOp = { kind: 'load'; id: string } | { kind: 'record'; outcome: AttemptOutcome } | { kind: 'mark'; mark: InFlightMark };

export function createLedgerWriter(db: Db): LedgerWriter {
  const batcher = createBatcher<LedgerOp, ClaimedDelivery | undefined>({
    maxBatch: LEDGER_BATCH_ROWS,
    maxConcurrent: LEDGER_CONCURRENT_FLUSHES,
    async run(ops) {
      // Outcomes first: a read or mark in the same flush then sees the row as the outcome left it.
      // One UPDATE changes a row once, so a second outcome for an id (a duplicate job) waits for
      // the next statement instead of being merged away.
      let outcomes = ops.flatMap((op) => (op.kind === 'record' ? [op.outcome] : []));
      while (outcomes.length > 0) {
        const seen = new Set<string>();
        const now: AttemptOutcome[] = [];
        const later: AttemptOutcome[] = [];
        for (const o of outcomes) {
          (seen.has(o.id) ? later : now).push(o);
          seen.add(o.id);
        }
        await recordAttemptOutcomes(db, now);
        outcomes = later;
      }
      const marks = ops.flatMap((op) => (op.kind === 'mark' ? [op.mark] : []));
      if (marks.length > 0) await markDeliveriesInFlight(db, marks);
      const loadIds = [...new Set(ops.flatMap((op) => (op.kind === 'load' ? [op.id] : [])))];
      const byId = new Map((await loadClaimableDeliveries(db, loadIds)).map((r) => [r.id, r]));
      return ops.map((op) => (op.kind === 'load' ? byId.get(op.id) : undefined));
    },
  });
  return {
    load: (id) => batcher.submit({ kind: 'load', id }),
    async record(outcome) {
      await batcher.submit({ kind: 'record', outcome });
    },
    async markInFlight(mark) {
      await batcher.submit({ kind: 'mark', mark });
    },
    drain: () => batcher.drain(),
  };
}
