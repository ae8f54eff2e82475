import type { AgentContext, Verdict } from '../contract/agentHooks.ts';
import { aggregateAndConsult, consultAndSubstitute } from './aggregate.ts';
import { withUnions } from './composition.ts';
import { foldTransform, type DispatchEnv, type DispatchOutcome } from './fold.ts';
import { callInterceptor } from './interceptor.ts';
import { ALLOW, isHostSynthesized, isPermit } from './verdict.ts';

/**
 * `sequential/first_deny`: registration order, transforms fold through
 * before the next interceptor runs, the first deny short-circuits. A liftable
 * deny consults the seam; on a permit, `stop` ends the emission with the
 * resolution and `resume` substitutes it and continues the fold, consulting
 * every later liftable deny in turn.
 */
export async function dispatchFirstDeny(work: AgentContext, env: DispatchEnv): Promise<DispatchOutcome> {
  const own: Verdict[] = [];
  const pool: Verdict[] = [];
  let lastTransform: { index: number; verdict: Verdict } | undefined;
  let lastLifted: number | undefined;
  let resolvedBy: 'approval' | 'rejection' | undefined;
  let pending: DispatchOutcome['pending'];
  const end = (combined: Verdict, decidedBy: number | null): DispatchOutcome => ({ combined, decidedBy, verdicts: own, resolvedBy, pending });

  for (let i = 0; i < env.interceptors.length; i++) {
    const v = await callInterceptor(env.interceptors[i], work, env.timeoutMs, env.signal);
    own.push(v);
    pool.push(v);
    if (isHostSynthesized(v)) return end(withUnions(v, pool), i); // a failure's deny takes this slot
    if (v.decision === 'deny') {
      const s = await consultAndSubstitute(work, v, pool, env);
      if (s.resolvedBy !== undefined) resolvedBy = s.resolvedBy;
      pending = s.pending;
      if (!s.lifted) return end(s.verdict, s.resolvedBy === 'approval' ? null : i);
      pool.push(s.verdict);
      if ((env.composition.on_approval ?? 'stop') === 'stop') return end(s.verdict, i);
      lastLifted = i;
      if (s.verdict.decision === 'transform') lastTransform = { index: i, verdict: s.verdict };
      continue;
    }
    if (v.decision === 'transform') {
      const folded = foldTransform(work, v, env.mode);
      if (!isPermit(folded)) return end(withUnions(folded, pool), null); // a transform that cannot apply short-circuits
      lastTransform = { index: i, verdict: folded };
    }
  }
  // No standing deny: the last transform wins, else the first allow (its evidence
  // reaches the record); a resumed permit with
  // nothing after it still names the consulted interceptor.
  const combined = lastTransform?.verdict ?? pool.find((v) => v.decision === 'allow') ?? { ...ALLOW };
  return end(withUnions(combined, pool), lastTransform?.index ?? lastLifted ?? null);
}

/**
 * `sequential/run_all`: every interceptor runs in order with transforms
 * folding through for visibility; the severity-max aggregate decides. Only a
 * transform that fails to apply short-circuits.
 */
export async function dispatchRunAll(work: AgentContext, env: DispatchEnv): Promise<DispatchOutcome> {
  const all: Verdict[] = [];
  for (const entry of env.interceptors) {
    const v = await callInterceptor(entry, work, env.timeoutMs, env.signal);
    if (v.decision !== 'transform') {
      all.push(v);
      continue;
    }
    const folded = foldTransform(work, v, env.mode);
    all.push(folded);
    if (!isPermit(folded)) return { combined: withUnions(folded, all), decidedBy: null, verdicts: all };
  }
  return aggregateAndConsult(work, all, true, env);
}
