/**
 * The worker's ledger access on the hot path: the claims and outcomes of concurrent jobs are
 * coalesced (group commit, see batcher.ts) into one statement per flush. Every call resolves only
 * after the statement carrying it committed, so no job is acknowledged before its row is written.
 */
import type { Db } from '../store/db.ts';
import { flushLedger, type AttemptOutcome, type ClaimedDelivery } from '../store/deliveriesRepo.ts';
import { createBatcher } from './batcher.ts';

/** Rows (claims + outcomes) per statement. */
export const LEDGER_BATCH_ROWS = 500;
/** Statements in flight at once (the worker's pool has a few more connections). */
export const LEDGER_CONCURRENT_FLUSHES = 3;

export type LedgerWriter = {
  /** undefined when the row is not claimable (already delivered, failed, accepted, or unknown). */
  claim(id: string): Promise<ClaimedDelivery | undefined>;
  record(outcome: AttemptOutcome): Promise<void>;
  drain(): Promise<void>;
};

type LedgerOp = { kind: 'claim'; id: string } | { kind: 'record'; outcome: AttemptOutcome };

/** `leaseMarginMs` is added to each webhook's timeout to form the in_flight lease (see claimDeliveries). */
export function createLedgerWriter(db: Db, leaseMarginMs?: number): LedgerWriter {
  const batcher = createBatcher<LedgerOp, ClaimedDelivery | undefined>({
    maxBatch: LEDGER_BATCH_ROWS,
    maxConcurrent: LEDGER_CONCURRENT_FLUSHES,
    async run(ops) {
      const outcomes = ops.flatMap((op) => (op.kind === 'record' ? [op.outcome] : []));
      const recorded = new Set(outcomes.map((o) => o.id));
      // An id is never claimed and recorded in one statement (one row updated twice): such a
      // claim cannot come from a live job anyway, and is simply answered "not claimable".
      const claimIds = [...new Set(ops.flatMap((op) => (op.kind === 'claim' && !recorded.has(op.id) ? [op.id] : [])))];
      const rows = await flushLedger(db, claimIds, outcomes, leaseMarginMs);
      const byId = new Map(rows.map((r) => [r.id, r]));
      return ops.map((op) => (op.kind === 'claim' ? byId.get(op.id) : undefined));
    },
  });
  return {
    claim: (id) => batcher.submit({ kind: 'claim', id }),
    async record(outcome) {
      await batcher.submit({ kind: 'record', outcome });
    },
    drain: () => batcher.drain(),
  };
}
