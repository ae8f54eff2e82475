/**
 * The approval queue's resolver (the approval seam, A1–A2): a liftable deny becomes a durable request; a
 * decision applies once, only to the identical call; every doubt is a deny.
 *
 *   1. settle — the operation's decisions at this point that were not applied yet:
 *      one for this identity → applied once (a conditional UPDATE) → approve / reject;
 *      two → `ambiguous`, both closed, deny; one that expired → closed, deny;
 *      one for the same tool call with another identity (the call changed) → closed
 *      `identity_mismatch`, never applied, and a new request is opened for the call as it is now.
 *   2. request — the pending row for this identity (one per identity: concurrent callers share it).
 *   3. wait — up to `waitMs` for an approver; then settle again, else answer `unresolved` naming
 *      the request (`pending`), so the deny stands and the run ends "approval pending".
 * A store that does not answer throws: the emitter records `host_error:approval_resolver_failed`.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { AgentContext, ApprovalRequest, ApprovalResolution, JsonValue, Verdict } from '../contract/agentHooks.ts';
import type { PendingApproval } from '../contract/approval.ts';
import type { Logger } from '../observability/logger.ts';
import {
  applyDecisionRow,
  cancelApprovalRows,
  closeDecisionRows,
  expireDueApprovals,
  getApprovalRow,
  openApprovalsFor,
  openPendingApproval,
  type ApprovalRow,
} from '../store/approvalsRepo.ts';
import type { Db } from '../store/db.ts';
import { approvalIdentity, operationOfSession } from './approvalIdentity.ts';
import { APPROVAL_REASONS } from './reasons.ts';
import { isObject } from '../util/isObject.ts';

/** The resolution the queue answers: the approval seam's, plus `pending` when it left a request for an approver. */
export type QueueResolution = ApprovalResolution & { pending?: PendingApproval };

export type ResolveDeps = {
  db: () => Promise<Db>;
  tenant: string;
  /** The operation the requests belong to; default: the context's session, less a run's `/<uuid>`. */
  operationId: string | undefined;
  waitMs: number;
  pollMs: number;
  expiresInMs: number;
  /** The context as stored and shown (the approval redactor, size-capped). */
  display: (context: AgentContext) => Promise<JsonValue>;
  newId: () => string;
  /** A request was created (announce it now when the queue can). */
  onRequested: (row: ApprovalRow) => void;
  /** Pending requests were cancelled or expired, or decisions closed (announce the change). */
  onChanged: (rows: readonly ApprovalRow[]) => void;
  logger: Logger;
};

type Scope = { tenant: string; operationId: string; point: string; contextIdentity: string; toolCallId: string | null; toolName: string | null };

function toolCallOf(context: AgentContext): { id: string; name: string } | null {
  const call = context.tool_call;
  if (!isObject(call)) return null;
  const { id, name } = call as { id?: unknown; name?: unknown };
  return typeof id === 'string' && typeof name === 'string' ? { id, name } : null;
}

/** Links the interception record to the approval row (evidence is kept on the payload-free record). */
function evidence(row: ApprovalRow): Verdict['evidence'] {
  return { verification_pointers: { 'hookrelay:approval': row.id } };
}

function approve(echo: string | null, row: ApprovalRow): QueueResolution {
  return { outcome: 'approve', context_identity: echo, verdict: { decision: 'allow', evidence: evidence(row) } };
}

function deny(echo: string | null, reason: string, message: string, row?: ApprovalRow): QueueResolution {
  return { outcome: 'reject', context_identity: echo, verdict: { decision: 'deny', reason, message, ...(row ? { evidence: evidence(row) } : {}) } };
}

export async function resolveApproval(request: ApprovalRequest, signal: AbortSignal | undefined, deps: ResolveDeps): Promise<QueueResolution> {
  const echo = request.context_identity;
  const context = request.context;
  const operationId = deps.operationId ?? operationOfSession(context.session.id);
  const call = toolCallOf(context);
  const scope: Scope = {
    tenant: deps.tenant,
    operationId,
    point: context.interception_point,
    contextIdentity: approvalIdentity(context, operationId),
    toolCallId: call?.id ?? null,
    toolName: call?.name ?? null,
  };
  const db = await deps.db();

  const settled = await settle(db, scope, echo, deps);
  if (settled !== undefined) return settled;

  const { row, created } = await openPendingApproval(db, {
    id: deps.newId(),
    tenant: scope.tenant,
    operationId,
    kind: 'escalation',
    point: scope.point,
    toolCallId: scope.toolCallId,
    toolName: scope.toolName,
    contextIdentity: scope.contextIdentity,
    context: await deps.display(context),
    escalation: {
      ...(request.verdict.reason ? { reason: request.verdict.reason } : {}),
      ...(request.verdict.message ? { message: request.verdict.message } : {}),
    },
    expiresInMs: deps.expiresInMs,
    answerNonce: randomBytes(18).toString('base64url'),
  });
  if (created) deps.onRequested(row);

  if (await waitForDecision(db, row.id, deps.waitMs, deps.pollMs, signal)) {
    const decided = await settle(db, scope, echo, deps);
    if (decided !== undefined) return decided;
  }
  const pending: PendingApproval = {
    id: row.id,
    tenant: row.tenant,
    operationId: row.operationId,
    expiresAt: row.expiresAt.toISOString(),
    ...(row.toolCallId !== null ? { toolCallId: row.toolCallId } : {}),
    ...(row.toolName !== null ? { toolName: row.toolName } : {}),
  };
  return { outcome: 'unresolved', context_identity: echo, pending };
}

/** True when the row left `pending` within the wait (decided, expired, cancelled). */
async function waitForDecision(db: Db, id: string, waitMs: number, pollMs: number, signal: AbortSignal | undefined): Promise<boolean> {
  const until = Date.now() + waitMs;
  for (;;) {
    const left = until - Date.now();
    if (left <= 0 || signal?.aborted === true) return false;
    try {
      await sleep(Math.min(pollMs, left), undefined, signal ? { signal } : undefined);
    } catch {
      return false; // aborted: the emitter records the cancellation
    }
    const row = await getApprovalRow(db, id);
    if (row === undefined || row.status !== 'pending' || row.expiresAt.getTime() <= Date.now()) return true;
  }
}

/** What a decision standing for a call comes to: applied (approved or rejected), or denied for a doubt (a reason of APPROVAL_REASONS). */
export type Settled =
  | { kind: 'approved'; row: ApprovalRow }
  | { kind: 'rejected'; row: ApprovalRow }
  | { kind: 'denied'; reason: string; message: string; row?: ApprovalRow };

export type SettleScope = Scope;
type SettleDeps = Pick<ResolveDeps, 'onChanged' | 'logger'>;

function toResolution(echo: string | null, settled: Settled): QueueResolution {
  if (settled.kind === 'approved') return approve(echo, settled.row);
  if (settled.kind === 'rejected')
    return deny(echo, APPROVAL_REASONS.rejected, settled.row.reason ?? `rejected by ${settled.row.decidedBy ?? 'an approver'}`, settled.row);
  return deny(echo, settled.reason, settled.message, settled.row);
}

async function settle(db: Db, scope: Scope, echo: string | null, deps: SettleDeps): Promise<QueueResolution | undefined> {
  const settled = await settleDecision(db, scope, deps);
  return settled === undefined ? undefined : toResolution(echo, settled);
}

/** Step 1 (see the file header): what a decision (or a doubt) standing for this call comes to, else undefined. */
export async function settleDecision(db: Db, scope: Scope, deps: SettleDeps): Promise<Settled | undefined> {
  const expired = await expireDueApprovals(db, { tenant: scope.tenant, operationId: scope.operationId });
  if (expired.length > 0) deps.onChanged(expired);
  const open = await openApprovalsFor(db, scope);
  const mine = open.filter((r) => r.contextIdentity === scope.contextIdentity);
  const others = open.filter((r) => r.contextIdentity !== scope.contextIdentity);

  // The call came back changed: an earlier answer never carries over to it.
  const superseded = others.filter((r) => r.status === 'approved' || r.status === 'rejected');
  if (superseded.length > 0) {
    await closeDecisionRows(
      db,
      superseded.map((r) => r.id),
      'identity_mismatch',
    );
    deps.logger.warn({ operationId: scope.operationId, approvals: superseded.map((r) => r.id) }, 'approval not applied: the call changed since it was decided');
  }
  const stale = others.filter((r) => r.status === 'pending');
  if (stale.length > 0)
    deps.onChanged(
      await cancelApprovalRows(
        db,
        stale.map((r) => r.id),
        'hookrelay',
        'superseded: the call changed',
      ),
    );

  const decided = mine.filter((r) => r.status === 'approved' || r.status === 'rejected');
  if (decided.length > 1) {
    await closeDecisionRows(
      db,
      decided.map((r) => r.id),
      'ambiguous',
    );
    deps.logger.warn({ operationId: scope.operationId, approvals: decided.map((r) => r.id) }, 'approval ambiguous: two decisions for one call; denied');
    return { kind: 'denied', reason: APPROVAL_REASONS.ambiguous, message: 'two decisions stand for this call: denied (fail closed)' };
  }
  const [decision] = decided;
  if (decision !== undefined) {
    const applied = await applyDecisionRow(db, decision.id);
    if (applied === undefined) {
      const now = await getApprovalRow(db, decision.id);
      if (now !== undefined && now.appliedAt === null) {
        await closeDecisionRows(db, [decision.id], 'expired');
        return { kind: 'denied', reason: APPROVAL_REASONS.expired, message: `approval ${decision.id} expired before it was used`, row: decision };
      }
      return { kind: 'denied', reason: APPROVAL_REASONS.alreadyApplied, message: `approval ${decision.id} was already applied to a run`, row: decision };
    }
    return applied.status === 'approved' ? { kind: 'approved', row: applied } : { kind: 'rejected', row: applied };
  }
  // No decision: a request that expired or was withdrawn is a deny, once (the next presentation asks again).
  const closed = mine.filter((r) => r.status === 'expired' || r.status === 'cancelled');
  const [first] = closed;
  if (first === undefined) return undefined;
  for (const status of ['expired', 'cancelled'] as const) {
    await closeDecisionRows(
      db,
      closed.filter((r) => r.status === status).map((r) => r.id),
      status,
    );
  }
  return first.status === 'expired'
    ? { kind: 'denied', reason: APPROVAL_REASONS.expired, message: `approval ${first.id} expired before a decision`, row: first }
    : { kind: 'denied', reason: APPROVAL_REASONS.cancelled, message: `approval ${first.id} was cancelled`, row: first };
}
