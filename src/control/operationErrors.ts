/** Errors of the operation store, in a module of their own so the light package entry can export them. */

/** The call cannot be rebuilt while an afterToolCall control exists: fail closed (nothing written). */
export class DeferredContextError extends Error {
  override readonly name = 'DeferredContextError';
}
/** The control was cancelled: nothing was written; the callback should be retried. */
export class DeferredCancelledError extends Error {
  override readonly name = 'DeferredCancelledError';
}
export class ApprovalNotClaimedError extends Error {
  override readonly name = 'ApprovalNotClaimedError';
}
