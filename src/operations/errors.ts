/** Errors of the operation store, in a module of their own so the light package entry can export them. */
import { HookrelayError } from '../contract/hookrelayError.ts';

/** The call cannot be rebuilt while an afterToolCall control exists: fail closed (nothing written). */
export class DeferredContextError extends HookrelayError {
  readonly code = 'HOOKRELAY_DEFERRED_CONTEXT_INVALID' as const;
  override readonly name = 'DeferredContextError';
}
/** The control was cancelled: nothing was written; the callback should be retried. */
export class DeferredCancelledError extends HookrelayError {
  readonly code = 'HOOKRELAY_DEFERRED_CANCELLED' as const;
  override readonly name = 'DeferredCancelledError';
}
export class ApprovalNotClaimedError extends HookrelayError {
  readonly code = 'HOOKRELAY_APPROVAL_NOT_CLAIMED' as const;
  override readonly name = 'ApprovalNotClaimedError';
}
