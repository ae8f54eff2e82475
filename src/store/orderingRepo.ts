/**
 * Ordered delivery per (tenant, operation, hook) (SEC-H7: a hook's order is its own; no other
 * hook, of the caller or the environment, can hold it; N2: nor another tenant's, should the app
 * give two tenants one operation id), Postgres as the truth. "(operation, hook)" below always
 * means within its tenant.
 *
 * - The producer numbers the rows it stored (`assignSequences`, same transaction as the INSERT):
 *   contiguous 1..N per (operation, hook), from a counter row locked by the upsert, so
 *   concurrent producer processes never give out one number twice or leave a gap.
 * - A row is "open" while it holds back the later ones: unfinished (queued, retrying, in_flight,
 *   held), or failed with `onFailure: 'block'`. Delivered, failed (continue), skipped and
 *   accepted rows are settled. The worker's gate lets sequence n go when no open row of its
 *   (operation, hook) has a smaller sequence — all of them, not only n-1, so a row failed at
 *   its deadline while an earlier one still retries never lets a later one overtake that one.
 * - The head (smallest open row) is the one to wake when a row settles (`orderingHeads`).
 */
import { sql } from 'drizzle-orm';
import { ORDERING_BLOCKED_REASON } from '../contract/delivery.ts';
import { rowsOf, type Db } from './db.ts';

/** The predicate of the partial index deliveries_ordering_open_idx (schema.ts), word for word, so the planner uses it. */
const ORDERING_OPEN_SQL = sql.raw(
  `sequence IS NOT NULL AND (status IN ('queued', 'retrying', 'in_flight', 'held') OR (status = 'failed' AND (hook -> 'webhook' ->> 'onFailure') = 'block'))`,
);

/** An ordered row just stored, in the order its enqueue accepted it (its tenant is the stored row's). */
export type SequenceRequest = { id: string; operationId: string; hookId: string };

/**
 * SEC-H7's numbering, over a relation `v (id, tenant, operation_id, hook_id, ordered, i)` defined before
 * it (`i`: the order the rows were accepted in): each (operation, hook)'s ordered rows counted,
 * its counter bumped by that count in one upsert (the counter row stays locked until commit, so
 * a concurrent producer's rows of the same operation and hook get the numbers after these), and
 * `numbered (id, seq)`: contiguous numbers in `i` order. Shared by assignSequences and the
 * producer's insert-and-number statement (deliveriesRepo.ts), so both number alike.
 */
export const SEQUENCE_NUMBERING_CTES = `
    counts AS (SELECT tenant AS tn, operation_id AS op, hook_id AS ep, count(*)::int AS n FROM v WHERE ordered GROUP BY tenant, operation_id, hook_id),
    bumped AS (
      INSERT INTO delivery_sequences (tenant, operation_id, hook_id, last_sequence)
      SELECT tn, op, ep, n FROM counts ORDER BY tn, op, ep
      ON CONFLICT (tenant, operation_id, hook_id) DO UPDATE SET last_sequence = delivery_sequences.last_sequence + EXCLUDED.last_sequence
      RETURNING tenant, operation_id, hook_id, last_sequence),
    numbered AS (
      SELECT v.id, (b.last_sequence - c.n + row_number() OVER (PARTITION BY v.tenant, v.operation_id, v.hook_id ORDER BY v.i))::int AS seq
        FROM v JOIN counts AS c ON c.tn = v.tenant AND c.op = v.operation_id AND c.ep = v.hook_id
               JOIN bumped AS b ON b.tenant = v.tenant AND b.operation_id = v.operation_id AND b.hook_id = v.hook_id
       WHERE v.ordered)`;

/**
 * Numbers the rows (in the given order) within their (operation, hook): one statement that
 * bumps each counter by its row count and writes each row's number. Run it in the transaction
 * that inserted the rows: the counter row stays locked until commit, so a concurrent producer's
 * rows of the same operation and hook get the numbers after these. Returns id → sequence.
 */
export async function assignSequences(db: Db, rows: readonly SequenceRequest[]): Promise<Map<string, number>> {
  if (rows.length === 0) return new Map();
  const result = await db.execute(sql`
    WITH v AS (
      SELECT u.id, d.tenant, u.operation_id, u.hook_id, true AS ordered, u.i
        FROM unnest(${sql.param(rows.map((r) => r.id))}::text[], ${sql.param(rows.map((r) => r.operationId))}::text[],
                    ${sql.param(rows.map((r) => r.hookId))}::text[]) WITH ORDINALITY AS u(id, operation_id, hook_id, i)
        JOIN deliveries AS d ON d.id = u.id),
    ${sql.raw(SEQUENCE_NUMBERING_CTES)}
    UPDATE deliveries AS d SET sequence = numbered.seq FROM numbered WHERE d.id = numbered.id
    RETURNING d.id, d.sequence`);
  return new Map(rowsOf<{ id: string; sequence: number }>(result).map((r) => [r.id, Number(r.sequence)]));
}

/** One ordered delivery asking whether it may go. */
export type OrderingQuestion = { tenant: string; operationId: string; hookId: string; sequence: number };

/**
 * What holds an ordered delivery back: nothing (it may go), an earlier unfinished row (`wait`), or
 * an earlier row failed under `onFailure: 'block'` (`blocked`: an operator replays or skips it).
 */
export type OrderingAnswer = { kind: 'go' } | { kind: 'wait' | 'blocked'; id: string; sequence: number };

/** Many questions in one statement (one index probe each: the smallest open row before it). */
export async function firstOpenPredecessors(db: Db, questions: readonly OrderingQuestion[]): Promise<OrderingAnswer[]> {
  if (questions.length === 0) return [];
  const result = await db.execute(sql`
    SELECT v.i, p.id, p.sequence, p.status
      FROM unnest(${sql.param(questions.map((q) => q.tenant))}::text[], ${sql.param(questions.map((q) => q.operationId))}::text[],
                  ${sql.param(questions.map((q) => q.hookId))}::text[], ${sql.param(questions.map((q) => q.sequence))}::int[])
           WITH ORDINALITY AS v(tn, op, ep, seq, i)
      LEFT JOIN LATERAL (
        SELECT d.id, d.sequence, d.status FROM deliveries AS d
         WHERE d.tenant = v.tn AND d.operation_id = v.op AND d.hook_id = v.ep AND d.sequence < v.seq AND ${ORDERING_OPEN_SQL}
         ORDER BY d.sequence LIMIT 1) AS p ON true`);
  const answers: OrderingAnswer[] = questions.map(() => ({ kind: 'go' }));
  for (const r of rowsOf<{ i: number | string; id: string | null; sequence: number | null; status: string | null }>(result)) {
    if (r.id === null || r.sequence === null) continue;
    answers[Number(r.i) - 1] = { kind: r.status === 'failed' ? 'blocked' : 'wait', id: r.id, sequence: Number(r.sequence) };
  }
  return answers;
}

/** A (tenant, operation, hook) whose head may have to be woken. */
export type OrderingKey = { tenant: string; operationId: string; hookId: string };

/**
 * The head of each (operation, hook) — its smallest open row — when that row is waiting to
 * run: queued, or retrying with its next attempt due (a parked job to promote). A head that is
 * in flight, retrying later, held or failed-blocking is not returned (nothing to wake).
 */
export async function orderingHeads(db: Db, keys: readonly OrderingKey[]): Promise<string[]> {
  if (keys.length === 0) return [];
  const result = await db.execute(sql`
    SELECT h.id
      FROM unnest(${sql.param(keys.map((k) => k.tenant))}::text[], ${sql.param(keys.map((k) => k.operationId))}::text[],
                  ${sql.param(keys.map((k) => k.hookId))}::text[]) AS v(tn, op, ep)
      JOIN LATERAL (
        SELECT d.id, d.status, d.next_attempt_at FROM deliveries AS d
         WHERE d.tenant = v.tn AND d.operation_id = v.op AND d.hook_id = v.ep AND ${ORDERING_OPEN_SQL}
         ORDER BY d.sequence LIMIT 1) AS h ON true
     WHERE h.status = 'queued' OR (h.status = 'retrying' AND h.next_attempt_at <= now())`);
  return rowsOf<{ id: string }>(result).map((r) => r.id);
}

/**
 * The reconciler's repair (a worker killed between a row's outcome and waking the next, or a
 * wake lost with Redis): the head of each (operation, hook), walked by key from `after`
 * (keyset; undefined = start), at most `limit`; `wake` when it is waiting to run (queued, or
 * retrying and due) and has not changed for `graceMs`.
 */
export async function findOrderingHeads(
  db: Db,
  options: { after: OrderingKey | undefined; limit: number; graceMs: number },
): Promise<Array<OrderingKey & { id: string; wake: boolean }>> {
  const after = options.after ?? { tenant: '', operationId: '', hookId: '' };
  const result = await db.execute(sql`
    SELECT DISTINCT ON (d.tenant, d.operation_id, d.hook_id) d.id, d.tenant, d.operation_id, d.hook_id,
           ((d.status = 'queued' OR (d.status = 'retrying' AND d.next_attempt_at <= now()))
             AND d.updated_at <= now() - make_interval(secs => ${options.graceMs / 1000}::float8)) AS wake
      FROM deliveries AS d
     WHERE ${ORDERING_OPEN_SQL} AND (d.tenant, d.operation_id, d.hook_id) > (${after.tenant}::text, ${after.operationId}::text, ${after.hookId}::text)
     ORDER BY d.tenant, d.operation_id, d.hook_id, d.sequence
     LIMIT ${options.limit}`);
  return rowsOf<{ id: string; tenant: string; operation_id: string; hook_id: string; wake: boolean }>(result).map((r) => ({
    id: r.id,
    tenant: r.tenant,
    operationId: r.operation_id,
    hookId: r.hook_id,
    wake: r.wake === true,
  }));
}

/**
 * SEC-H7: the ordered deliveries of a hook held back by its failed `block` delivery say so on
 * their own rows: reason `ordering_blocked` on every later one still queued or retrying (the next
 * attempt's outcome overwrites it, a replay clears it). Returns how many were newly marked, so each
 * is counted once.
 */
export async function markOrderingBlocked(db: Db, blocked: OrderingKey & { afterSequence: number }): Promise<number> {
  const result = await db.execute(sql`
    UPDATE deliveries SET failure_reason = ${ORDERING_BLOCKED_REASON}, updated_at = now()
     WHERE tenant = ${blocked.tenant} AND operation_id = ${blocked.operationId} AND hook_id = ${blocked.hookId} AND sequence > ${blocked.afterSequence}
       AND status IN ('queued', 'retrying') AND failure_reason IS DISTINCT FROM ${ORDERING_BLOCKED_REASON}
    RETURNING id`);
  return rowsOf<{ id: string }>(result).length;
}

/** Statuses an operator may skip: failed for good, or held (no job of theirs is live). */
const SKIPPABLE_STATUSES = ['failed', 'held'] as const;

export type SkipOutcome =
  | { id: string; result: 'skipped'; tenant: string; operationId: string; hookId: string; sequence: number | null }
  | { id: string; result: 'not_skippable'; status: string }
  | { id: string; result: 'unknown' };

/**
 * An operator gives up on failed or held deliveries — status `skipped` (final, not
 * replayed), which settles them for ordering so the deliveries after them go. One conditional
 * UPDATE: a row replayed or delivered since is not touched.
 */
export async function skipDeliveries(db: Db, ids: readonly string[]): Promise<SkipOutcome[]> {
  const unique = [...new Set(ids)];
  if (unique.length === 0) return [];
  const result = await db.execute(sql`
    WITH skipped AS (
      UPDATE deliveries SET status = 'skipped', next_attempt_at = NULL, lease_expires_at = NULL, updated_at = now()
       WHERE id = ANY(${sql.param(unique)}::text[]) AND status = ANY(${sql.param([...SKIPPABLE_STATUSES])}::text[])
      RETURNING id, tenant, operation_id, hook_id, sequence)
    SELECT d.id, d.status, s.id AS skipped_id, coalesce(s.tenant, d.tenant) AS tenant, coalesce(s.operation_id, d.operation_id) AS operation_id,
           coalesce(s.hook_id, d.hook_id) AS hook_id, s.sequence
      FROM deliveries AS d LEFT JOIN skipped AS s ON s.id = d.id
     WHERE d.id = ANY(${sql.param(unique)}::text[])`);
  const found = new Map(
    rowsOf<{ id: string; status: string; skipped_id: string | null; tenant: string; operation_id: string; hook_id: string; sequence: number | null }>(
      result,
    ).map((r) => [r.id, r]),
  );
  return unique.map((id): SkipOutcome => {
    const r = found.get(id);
    if (!r) return { id, result: 'unknown' };
    if (r.skipped_id === null) return { id, result: 'not_skippable', status: r.status };
    return {
      id,
      result: 'skipped',
      tenant: r.tenant,
      operationId: r.operation_id,
      hookId: r.hook_id,
      sequence: r.sequence === null ? null : Number(r.sequence),
    };
  });
}
