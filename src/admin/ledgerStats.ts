/**
 * Ledger statistics for operators: counts by status and the oldest undelivered row (`hookrelay
 * stats`, the console's overview, the worker's gauges) and attempts per minute (the console's chart).
 */
import { sql } from 'drizzle-orm';
import { rowsOf, type Db } from '../store/db.ts';

type StatusCount = { status: string; count: number };

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
  const ofQueue = queue === undefined ? sql`TRUE` : sql`(queue IS NULL OR queue = ${queue})`;
  const counts = await db.execute(sql`SELECT status, count(*)::int AS count FROM deliveries WHERE ${ofQueue} GROUP BY status ORDER BY status`);
  const oldest = await db.execute(sql`
    SELECT (SELECT min(created_at) FROM deliveries WHERE status IN ('queued', 'in_flight', 'retrying') AND ${ofQueue}) AS oldest,
           (SELECT min(created_at) FROM deliveries WHERE status = 'held' AND ${ofQueue}) AS oldest_held`);
  const byStatus = rowsOf<StatusCount>(counts).map((r) => ({ status: r.status, count: Number(r.count) }));
  const row = rowsOf<{ oldest: Date | string | null; oldest_held: Date | string | null }>(oldest)[0];
  const at = (raw: Date | string | null | undefined) => (raw === null || raw === undefined ? null : new Date(raw));
  return { byStatus, oldestUndeliveredAt: at(row?.oldest), oldestHeldAt: at(row?.oldest_held) };
}

/** Held rows are undelivered too: what an operator reads as "oldest undelivered" counts them (the gauge does not). */
export function oldestIncludingHeld(stats: Pick<LedgerStats, 'oldestUndeliveredAt' | 'oldestHeldAt'>): Date | null {
  const { oldestUndeliveredAt: a, oldestHeldAt: b } = stats;
  return a === null ? b : b === null ? a : a < b ? a : b;
}

export type MinuteCount = { minute: Date; outcome: string; count: number };

/**
 * Delivery attempts per minute by outcome (`delivered`, `failed`, `accepted_by_qstash`) since
 * `since`, from each row's attempt list — for the console's overview chart. Only rows touched
 * since then are read (an attempt updates its row).
 */
export async function attemptsPerMinute(db: Db, since: Date): Promise<MinuteCount[]> {
  const result = await db.execute(sql`
    SELECT (floor(extract(epoch FROM (a->>'at')::timestamptz) / 60) * 60)::bigint AS minute, a->>'outcome' AS outcome, count(*)::int AS count
    FROM deliveries d, jsonb_array_elements(d.attempts) a
    WHERE d.updated_at >= ${since} AND (a->>'at')::timestamptz >= ${since}
    GROUP BY 1, 2 ORDER BY 1`);
  return rowsOf<{ minute: string | number; outcome: string; count: number }>(result).map((r) => ({
    minute: new Date(Number(r.minute) * 1000),
    outcome: r.outcome,
    count: Number(r.count),
  }));
}
