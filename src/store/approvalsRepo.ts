/**
 * Durable approvals (A1–A3) in Postgres. Every change of state is one conditional UPDATE, so two
 * approvers, two resuming runs or an approver racing the expiry can never both win: a decision
 * applies only to a `pending` row before its expiry; applying a decision only to a decided row
 * not applied before (`applied_at IS NULL`). Times are the database's clock (`now()`), so every
 * process agrees on what has expired.
 */
import { and, asc, desc, eq, inArray, isNull, ne, or, sql, type SQL } from 'drizzle-orm';
import type { Approval, ApprovalKind, ApprovalOutcome, ApprovalStatus } from '../contract/approval.ts';
import type { JsonValue } from '../contract/agentHooks.ts';
import { rowsOf, type Db } from './db.ts';
import { approvals } from './schema.ts';

export type ApprovalRow = typeof approvals.$inferSelect;

export function toApproval(row: ApprovalRow): Approval {
  return {
    id: row.id,
    tenant: row.tenant,
    operationId: row.operationId,
    kind: row.kind as ApprovalKind,
    point: row.point,
    toolCall: row.toolCallId === null ? null : { id: row.toolCallId, name: row.toolName ?? '' },
    contextIdentity: row.contextIdentity,
    context: row.context as JsonValue,
    escalation: (row.escalation ?? {}) as Approval['escalation'],
    status: row.status as ApprovalStatus,
    requestedAt: row.requestedAt,
    expiresAt: row.expiresAt,
    decidedBy: row.decidedBy,
    decidedAt: row.decidedAt,
    reason: row.reason,
    appliedAt: row.appliedAt,
    outcome: row.outcome as ApprovalOutcome | null,
  };
}

export type NewApproval = {
  id: string;
  tenant: string;
  operationId: string;
  kind: ApprovalKind;
  point: string;
  toolCallId: string | null;
  toolName: string | null;
  contextIdentity: string;
  context: JsonValue;
  escalation: { reason?: string; message?: string };
  /** From now (the database's clock). */
  expiresInMs: number;
  answerNonce: string;
};

/** The pending request for this (tenant, operation, point, identity), created when there is none (concurrent callers converge). */
export async function openPendingApproval(db: Db, input: NewApproval): Promise<{ row: ApprovalRow; created: boolean }> {
  // Bounded: the only way round again is a pending row decided between the INSERT and the SELECT.
  for (let attempt = 0; attempt < 3; attempt++) {
    const inserted = await db
      .insert(approvals)
      .values({
        id: input.id,
        tenant: input.tenant,
        operationId: input.operationId,
        kind: input.kind,
        point: input.point,
        toolCallId: input.toolCallId,
        toolName: input.toolName,
        contextIdentity: input.contextIdentity,
        context: sql`${JSON.stringify(input.context)}::jsonb`,
        escalation: sql`${JSON.stringify(input.escalation)}::jsonb`,
        expiresAt: sql`now() + ${Math.max(0, Math.round(input.expiresInMs))} * interval '1 millisecond'`,
        answerNonce: input.answerNonce,
      })
      .onConflictDoNothing({
        target: [approvals.tenant, approvals.operationId, approvals.point, approvals.contextIdentity],
        where: sql`status = 'pending'`,
      })
      .returning();
    if (inserted[0]) return { row: inserted[0], created: true };
    const existing = await db
      .select()
      .from(approvals)
      .where(
        and(
          eq(approvals.tenant, input.tenant),
          eq(approvals.operationId, input.operationId),
          eq(approvals.point, input.point),
          eq(approvals.contextIdentity, input.contextIdentity),
          eq(approvals.status, 'pending'),
        ),
      )
      .limit(1);
    if (existing[0]) return { row: existing[0], created: false };
  }
  throw new Error('approval request: the pending row changed under three attempts; try again');
}

/** One approval; with `tenant`, only that tenant's (another tenant's id reads as unknown). */
export async function getApprovalRow(db: Db, id: string, tenant?: string): Promise<ApprovalRow | undefined> {
  const rows = await db
    .select()
    .from(approvals)
    .where(and(eq(approvals.id, id), tenant === undefined ? undefined : eq(approvals.tenant, tenant)))
    .limit(1);
  return rows[0];
}

export type ApprovalFilter = {
  tenant?: string;
  status?: ApprovalStatus;
  operationId?: string;
  /** Newest first; default 50. */
  limit?: number;
};

export async function listApprovalRows(db: Db, filter: ApprovalFilter = {}): Promise<ApprovalRow[]> {
  const where: SQL[] = [];
  if (filter.tenant !== undefined) where.push(eq(approvals.tenant, filter.tenant));
  if (filter.status !== undefined) where.push(eq(approvals.status, filter.status));
  if (filter.operationId !== undefined) where.push(eq(approvals.operationId, filter.operationId));
  return db
    .select()
    .from(approvals)
    .where(where.length > 0 ? and(...where) : undefined)
    .orderBy(desc(approvals.requestedAt), desc(approvals.id))
    .limit(filter.limit ?? 50);
}

export type DecideInput = {
  id: string;
  /** Only this tenant's approval (the tenant API); undefined for the operator's tools. */
  tenant?: string;
  status: 'approved' | 'rejected';
  decidedBy: string;
  reason: string | null;
  /** An answer token's nonce: the decision applies only while the row still carries it (single use). */
  nonce?: string;
};

/**
 * A3: the one decision of a pending, unexpired request (a conditional UPDATE: of two approvers
 * exactly one wins). `applied: false` returns the row as it is (unknown, decided, expired, or the
 * token already used), so the caller can say which.
 */
export async function decideApprovalRow(
  db: Db,
  input: DecideInput,
): Promise<{ decided: true; row: ApprovalRow } | { decided: false; row: ApprovalRow | undefined }> {
  const where = [eq(approvals.id, input.id), eq(approvals.status, 'pending'), sql`${approvals.expiresAt} > now()`];
  if (input.tenant !== undefined) where.push(eq(approvals.tenant, input.tenant));
  if (input.nonce !== undefined) where.push(eq(approvals.answerNonce, input.nonce));
  const updated = await db
    .update(approvals)
    .set({ status: input.status, decidedBy: input.decidedBy, decidedAt: sql`now()`, reason: input.reason, answerNonce: null, updatedAt: sql`now()` })
    .where(and(...where))
    .returning();
  if (updated[0]) return { decided: true, row: updated[0] };
  return { decided: false, row: await getApprovalRow(db, input.id, input.tenant) };
}

/** A pending request cancelled (superseded by a changed call, or withdrawn by an operator). */
export async function cancelApprovalRows(db: Db, ids: readonly string[], by: string, reason: string): Promise<ApprovalRow[]> {
  if (ids.length === 0) return [];
  return db
    .update(approvals)
    .set({ status: 'cancelled', decidedBy: by, decidedAt: sql`now()`, reason, answerNonce: null, updatedAt: sql`now()` })
    .where(and(inArray(approvals.id, [...ids]), eq(approvals.status, 'pending')))
    .returning();
}

/** Pending requests past their expiry become `expired` (optionally only one operation's); returns them. */
export async function expireDueApprovals(db: Db, scope: { tenant?: string; operationId?: string; limit?: number } = {}): Promise<ApprovalRow[]> {
  const where: SQL[] = [eq(approvals.status, 'pending'), sql`${approvals.expiresAt} <= now()`];
  if (scope.tenant !== undefined) where.push(eq(approvals.tenant, scope.tenant));
  if (scope.operationId !== undefined) where.push(eq(approvals.operationId, scope.operationId));
  const due = db
    .select({ id: approvals.id })
    .from(approvals)
    .where(and(...where))
    .limit(scope.limit ?? 500);
  return db
    .update(approvals)
    .set({ status: 'expired', reason: sql`coalesce(${approvals.reason}, 'expired before a decision')`, answerNonce: null, updatedAt: sql`now()` })
    .where(and(inArray(approvals.id, due), eq(approvals.status, 'pending')))
    .returning();
}

/**
 * What a run presenting a call finds: the operation's requests at this point not applied yet,
 * bound to this identity or made for this tool call (a call that came back changed).
 */
export async function openApprovalsFor(
  db: Db,
  scope: { tenant: string; operationId: string; point: string; contextIdentity: string; toolCallId: string | null },
): Promise<ApprovalRow[]> {
  const match =
    scope.toolCallId === null
      ? eq(approvals.contextIdentity, scope.contextIdentity)
      : or(eq(approvals.contextIdentity, scope.contextIdentity), eq(approvals.toolCallId, scope.toolCallId));
  return db
    .select()
    .from(approvals)
    .where(
      and(
        eq(approvals.tenant, scope.tenant),
        eq(approvals.operationId, scope.operationId),
        eq(approvals.point, scope.point),
        isNull(approvals.appliedAt),
        match,
      ),
    )
    .orderBy(asc(approvals.requestedAt), asc(approvals.id));
}

/**
 * A2: apply a decision exactly once — the decided row, unexpired, not applied before. Of two runs
 * presenting the same call, one gets the row; the other gets undefined (and is denied).
 */
export async function applyDecisionRow(db: Db, id: string): Promise<ApprovalRow | undefined> {
  const updated = await db
    .update(approvals)
    .set({ appliedAt: sql`now()`, outcome: 'applied', updatedAt: sql`now()` })
    .where(and(eq(approvals.id, id), isNull(approvals.appliedAt), inArray(approvals.status, ['approved', 'rejected']), sql`${approvals.expiresAt} > now()`))
    .returning();
  return updated[0];
}

/** A2: decisions that will never apply (expired, ambiguous, superseded by a changed call), recorded once. */
export async function closeDecisionRows(db: Db, ids: readonly string[], outcome: Exclude<ApprovalOutcome, 'applied'>): Promise<string[]> {
  if (ids.length === 0) return [];
  const updated = await db
    .update(approvals)
    .set({ appliedAt: sql`now()`, outcome, updatedAt: sql`now()` })
    .where(and(inArray(approvals.id, [...ids]), isNull(approvals.appliedAt)))
    .returning({ id: approvals.id });
  return updated.map((r) => r.id);
}

/** The outbox: approvals whose `approval.requested` or `approval.resolved` the ledger does not have yet, oldest first. */
export async function unannouncedApprovalRows(db: Db, limit: number): Promise<ApprovalRow[]> {
  return db
    .select()
    .from(approvals)
    .where(or(isNull(approvals.requestedEventAt), and(ne(approvals.status, 'pending'), isNull(approvals.resolvedEventAt))))
    .orderBy(asc(approvals.requestedAt))
    .limit(limit);
}

/** Marks an event as in the ledger (the first marker wins; a second announcer finds it set). */
export async function markApprovalAnnounced(db: Db, id: string, event: 'requested' | 'resolved'): Promise<void> {
  const column = event === 'requested' ? approvals.requestedEventAt : approvals.resolvedEventAt;
  await db
    .update(approvals)
    .set(event === 'requested' ? { requestedEventAt: sql`now()` } : { resolvedEventAt: sql`now()` })
    .where(and(eq(approvals.id, id), isNull(column)));
}

/** Counts by status and outcome (the worker's approvals gauge). */
export async function approvalCounts(db: Db): Promise<Array<{ status: string; outcome: string | null; count: number }>> {
  const rows = rowsOf<{ status: string; outcome: string | null; count: string | number }>(
    await db.execute(sql`SELECT status, outcome, count(*) AS count FROM approvals GROUP BY status, outcome`),
  );
  return rows.map((r) => ({ status: r.status, outcome: r.outcome, count: Number(r.count) }));
}
