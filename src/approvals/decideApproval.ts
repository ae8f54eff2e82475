/**
 * A3: one decision, whoever makes it (the API, the CLI, the console, an answer token): validated,
 * then one conditional UPDATE of a pending, unexpired row. A second decision, a late one or one
 * for another tenant's approval changes nothing and says why.
 */
import { DecidedBySchema, DecisionReasonSchema, type ApprovalAnswer, type ApprovalStatus } from '../contract/approval.ts';
import { isStorableText } from '../contract/storableText.ts';
import { decideApprovalRow, expireDueApprovals, type ApprovalRow } from '../store/approvalsRepo.ts';
import type { Db } from '../store/db.ts';
import { ApprovalNotFoundError, ApprovalNotPendingError, ApprovalTokenError } from '../contract/errors.ts';
import { withDefined } from '../util/withDefined.ts';

export type DecideApprovalInput = {
  id: string;
  answer: ApprovalAnswer;
  /** Who decides (`cli:alice`, `console`, `token`, …). */
  by: string;
  reason?: string | undefined;
  /** Only this tenant's approval (the tenant API); undefined for the operator's tools. */
  tenant?: string | undefined;
  /** An answer token's nonce (single use). */
  nonce?: string | undefined;
};

/** The checked decider and reason, or a TypeError naming the field (nothing is written). */
export function checkDecisionInput(by: unknown, reason: unknown): { by: string; reason: string | null } {
  const who = DecidedBySchema.safeParse(by);
  if (!who.success) throw new TypeError('decided by: must be 1–200 printable ASCII characters (who decides, e.g. cli:alice)');
  if (reason === undefined || reason === null || reason === '') return { by: who.data, reason: null };
  const why = DecisionReasonSchema.safeParse(reason);
  if (!why.success || !isStorableText(why.data)) throw new TypeError('reason: must be text of at most 2,000 characters (no NUL)');
  return { by: who.data, reason: why.data };
}

export async function decideApproval(db: Db, input: DecideApprovalInput): Promise<ApprovalRow> {
  const { by, reason } = checkDecisionInput(input.by, input.reason);
  const status = input.answer === 'approve' ? 'approved' : 'rejected';
  const result = await decideApprovalRow(db, {
    id: input.id,
    status,
    decidedBy: by,
    reason,
    ...withDefined({ tenant: input.tenant, nonce: input.nonce }),
  });
  if (result.decided) return result.row;
  const row = result.row;
  if (row === undefined) throw new ApprovalNotFoundError(input.id);
  if (row.status === 'pending') {
    if (input.nonce !== undefined && row.answerNonce !== input.nonce)
      throw new ApprovalTokenError('this answer link was already used or replaced; nothing changed');
    // Still pending but not decidable: past its expiry (the database's clock). It expires now, and the late decision is refused.
    await expireDueApprovals(db, { tenant: row.tenant, operationId: row.operationId });
    throw new ApprovalNotPendingError(row.id, 'expired', ` (at ${row.expiresAt.toISOString()})`);
  }
  const detail = row.decidedBy ? ` (by ${row.decidedBy}${row.decidedAt ? ` at ${row.decidedAt.toISOString()}` : ''})` : '';
  throw new ApprovalNotPendingError(row.id, row.status as ApprovalStatus, detail);
}
