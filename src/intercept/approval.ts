import { PendingApprovalSchema, type PendingApproval } from '../contract/approval.ts';
import {
  ApprovalResolutionShapeSchema,
  type AgentContext,
  type ApprovalRequest,
  type ApprovalResolution,
  type EnforcementMode,
  type HostErrorReason,
  type Verdict,
} from '../contract/agentHooks.ts';
import type { ResolvedIdentityProvider } from './identity.ts';
import { validateEnvelope } from './envelope.ts';
import { HostError } from './reasons.ts';
import { HostFailureError, EmissionCancelledError } from '../contract/errors.ts';
import { settleWithin } from './timeouts.ts';
import { hostErrorVerdict, isLiftable, isPermit, parseWireVerdict } from './verdict.ts';
import { isObject } from '../util/isObject.ts';

export type ApprovalResolverFunction = (request: ApprovalRequest, options: { signal: AbortSignal }) => ApprovalResolution | Promise<ApprovalResolution>;

/** Approval resolver: a function or an object with `resolve(request)`. */
export type ApprovalResolver = ApprovalResolverFunction | { resolve: ApprovalResolverFunction };

/** Redaction seam: produces the context placed in the request (and hashed for its identity). */
export type ApprovalRedactor = (context: AgentContext) => AgentContext | Promise<AgentContext>;

export function toResolverFunction(resolver: ApprovalResolver): ApprovalResolverFunction {
  if (typeof resolver === 'function') return resolver;
  if (resolver !== null && typeof resolver === 'object' && typeof resolver.resolve === 'function') {
    return resolver.resolve.bind(resolver);
  }
  throw new TypeError('an approval resolver is a function or an object with a resolve(request) method');
}

/**
 * What one consultation produced. `pending`: the resolver answered `unresolved` and
 * named the durable request it left for an approver (a hookrelay extension member of the resolution).
 */
export type Consultation = { kind: 'not_consulted' } | { kind: 'resolved'; verdict: Verdict; permitted: boolean; pending?: PendingApproval };

export type SeamConfig = {
  mode: EnforcementMode;
  resolver: ApprovalResolverFunction | undefined;
  redactor: ApprovalRedactor | undefined;
  identity: ResolvedIdentityProvider;
  timeoutMs: number | null;
  signal: AbortSignal | undefined;
};

function failed(reason: HostErrorReason, message?: string): Consultation & { kind: 'resolved' } {
  return { kind: 'resolved', verdict: hostErrorVerdict(reason, message), permitted: false };
}

/**
 * Consult the approval seam for a liftable deny — only in `enforce` mode,
 * never at `agent_shutdown`, and only with a resolver registered
 * (without one the deny simply stands). The request identity covers the
 * context exactly as presented: after earlier folds and after redaction.
 * The resolution is validated in the numbered order below; any failure denies.
 */
export async function consultApproval(ctx: AgentContext, verdict: Verdict, seam: SeamConfig): Promise<Consultation> {
  if (!isLiftable(verdict) || seam.mode !== 'enforce' || ctx.interception_point === 'agent_shutdown') return { kind: 'not_consulted' };
  if (seam.resolver === undefined) return { kind: 'not_consulted' };
  const resolver = seam.resolver;

  let presented = structuredClone(ctx);
  if (seam.redactor !== undefined) {
    const redactor = seam.redactor;
    const copy = presented;
    const redacted = await settleWithin(() => redactor(copy), seam.timeoutMs, seam.signal);
    if (redacted.kind === 'cancelled') throw new EmissionCancelledError(redacted.reason);
    if (redacted.kind !== 'value') return failed(HostError.ApprovalResolverFailed, 'approval redactor failed');
    const checked = validateEnvelope(redacted.value);
    if (!checked.ok) return failed(HostError.ApprovalResolverFailed, 'approval redactor produced an invalid context');
    presented = checked.context;
  }

  let identity: string | null;
  try {
    identity = seam.identity.compute(presented);
  } catch (err) {
    if (err instanceof HostFailureError) return failed(err.reason, err.detail);
    return failed(HostError.ContextInvalid, 'identity provider failed');
  }

  const request: ApprovalRequest = {
    context_identity: identity,
    interception_point: ctx.interception_point,
    verdict: structuredClone(verdict),
    context: presented,
  };
  const settled = await settleWithin((signal) => resolver(request, { signal }), seam.timeoutMs, seam.signal);
  if (settled.kind === 'cancelled') throw new EmissionCancelledError(settled.reason);
  if (settled.kind === 'timeout') return failed(HostError.ApprovalResolverFailed, `approval resolver exceeded ${seam.timeoutMs} ms`);
  if (settled.kind === 'error') return failed(HostError.ApprovalResolverFailed, 'approval resolver raised');

  const res: unknown = settled.value;
  if (!isObject(res)) {
    return failed(HostError.ApprovalResolverFailed, 'resolution must be an object');
  }
  // 1. Echo rule: byte for byte, null echoes as null.
  if ((res as { context_identity?: unknown }).context_identity !== identity) {
    return failed(HostError.ApprovalIdentityMismatch, 'resolution context_identity violates the echo rule');
  }
  // 2. Shape: a known outcome, and a verdict exactly when the outcome is not `unresolved`.
  const shape = ApprovalResolutionShapeSchema.safeParse(res);
  const hasVerdict = (res as { verdict?: unknown }).verdict !== undefined && (res as { verdict?: unknown }).verdict !== null;
  if (!shape.success || hasVerdict !== (shape.data.outcome !== 'unresolved')) {
    return failed(HostError.ApprovalResolverFailed, 'resolution shape invalid');
  }
  if (shape.data.outcome === 'unresolved') {
    const unresolved = failed(HostError.ApprovalUnresolved, 'approval resolver could not decide');
    // A malformed extension member is ignored: the deny stands either way, only the typed outcome is lost.
    const pending = PendingApprovalSchema.safeParse((res as { pending?: unknown }).pending);
    return pending.success ? { ...unresolved, pending: pending.data } : unresolved;
  }
  // 3. The carried verdict crosses the verdict gate.
  const gated = parseWireVerdict(shape.data.verdict);
  if (!gated.ok) return failed(HostError.VerdictInvalid, `resolution verdict: ${gated.detail}`);
  // 4. Consistency: approve carries a permit, reject carries a deny.
  const approve = shape.data.outcome === 'approve';
  if (approve !== isPermit(gated.verdict)) {
    return failed(HostError.VerdictInvalid, 'resolution outcome and verdict decision disagree');
  }
  return { kind: 'resolved', verdict: gated.verdict, permitted: approve };
}
