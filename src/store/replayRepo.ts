import { sql } from 'drizzle-orm';
import { rowsOf, type Db } from './db.ts';

export type ReplayClaim = { id: string; generation: number; endpointKey: string | null; tenant: string };

/**
 * Statuses a replay may take: `failed`, `held` (never attempted: its endpoint was disabled), and
 * `accepted_by_qstash` only when asked (Q12).
 */
export function replayableStatuses(includeAccepted: boolean): string[] {
  return includeAccepted ? ['failed', 'held', 'accepted_by_qstash'] : ['failed', 'held'];
}

/**
 * Q10: move the rows back to `queued` under a new generation (its own deadline, Q3) (a new QStash deduplication id, Q7)
 * with a fresh attempt budget (the retry schedule counts the new generation's attempts; the
 * row's `attempt_count` keeps counting every attempt); the id — and so `webhook-id` — stays. One conditional UPDATE:
 * a row that has since been delivered, or that an earlier (interrupted) replay already took, is
 * not returned, so a re-run never enqueues it twice.
 */
export async function claimForReplay(db: Db, ids: readonly string[], includeAccepted: boolean, traceContext?: string, queue?: string): Promise<ReplayClaim[]> {
  if (ids.length === 0) return [];
  // With tracing on, the new generation's attempts continue the replay's trace (linked to the original).
  const result = await db.execute(sql`
    UPDATE deliveries
       SET status = 'queued', generation = generation + 1,
           next_attempt_at = now(), lease_expires_at = NULL, updated_at = now(),
           deadline_at = NULL, failure_reason = NULL,
           trace_context = COALESCE(${traceContext ?? null}::text, trace_context)
     WHERE id = ANY(${sql.param([...ids])}::text[])
       AND status = ANY(${sql.param(replayableStatuses(includeAccepted))}::text[])
       ${queue === undefined ? sql`` : sql`AND (queue IS NULL OR queue = ${queue})`}
    RETURNING id, generation, endpoint_key, tenant`);
  return rowsOf<{ id: string; generation: number; endpoint_key: string | null; tenant: string | null }>(result).map((r) => ({
    id: r.id,
    generation: Number(r.generation),
    endpointKey: r.endpoint_key ?? null,
    tenant: r.tenant ?? 'default',
  }));
}

/** The stored trace context of each id that has one (a replay links its span to them). */
export async function traceContextsOf(db: Db, ids: readonly string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  const result = await db.execute(sql`SELECT trace_context FROM deliveries WHERE id = ANY(${sql.param([...ids])}::text[]) AND trace_context IS NOT NULL`);
  return rowsOf<{ trace_context: string }>(result).map((r) => r.trace_context);
}

/** Those of `ids` whose rows carry a sequence (ordered deliveries), in (operation, hook, sequence) order (SEC-H7). */
export async function sequencedIdsInOrder(db: Db, ids: readonly string[]): Promise<string[]> {
  const result = await db.execute(sql`
    SELECT id FROM deliveries WHERE id = ANY(${sql.param([...ids])}::text[]) AND sequence IS NOT NULL
     ORDER BY operation_id, hook_id, sequence`);
  return rowsOf<{ id: string }>(result).map((r) => r.id);
}
