import type { AgentContext, CompositionConfig, EnforcementMode, Verdict } from '../contract/agentHooks.ts';
import type { PendingApproval } from '../contract/approval.ts';
import type { SeamConfig } from './approval.ts';
import type { RegisteredInterceptor } from './interceptor.ts';
import { parseTransformPath, applyTransformPath } from './path.ts';
import { transformPermitted, writeTarget } from './points.ts';
import { HostError } from './reasons.ts';
import { hostErrorVerdict } from './verdict.ts';

/** Everything a profile needs to dispatch one emission. */
export type DispatchEnv = {
  readonly interceptors: readonly RegisteredInterceptor[];
  readonly mode: EnforcementMode;
  readonly composition: CompositionConfig;
  readonly seam: SeamConfig;
  readonly timeoutMs: number | null;
  readonly signal: AbortSignal | undefined;
};

/** A profile's result: the combined verdict and the record metadata that explains it. */
export type DispatchOutcome = {
  combined: Verdict;
  decidedBy: number | null;
  /** One entry per invoked interceptor, in registration order (its own verdict or the failure deny that replaced it). */
  verdicts: Verdict[];
  resolvedBy?: 'approval' | 'rejection';
  /** The resolver left a durable request pending (the deny stands; the run may end "approval pending"). */
  pending?: PendingApproval | undefined;
};

/**
 * Apply (enforce) or only validate (evaluate_only) one transform against
 * the working context, writing the result back into the aliased field.
 * A transform that cannot apply comes back as the host-synthesized deny.
 */
export function foldTransform(work: AgentContext, v: Verdict, mode: EnforcementMode): Verdict {
  if (v.transform === undefined) return hostErrorVerdict(HostError.TransformInvalid, 'transform body missing');
  if (!transformPermitted(work.interception_point)) {
    return hostErrorVerdict(HostError.TransformTargetForbidden, `transform is not permitted at ${work.interception_point}`);
  }
  const path = parseTransformPath(v.transform.path);
  if (!path.ok) return hostErrorVerdict(path.reason, path.detail);
  const applied = applyTransformPath(work.target, path.segments, v.transform.value);
  if (!applied.ok) return hostErrorVerdict(applied.reason, applied.detail);
  if (mode === 'enforce') writeTarget(work, applied.target);
  return v;
}
