import { describe, expect, it, vi } from 'vitest';
import { InterceptionEmitter, Verdict, jcsSha256Identity, type ApprovalRequest, type ApprovalResolution } from '../../../src/intercept/index.ts';
import { toolCtx } from './helpers.ts';

async function resolveWith(resolution: (req: ApprovalRequest) => unknown, extra: Partial<ConstructorParameters<typeof InterceptionEmitter>[0]> = {}) {
  const e = new InterceptionEmitter({
    interceptors: [() => Verdict.escalate('needs-human')],
    resolver: (req) => resolution(req) as ApprovalResolution,
    ...extra,
  });
  return e.emitUnchecked(toolCtx());
}

describe('I1: approval seam resolution validation order', () => {
  it('I1: step 1 echo rule wins over every later failure', async () => {
    const r = await resolveWith(() => ({ outcome: 'bogus', context_identity: 'sha256:forged' }));
    expect(r.verdict.reason).toBe('host_error:approval_identity_mismatch');
    expect(r.resolved_by).toBe('rejection');
    expect(r.decided_by).toBe(0);
  });

  it('I1: step 2 shape — unknown outcome, or a verdict missing/present against the outcome, is approval_resolver_failed', async () => {
    for (const bad of [
      (q: ApprovalRequest) => ({ outcome: 'bogus', context_identity: q.context_identity, verdict: { decision: 'allow' } }),
      (q: ApprovalRequest) => ({ outcome: 'approve', context_identity: q.context_identity }),
      (q: ApprovalRequest) => ({ outcome: 'unresolved', context_identity: q.context_identity, verdict: { decision: 'allow' } }),
    ]) {
      expect((await resolveWith(bad)).verdict.reason).toBe('host_error:approval_resolver_failed');
    }
  });

  it('I1: unresolved is approval_unresolved', async () => {
    const r = await resolveWith((q) => ({ outcome: 'unresolved', context_identity: q.context_identity }));
    expect(r.verdict.reason).toBe('host_error:approval_unresolved');
  });

  it('I1: step 3 a carried verdict failing the verdict gate is verdict_invalid; step 4 outcome/decision mismatch too', async () => {
    const gate = await resolveWith((q) => ({ outcome: 'approve', context_identity: q.context_identity, verdict: { decision: 'warn' } }));
    expect(gate.verdict.reason).toBe('host_error:verdict_invalid');
    const mismatch = await resolveWith((q) => ({ outcome: 'reject', context_identity: q.context_identity, verdict: { decision: 'allow' } }));
    expect(mismatch.verdict.reason).toBe('host_error:verdict_invalid');
  });

  it('I1: a raising resolver is approval_resolver_failed', async () => {
    const r = await resolveWith(() => {
      throw new Error('ticketing down');
    });
    expect(r.verdict).toMatchObject({ decision: 'deny', reason: 'host_error:approval_resolver_failed' });
  });

  it('I1: the request carries the liftable deny, the point, and the identity of the context as presented', async () => {
    const seen: ApprovalRequest[] = [];
    const r = await resolveWith((q) => (seen.push(q), { outcome: 'approve', context_identity: q.context_identity, verdict: { decision: 'allow' } }));
    expect(r).toMatchObject({ verdict: { decision: 'allow' }, resolved_by: 'approval', fold_truncated: false, decided_by: 0 });
    expect(seen[0].interception_point).toBe('pre_tool_call');
    expect(seen[0].verdict).toEqual({ decision: 'deny', reason: 'needs-human', approval: {} });
    expect(seen[0].context_identity).toBe(jcsSha256Identity(seen[0].context));
  });
});

describe('I1: approval redaction seam', () => {
  it('I1: the request identity is computed over the redacted context; record identities are unaffected', async () => {
    const seen: ApprovalRequest[] = [];
    const r = await resolveWith((q) => (seen.push(q), { outcome: 'approve', context_identity: q.context_identity, verdict: { decision: 'allow' } }), {
      approvalRedactor: (ctx) => ({ ...ctx, target: { url: '[redacted]' }, tool_call: { ...(ctx.tool_call as object), args: { url: '[redacted]' } } }),
    });
    expect(JSON.stringify(seen[0].context)).not.toContain('https://evil');
    expect(seen[0].context_identity).toBe(jcsSha256Identity(seen[0].context));
    expect(r.input_identity).toMatch(/^sha256:/);
    expect(r.enforced_identity).toBe(r.input_identity);
    expect(r.input_identity).not.toBe(seen[0].context_identity);
  });

  it('I1: a raising redactor fails the consultation closed as approval_resolver_failed', async () => {
    const resolver = vi.fn();
    const e = new InterceptionEmitter({
      interceptors: [() => Verdict.escalate('ask')],
      resolver,
      approvalRedactor: () => {
        throw new Error('redactor bug');
      },
    });
    const r = await e.emitUnchecked(toolCtx());
    expect(r.verdict.reason).toBe('host_error:approval_resolver_failed');
    expect(resolver).not.toHaveBeenCalled();
  });
});
