import type { AgentContext, Verdict } from '../contract/agentHooks.ts';
import { aggregateAndConsult, synthesize } from './aggregate.ts';
import { withUnions } from './composition.ts';
import type { DispatchEnv, DispatchOutcome } from './fold.ts';
import { callInterceptor } from './interceptor.ts';
import { HostError } from './reasons.ts';

/**
 * Parallel profiles: every interceptor gets an isolated copy of the
 * same untransformed snapshot, so there is no fold. They are dispatched
 * concurrently; "parallel" names the isolation, the observable semantics are
 * the same either way.
 */
export async function dispatchParallel(work: AgentContext, env: DispatchEnv): Promise<DispatchOutcome> {
  const snapshot = structuredClone(work);
  const all: Verdict[] = await Promise.all(env.interceptors.map((entry) => callInterceptor(entry, snapshot, env.timeoutMs, env.signal)));
  if (env.composition.profile === 'parallel/strictest') return aggregateAndConsult(work, all, false, env);
  // parallel/unanimous: anything but unanimous allow is a disagreement.
  if (all.every((v) => v.decision === 'allow')) return { combined: withUnions(all[0], all), decidedBy: null, verdicts: all };
  const policy = env.composition.on_disagreement ?? 'deny';
  const s = await synthesize(work, HostError.CompositionDisagreement, policy, all, env);
  return { combined: s.verdict, decidedBy: null, verdicts: all, resolvedBy: s.resolvedBy, pending: s.pending };
}
