import type { HostErrorReason } from '../contract/agentHooks.ts';
import { HookrelayError } from '../contract/hookrelayError.ts';

/** §11 reserved reasons, by name, so call sites never spell the strings by hand. */
export const HostError = {
  ContextInvalid: 'host_error:context_invalid',
  InterceptorFailed: 'host_error:interceptor_failed',
  InterceptorTimeout: 'host_error:interceptor_timeout',
  VerdictInvalid: 'host_error:verdict_invalid',
  TransformInvalid: 'host_error:transform_invalid',
  TransformTargetForbidden: 'host_error:transform_target_forbidden',
  TransformConflict: 'host_error:transform_conflict',
  CompositionDisagreement: 'host_error:composition_disagreement',
  ApprovalResolverFailed: 'host_error:approval_resolver_failed',
  ApprovalUnresolved: 'host_error:approval_unresolved',
  ApprovalIdentityMismatch: 'host_error:approval_identity_mismatch',
  AdapterUnsupported: 'host_error:adapter_unsupported',
  NoInterceptor: 'host_error:no_interceptor',
  StreamingUnsupported: 'host_error:streaming_unsupported',
} as const satisfies Record<string, HostErrorReason>;

const RESERVED_PREFIX = 'host_error:';

export function isReservedReason(reason: string | undefined): boolean {
  return reason?.startsWith(RESERVED_PREFIX) === true;
}

/**
 * A failure that maps to one reserved reason; `detail` names a path or constraint, never a value
 * (§14). `name` stays `'HostErrorFailure'`: audit details quote an error's type name.
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
