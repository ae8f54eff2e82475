/**
 * The worker's ledger access on the hot path: claims and outcomes of concurrent jobs coalesced
 * into one statement each (see batcher.ts). Every call resolves only after its row is written.
 */
import type { Db } from '../store/db.ts';
import { claimDeliveries, recordAttemptOutcomes, type AttemptOutcome, type ClaimedDelivery } from '../store/deliveriesRepo.ts';
import { createBatcher } from './batcher.ts';

/** Rows per claim / outcome statement. */
export const LEDGER_BATCH_ROWS = 500;
/** Statements of each kind in flight at once (the worker's pool has a few more connections). */
export const LEDGER_CONCURRENT_FLUSHES = 2;

export type LedgerWriter = {
  /** undefined when the row is not claimable (already delivered, failed, accepted, or unknown). */
  claim(id: string): Promise<ClaimedDelivery | undefined>;
  record(outcome: AttemptOutcome): Promise<void>;
  drain(): Promise<void>;
};

export function createLedgerWriter(db: Db): LedgerWriter {
  const claims = createBatcher<string, ClaimedDelivery | undefined>({
    maxBatch: LEDGER_BATCH_ROWS,
    maxConcurrent: LEDGER_CONCURRENT_FLUSHES,
    async run(ids) {
      const rows = await claimDeliveries(db, [...new Set(ids)]);
      const byId = new Map(rows.map((r) => [r.id, r]));
      return ids.map((id) => byId.get(id));
    },
  });
  const outcomes = createBatcher<AttemptOutcome, void>({
    maxBatch: LEDGER_BATCH_ROWS,
    maxConcurrent: LEDGER_CONCURRENT_FLUSHES,
    async run(items) {
      await recordAttemptOutcomes(db, items);
      return items.map(() => undefined);
    },
  });
  return {
    claim: (id) => claims.submit(id),
    record: (outcome) => outcomes.submit(outcome),
    async drain() {
      await Promise.all([claims.drain(), outcomes.drain()]);
    },
  };
}
