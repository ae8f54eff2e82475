/**
 * The ledger's statistics reads (admin/ledgerStats.ts shapes them for `hookrelay stats`, the
 * console's overview and the worker's gauges): every statement here, none in admin/.
 */
import { sql } from 'drizzle-orm';
import { rowsOf, type Db } from './db.ts';

export type StatusCount = { status: string; count: number };

/** With `queue`, that queue's rows and rows stored before rows carried a queue; else every row. */
function ofQueue(queue: string | undefined) {
  return queue === undefined ? sql`TRUE` : sql`(queue IS NULL OR queue = ${queue})`;
}

/** Rows per status (of `queue` when given), by status name. */
export async function countDeliveriesByStatus(db: Db, queue?: string): Promise<StatusCount[]> {
  const counts = await db.execute(sql`SELECT status, count(*)::int AS count FROM deliveries WHERE ${ofQueue(queue)} GROUP BY status ORDER BY status`);
  return rowsOf<StatusCount>(counts).map((r) => ({ status: r.status, count: Number(r.count) }));
}

/** When the oldest row still queued, in flight or retrying, and the oldest held row, were created (null: none). */
export async function oldestUndeliveredCreatedAt(db: Db, queue?: string): Promise<{ undelivered: Date | null; held: Date | null }> {
  const where = ofQueue(queue);
  const oldest = await db.execute(sql`
    SELECT (SELECT min(created_at) FROM deliveries WHERE status IN ('queued', 'in_flight', 'retrying') AND ${where}) AS oldest,
           (SELECT min(created_at) FROM deliveries WHERE status = 'held' AND ${where}) AS oldest_held`);
  const row = rowsOf<{ oldest: Date | string | null; oldest_held: Date | string | null }>(oldest)[0];
  const at = (raw: Date | string | null | undefined) => (raw === null || raw === undefined ? null : new Date(raw));
  return { undelivered: at(row?.oldest), held: at(row?.oldest_held) };
}

export type MinuteCount = { minute: Date; outcome: string; count: number };

/** Attempts per minute by outcome since `since`, from each row's attempt list; only rows updated since then are read. */
export async function countAttemptsPerMinute(db: Db, since: Date): Promise<MinuteCount[]> {
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
