import {
  CompositionConfigSchema,
  type CompositionConfig,
  type CompositionProfile,
  type Verdict,
  type VerdictSummary,
  type Warning,
} from '../contract/agentHooks.ts';
import { isPermit, severity } from './verdict.ts';

export const DEFAULT_COMPOSITION: CompositionConfig = Object.freeze({ profile: 'sequential/first_deny', on_approval: 'stop' });

/**
 * Validate a host's composition declaration against the closed set and
 * resolve it — knobs the profile consults get their normative fail-closed
 * defaults, knobs it never consults are dropped — so records carry exactly
 * the configuration that governed the emission.
 */
export function resolveComposition(config: CompositionConfig | undefined): CompositionConfig {
  const c = CompositionConfigSchema.parse(config ?? DEFAULT_COMPOSITION);
  switch (c.profile) {
    case 'sequential/first_deny':
      return { profile: c.profile, on_approval: c.on_approval ?? 'stop' };
    case 'sequential/run_all':
      return { profile: c.profile };
    case 'parallel/strictest':
      return { profile: c.profile, on_transform_conflict: c.on_transform_conflict ?? 'deny' };
    case 'parallel/unanimous':
      return { profile: c.profile, on_disagreement: c.on_disagreement ?? 'deny' };
  }
}

export function isSequential(profile: CompositionProfile): boolean {
  return profile === 'sequential/first_deny' || profile === 'sequential/run_all';
}

export type Aggregate = { kind: 'winner'; index: number } | { kind: 'conflict'; indices: number[] };

/**
 * Severity-max winner. Block ties go to the lowest index. Transform ties
 * go to the last one in sequential profiles (they composed through the fold)
 * and are a conflict in parallel ones (same snapshot, cannot compose).
 */
export function aggregateStrictest(verdicts: readonly Verdict[], sequential: boolean): Aggregate {
  const max = Math.max(...verdicts.map(severity));
  const top = verdicts.flatMap((v, i) => (severity(v) === max ? [i] : []));
  if (max === 1 && top.length >= 2) {
    return sequential ? { kind: 'winner', index: top[top.length - 1] } : { kind: 'conflict', indices: top };
  }
  return { kind: 'winner', index: top[0] };
}

/** First-seen union; two warnings are equal iff both reason and message are equal. */
function unionWarnings(verdicts: readonly Verdict[]): Warning[] {
  const out: Warning[] = [];
  for (const v of verdicts) {
    for (const w of v.warnings ?? []) {
      if (!out.some((o) => o.reason === w.reason && o.message === w.message)) out.push({ ...w });
    }
  }
  return out;
}

/** First-seen union of labels from permit verdicts only. */
function unionLabels(verdicts: readonly Verdict[]): string[] {
  const out: string[] = [];
  for (const v of verdicts) {
    if (!isPermit(v)) continue;
    for (const l of v.result_labels ?? []) if (!out.includes(l)) out.push(l);
  }
  return out;
}

/**
 * The combined verdict carries the warnings of every verdict in
 * the emission, and labels only when the emission proceeds (an action
 * that did not proceed persists no labels).
 */
export function withUnions(combined: Verdict, pool: readonly Verdict[]): Verdict {
  const out: Verdict = { ...combined };
  const warnings = unionWarnings([...pool, combined]);
  if (warnings.length > 0) out.warnings = warnings;
  else delete out.warnings;
  const labels = isPermit(combined) ? unionLabels([...pool, combined]) : [];
  if (labels.length > 0) out.result_labels = labels;
  else delete out.result_labels;
  return out;
}

/** Payload-free per-interceptor summaries. */
export function summarize(verdicts: readonly Verdict[], names: readonly (string | undefined)[]): VerdictSummary[] {
  return verdicts.map((v, index) => {
    const s: VerdictSummary = { index, decision: v.decision };
    if (v.reason !== undefined) s.reason = v.reason;
    const name = names[index];
    if (name !== undefined) s.name = name;
    return s;
  });
}
