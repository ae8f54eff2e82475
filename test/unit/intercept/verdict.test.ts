import { describe, expect, it } from 'vitest';
import { ALLOW, Verdict, parseWireVerdict, parseTransformPath, applyTransformPath, resolveComposition } from '../../../src/intercept/index.ts';

function reason(raw: unknown): string | undefined {
  const r = parseWireVerdict(raw);
  return r.ok ? undefined : r.reason;
}

describe('I1: the verdict gate (parseWireVerdict)', () => {
  it('I1: accepts the three wire decisions and folds null members into absence', () => {
    expect(parseWireVerdict({ decision: 'allow', reason: null, warnings: null })).toEqual({ ok: true, verdict: { decision: 'allow' } });
    expect(parseWireVerdict({ decision: 'deny', approval: {} })).toEqual({ ok: true, verdict: { decision: 'deny', approval: {} } });
    expect(parseWireVerdict({ decision: 'transform', transform: { path: '$target' } })).toEqual({
      ok: true,
      verdict: { decision: 'transform', transform: { path: '$target', value: null } },
    });
  });

  it('I1: "warn" and "escalate" on the wire are verdict_invalid', () => {
    expect(reason({ decision: 'warn' })).toBe('host_error:verdict_invalid');
    expect(reason({ decision: 'escalate' })).toBe('host_error:verdict_invalid');
  });

  it('I1: every verdict-gate violation maps to verdict_invalid', () => {
    for (const bad of [
      null,
      'allow',
      [],
      {},
      { decision: 'deny', reason: 'host_error:forged' },
      { decision: 'allow', warnings: [{ reason: 'host_error:x' }] },
      { decision: 'allow', warnings: ['x'] },
      { decision: 'allow', warnings: {} },
      { decision: 'allow', approval: {} },
      { decision: 'transform', approval: {}, transform: { path: '$target', value: 1 } },
      { decision: 'deny', approval: [] },
      { decision: 'transform' },
      { decision: 'allow', transform: { path: '$target.x', value: 1 } },
      { decision: 'allow', evidence: 'x' },
      { decision: 'allow', evidence: { artefact: 'x'.repeat(10226) } },
      { decision: 'allow', result_labels: [1] },
      { decision: 'allow', message: 5 },
    ]) {
      expect(reason(bad), JSON.stringify(bad)?.slice(0, 80)).toBe('host_error:verdict_invalid');
    }
    expect(reason({ decision: 'allow', evidence: { artefact: 'x'.repeat(10225) } })).toBeUndefined();
  });

  it('I1: a non-JSON value returned by an interceptor is interceptor_failed', () => {
    expect(reason({ decision: 'transform', transform: { path: '$target', value: Number.NaN } })).toBe('host_error:interceptor_failed');
    expect(reason({ decision: 'allow', reason: () => 1 })).toBe('host_error:interceptor_failed');
  });

  it('I1: path roots outside $target are transform_target_forbidden; grammar errors transform_invalid', () => {
    const t = (path: string) => reason({ decision: 'transform', transform: { path, value: 1 } });
    expect(t('$snapshot.x')).toBe('host_error:transform_target_forbidden');
    expect(t('target.x')).toBe('host_error:transform_target_forbidden');
    for (const p of ['$targets.x', '$target.', '$target[-1]', '$target[*]', "$target['x']", '$target..x']) expect(t(p)).toBe('host_error:transform_invalid');
    for (const p of ['$target', '$target.a', '$target[0]', '$target["a-b"]', '$policy_target.a']) expect(t(p)).toBeUndefined();
  });

  it('I1: helpers build the wire shapes: warn is allow+warning, escalate is deny+approval', () => {
    expect(ALLOW).toEqual({ decision: 'allow' });
    expect(Verdict.allow()).toEqual({ decision: 'allow' });
    expect(Verdict.warn('r', 'm')).toEqual({ decision: 'allow', warnings: [{ reason: 'r', message: 'm' }] });
    expect(Verdict.warn({ reason: 'r' })).toEqual({ decision: 'allow', warnings: [{ reason: 'r' }] });
    expect(Verdict.deny({ reason: 'no' })).toEqual({ decision: 'deny', reason: 'no' });
    expect(Verdict.escalate('ask')).toEqual({ decision: 'deny', reason: 'ask', approval: {} });
    expect(Verdict.transform('$target.a', 1)).toEqual({ decision: 'transform', transform: { path: '$target.a', value: 1 } });
    for (const v of [Verdict.warn('r'), Verdict.escalate('x'), Verdict.transform('$target', null)]) expect(parseWireVerdict(v).ok).toBe(true);
  });
});

describe('I1: transform application', () => {
  const apply = (target: unknown, path: string, value: unknown) => {
    const p = parseTransformPath(path);
    if (!p.ok) return p.reason;
    const r = applyTransformPath(target as never, p.segments, value as never);
    return r.ok ? r.target : r.reason;
  };

  it('I1: replaces existing members and indexes only, never creates', () => {
    expect(apply({ a: { b: [1, 2] } }, '$target.a.b[1]', 9)).toEqual({ a: { b: [1, 9] } });
    expect(apply({ a: 1 }, '$target["a"]', null)).toEqual({ a: null });
    expect(apply({ a: 1 }, '$target', 'whole')).toBe('whole');
    expect(apply({ a: 1 }, '$target.b', 1)).toBe('host_error:transform_invalid');
    expect(apply([1], '$target[1]', 1)).toBe('host_error:transform_invalid');
    expect(apply({ a: 1 }, '$target[0]', 1)).toBe('host_error:transform_invalid');
    expect(apply('str', '$target.a', 1)).toBe('host_error:transform_invalid');
  });
});

describe('I1: composition declaration', () => {
  it('I1: knob defaults are the normative fail-closed values and unconsulted knobs are dropped', () => {
    expect(resolveComposition(undefined)).toEqual({ profile: 'sequential/first_deny', on_approval: 'stop' });
    expect(resolveComposition({ profile: 'sequential/run_all', on_approval: 'resume' })).toEqual({ profile: 'sequential/run_all' });
    expect(resolveComposition({ profile: 'parallel/strictest' })).toEqual({ profile: 'parallel/strictest', on_transform_conflict: 'deny' });
    expect(resolveComposition({ profile: 'parallel/unanimous', on_transform_conflict: 'approval' })).toEqual({
      profile: 'parallel/unanimous',
      on_disagreement: 'deny',
    });
  });

  it('I1: the profile set is closed — quorum and most-permissive are refused', () => {
    expect(() => resolveComposition({ profile: 'parallel/quorum' } as never)).toThrow();
    expect(() => resolveComposition({ profile: 'sequential/first_deny', on_approval: 'continue' } as never)).toThrow();
  });
});
