/**
 * The deny reasons the approval queue's resolver gives (A2). Closed and documented
 * (docs/approvals.md); `hookrelay:` marks them as the host's own, never an interceptor's. The
 * pending case has no reason of its own: the resolver answers `unresolved` and the record says
 * `host_error:approval_unresolved`.
 */
export const APPROVAL_REASONS = {
  /** An approver rejected the call; the message is the approver's reason. */
  rejected: 'hookrelay:approval_rejected',
  /** The request expired before a decision, or the decision before a run used it. */
  expired: 'hookrelay:approval_expired',
  /** An operator cancelled the request (or a changed call superseded it). */
  cancelled: 'hookrelay:approval_cancelled',
  /** Two decisions stand for one call: neither is applied. */
  ambiguous: 'hookrelay:approval_ambiguous',
  /** The decision was applied to another run already (exactly once). */
  alreadyApplied: 'hookrelay:approval_already_applied',
} as const;
