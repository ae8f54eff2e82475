/** Errors of the approval queue (A1–A3), each with a stable code; the messages say what to do. */
import type { ApprovalStatus } from '../contract/approval.ts';
import { HookrelayError } from '../contract/hookrelayError.ts';

/** No approval with this id (or not one of this tenant's: a tenant never learns another's ids exist). */
export class ApprovalNotFoundError extends HookrelayError {
  readonly code = 'HOOKRELAY_APPROVAL_NOT_FOUND' as const;
  override readonly name = 'ApprovalNotFoundError';
  constructor(readonly approvalId: string) {
    super(`no approval ${approvalId}: list them with \`hookrelay approvals list\``);
  }
}

/** The approval is no longer pending: it was decided, expired or cancelled; nothing changed. */
export class ApprovalNotPendingError extends HookrelayError {
  readonly code = 'HOOKRELAY_APPROVAL_NOT_PENDING' as const;
  override readonly name = 'ApprovalNotPendingError';
  constructor(
    readonly approvalId: string,
    readonly status: ApprovalStatus,
    detail: string,
  ) {
    super(`approval ${approvalId} is ${status}${detail}: nothing changed (a decision is made once)`);
  }
}

/** An answer token that is malformed, forged, expired or already used; nothing changed. */
export class ApprovalTokenError extends HookrelayError {
  readonly code = 'HOOKRELAY_APPROVAL_TOKEN_INVALID' as const;
  override readonly name = 'ApprovalTokenError';
}
