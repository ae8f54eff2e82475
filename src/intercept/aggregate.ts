import type { AgentContext, HostErrorReason, SynthesisPolicy, Verdict } from '../contract/agentHooks.ts';
import type { PendingApproval } from '../contract/approval.ts';
import { consultApproval } from './approval.ts';
import { aggregateStrictest, withUnions } from './composition.ts';
import { foldTransform, type DispatchEnv, type DispatchOutcome } from './fold.ts';
import { HostError } from './reasons.ts';
import { hostErrorVerdict, isPermit } from './verdict.ts';

type Substitution = { verdict: Verdict; resolvedBy?: 'approval' | 'rejection'; lifted: boolean; pending?: PendingApproval };

/**
 * Consult the approval seam for `trigger` and substitute the resolution at its
 * position. A permit transform folds like an interceptor's; if it cannot
 * apply, the transform-failure deny stands (still recorded as an approval).
 */
export async function consultAndSubstitute(work: AgentContext, trigger: Verdict, pool: readonly Verdict[], env: DispatchEnv): Promise<Substitution> {
  const c = await consultApproval(work, trigger, env.seam);
  if (c.kind === 'not_consulted') return { verdict: withUnions(trigger, pool), lifted: false };
  if (!c.permitted) return { verdict: withUnions(c.verdict, pool), resolvedBy: 'rejection', lifted: false, ...(c.pending ? { pending: c.pending } : {}) };
  const sub = c.verdict.decision === 'transform' ? foldTransform(work, c.verdict, env.mode) : c.verdict;
  if (!isPermit(sub)) return { verdict: withUnions(sub, pool), resolvedBy: 'approval', lifted: false };
  return { verdict: withUnions(sub, [...pool, sub]), resolvedBy: 'approval', lifted: true };
}

/** Parallel profiles' "deny" | "approval" knob: a plain synthesized deny, or a liftable one offered to the seam. */
export async function synthesize(
  work: AgentContext,
  reason: HostErrorReason,
  policy: SynthesisPolicy,
  pool: readonly Verdict[],
  env: DispatchEnv,
): Promise<Substitution> {
  if (policy === 'deny') return { verdict: withUnions(hostErrorVerdict(reason), pool), lifted: false };
  return consultAndSubstitute(work, hostErrorVerdict(reason, undefined, true), pool, env);
}

/**
 * Severity-max aggregation shared by `sequential/run_all` (transforms already
 * folded) and `parallel/strictest` (the single winning transform is applied
 * now; two or more are a conflict). A liftable winner is offered to the seam
 * at most once — severity guarantees no plain deny exists then.
 */
export async function aggregateAndConsult(work: AgentContext, all: Verdict[], sequential: boolean, env: DispatchEnv): Promise<DispatchOutcome> {
  const agg = aggregateStrictest(all, sequential);
  if (agg.kind === 'conflict') {
    const policy = env.composition.on_transform_conflict ?? 'deny';
    const s = await synthesize(work, HostError.TransformConflict, policy, all, env);
    return { combined: s.verdict, decidedBy: null, verdicts: all, resolvedBy: s.resolvedBy, pending: s.pending };
  }
  const index = agg.index;
  const winner = all[index];
  if (winner.decision === 'deny') {
    const s = await consultAndSubstitute(work, winner, all, env);
    const transformFailed = s.resolvedBy === 'approval' && !s.lifted;
    return { combined: s.verdict, decidedBy: transformFailed ? null : index, verdicts: all, resolvedBy: s.resolvedBy, pending: s.pending };
  }
  if (winner.decision === 'transform') {
    const applied = sequential ? winner : foldTransform(work, winner, env.mode);
    if (!isPermit(applied)) return { combined: withUnions(applied, all), decidedBy: null, verdicts: all };
    return { combined: withUnions(applied, all), decidedBy: index, verdicts: all };
  }
  // Pure allow: the lowest-index allow carries its own members (e.g. evidence) onto the record.
  return { combined: withUnions(winner, all), decidedBy: null, verdicts: all };
}
