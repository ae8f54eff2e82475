import type { HostErrorReason, InterceptionRecord, Verdict } from '../contract/agentHooks.ts';
import type { PendingApproval } from '../contract/approval.ts';
import { HookrelayError } from '../contract/hookrelayError.ts';

/**
 * Thrown by `emit()` when the combined verdict blocks the guarded action.
 * `record` is the payload-free record; `verdict` is the full combined verdict,
 * available in-process only. `name` stays `'InterceptionBlocked'`: it reaches receivers
 * as an `onError` event's `errorType`.
 */
export class InterceptionBlockedError extends HookrelayError {
  /** `HOOKRELAY_APPROVAL_PENDING` on its `ApprovalPendingError` subclass. */
  readonly code: 'HOOKRELAY_INTERCEPTION_BLOCKED' | 'HOOKRELAY_APPROVAL_PENDING' = 'HOOKRELAY_INTERCEPTION_BLOCKED';
  readonly record: InterceptionRecord;
  readonly verdict: Verdict;

  constructor(record: InterceptionRecord, verdict: Verdict) {
    super(`${record.interception_point} blocked: ${record.verdict.decision} (${record.verdict.reason ?? 'no reason'})`);
    this.name = 'InterceptionBlocked';
    this.record = record;
    this.verdict = verdict;
  }
}

/**
 * The call is denied because an approval is pending: the resolver (an approval queue) left a
 * durable request for an approver (A1) and answered `unresolved`, so the deny stands
 * (`host_error:approval_unresolved`). The run ends "approval pending"; once an approver decided,
 * run it again: the identical call gets the decision, once (A2). `approval` names the request.
 */
export class ApprovalPendingError extends InterceptionBlockedError {
  override readonly code = 'HOOKRELAY_APPROVAL_PENDING' as const;
  readonly approval: PendingApproval;

  constructor(record: InterceptionRecord, verdict: Verdict, approval: PendingApproval) {
    super(record, verdict);
    this.message = `${record.interception_point} waits for approval ${approval.id} (until ${approval.expiresAt})`;
    this.name = 'ApprovalPendingError';
    this.approval = approval;
  }
}

/**
 * @deprecated use `InterceptionBlockedError` (the same class; kept so existing `instanceof` checks work).
 * @alias
 */
export const InterceptionBlocked = InterceptionBlockedError;
/** @deprecated use `InterceptionBlockedError`. */
export type InterceptionBlocked = InterceptionBlockedError;

/**
 * An AGENT-HOOKS-0.1 installation that would weaken the enforcement boundary: a second bundle on
 * one dispatcher or one session, a nested agent reusing its parent's bundle (one
 * bundle per agent, stacked bundles are refused; a nested agent gets its own), or a dispatcher
 * emitter without the run adapter and without `interceptionPoints: 'tool-seam'` (`missing`
 * names the points it would never emit).
 */
export class AgentHooksInstallError extends HookrelayError {
  readonly code = 'HOOKRELAY_AGENT_HOOKS_INSTALL' as const;
  /** The interception points the refused installation would never emit (empty when that is not the problem). */
  readonly missing: readonly string[];
  constructor(message: string, details: { missing?: readonly string[] } = {}) {
    super(message);
    this.name = 'AgentHooksInstallError';
    this.missing = [...(details.missing ?? [])];
  }
}

/** A run used out of order: after `end()`, `output()` twice, a second active run of one session. */
export class AgentRunStateError extends HookrelayError {
  readonly code = 'HOOKRELAY_AGENT_RUN_STATE' as const;
  constructor(message: string) {
    super(message);
    this.name = 'AgentRunStateError';
  }
}

/**
 * Thrown by a tool executor to fail with a structured result: `post_tool_call` sees
 * `tool_result.value` = `result` and `is_error: true` (any other throw gives its message).
 */
export class ToolError extends HookrelayError {
  readonly code = 'HOOKRELAY_TOOL_FAILED' as const;
  readonly result: unknown;
  constructor(result: unknown, message = 'tool failed') {
    super(message);
    this.name = 'ToolError';
    this.result = result;
  }
}

/**
 * A failure that maps to one reserved reason; `detail` names a path or constraint, never a value.
 * `name` stays `'HostErrorFailure'`: audit details quote an error's type name.
 */
export class HostFailureError extends HookrelayError {
  readonly code = 'HOOKRELAY_HOST_ERROR' as const;
  readonly reason: HostErrorReason;
  readonly detail: string;
  constructor(reason: HostErrorReason, detail: string) {
    super(`${reason}: ${detail}`);
    this.name = 'HostErrorFailure';
    this.reason = reason;
    this.detail = detail;
  }
}

/**
 * @deprecated use `HostFailureError` (the same class; kept so existing `instanceof` checks work).
 * @alias
 */
export const HostErrorFailure = HostFailureError;
/** @deprecated use `HostFailureError`. */
export type HostErrorFailure = HostFailureError;

/** Raised inside an emission when the caller's signal aborts; the emitter records it, then rethrows the reason. */
export class EmissionCancelledError extends HookrelayError {
  readonly code = 'HOOKRELAY_EMISSION_CANCELLED' as const;
  override readonly cause: unknown;
  constructor(cause: unknown) {
    super('emission cancelled');
    this.name = 'EmissionCancelledError';
    this.cause = cause;
  }
}

/** A value the run cannot project into a context (a cycle, nesting past any sane bound). */
export class ProjectionError extends HookrelayError {
  readonly code = 'HOOKRELAY_PROJECTION_INVALID' as const;
  constructor(readonly detail: string) {
    super(detail);
    this.name = 'ProjectionError';
  }
}

/** The abort reason settleWithin (timeouts.ts) gives a callee it stopped waiting for; named TimeoutError as the platform's. */
export class InterceptionTimeoutError extends Error {
  constructor(ms: number) {
    super(`timed out after ${ms} ms`);
    this.name = 'TimeoutError';
  }
}
