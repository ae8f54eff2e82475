import type { HostErrorReason } from '../contract/agentHooks.ts';

/** The reserved `host_error:*` reasons, by name, so call sites never spell the strings by hand. */
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
