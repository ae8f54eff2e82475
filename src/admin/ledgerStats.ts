/**
 * Ledger statistics for operators: counts by status and the oldest undelivered row (`hookrelay
 * stats`, the console's overview, the worker's gauges) and attempts per minute (the console's chart).
 */
import type { Db } from '../store/db.ts';
import { countAttemptsPerMinute, countDeliveriesByStatus, type MinuteCount, oldestUndeliveredCreatedAt, type StatusCount } from '../store/ledgerStatsRepo.ts';

type LedgerStats = {
  byStatus: StatusCount[];
  /** The oldest row still queued, in flight or retrying (the worker's gauge). */
  oldestUndeliveredAt: Date | null;
  /** The oldest row held for a disabled endpoint: undelivered too, but waiting for an operator, not for the worker. */
  oldestHeldAt: Date | null;
};

/**
 * Ledger counts by status and the age of the oldest undelivered row (for `hookrelay stats`).
 * With `queue`, that queue's rows only (and rows stored before rows carried a queue): several
 * queues may share one ledger, and each one's worker, CLI and console speak for their own.
 */
export async function ledgerStats(db: Db, queue?: string): Promise<LedgerStats> {
  const byStatus = await countDeliveriesByStatus(db, queue);
  const oldest = await oldestUndeliveredCreatedAt(db, queue);
  return { byStatus, oldestUndeliveredAt: oldest.undelivered, oldestHeldAt: oldest.held };
}

/** Held rows are undelivered too: what an operator reads as "oldest undelivered" counts them (the gauge does not). */
export function oldestIncludingHeld(stats: Pick<LedgerStats, 'oldestUndeliveredAt' | 'oldestHeldAt'>): Date | null {
  const { oldestUndeliveredAt: a, oldestHeldAt: b } = stats;
  return a === null ? b : b === null ? a : a < b ? a : b;
}

/**
 * Delivery attempts per minute by outcome (`delivered`, `failed`, `accepted_by_qstash`) since
 * `since`, from each row's attempt list — for the console's overview chart. Only rows touched
 * since then are read (an attempt updates its row).
 */
export async function attemptsPerMinute(db: Db, since: Date): Promise<MinuteCount[]> {
  return countAttemptsPerMinute(db, since);
}
