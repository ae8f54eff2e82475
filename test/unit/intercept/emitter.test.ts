import { describe, expect, it, vi } from 'vitest';
import {
  ALLOW,
  InterceptionBlocked,
  InterceptionEmitter,
  Verdict,
  createIdentityProvider,
  createMemorySequenceProvider,
  type AgentContext,
  type InterceptionRecord,
} from '../../../src/intercept/index.ts';
import { builder, sleep, toolCtx } from './helpers.ts';

describe('I1: envelope validation before dispatch', () => {
  it('I1: an invalid envelope denies context_invalid, calls no interceptor and records null identities', async () => {
    const intercept = vi.fn(() => ALLOW);
    const records: InterceptionRecord[] = [];
    const e = new InterceptionEmitter({ interceptors: [intercept], recordSink: (r) => void records.push(r) });
    const bad = { ...toolCtx(), tool_call: undefined } as unknown as AgentContext;
    const r = await e.emitUnchecked(bad);
    expect(intercept).not.toHaveBeenCalled();
    expect(r.verdict).toMatchObject({ decision: 'deny', reason: 'host_error:context_invalid' });
    expect(r).toMatchObject({ input_identity: null, enforced_identity: null, identity_provider: 'jcs-sha256', decided_by: null, verdicts: [] });
    expect(records).toHaveLength(1);
  });

  it('I1: NaN, Infinity and lone surrogates anywhere in the context fail closed', async () => {
    const intercept = vi.fn(() => ALLOW);
    const e = new InterceptionEmitter({ interceptors: [intercept], identityProvider: null });
    for (const poison of [{ x: Number.NaN }, { x: Number.POSITIVE_INFINITY }, { x: 'bad\ud800' }]) {
      const ctx = { ...toolCtx(), extensions: { acme: poison } } as unknown as AgentContext;
      const r = await e.emitUnchecked(ctx);
      expect(r.verdict.reason).toBe('host_error:context_invalid');
    }
    expect(intercept).not.toHaveBeenCalled();
  });

  it('I1: a context nested past the depth bound is denied, not crashed on', async () => {
    let deep: unknown = 1;
    for (let i = 0; i < 200; i++) deep = { d: deep };
    const e = new InterceptionEmitter({ interceptors: [() => ALLOW] });
    const r = await e.emitUnchecked({ ...toolCtx(), target: deep } as AgentContext);
    expect(r.verdict.reason).toBe('host_error:context_invalid');
  });

  it('I1: a failing custom identity provider denies before any interceptor runs', async () => {
    const intercept = vi.fn(() => ALLOW);
    for (const compute of [
      () => {
        throw new Error('boom');
      },
      () => 42 as unknown as string,
    ]) {
      const e = new InterceptionEmitter({ interceptors: [intercept], identityProvider: createIdentityProvider('host-hash', compute) });
      const r = await e.emitUnchecked(toolCtx());
      expect(r).toMatchObject({ identity_provider: 'host-hash', input_identity: null, enforced_identity: null });
      expect(r.verdict.reason).toBe('host_error:context_invalid');
    }
    expect(intercept).not.toHaveBeenCalled();
  });
});

describe('I1: timeouts', () => {
  it('I1: an interceptor past its timeout denies interceptor_timeout in its slot, and its signal is aborted', async () => {
    let seen: AbortSignal | undefined;
    const slow = async (_ctx: AgentContext, { signal }: { signal: AbortSignal }) => {
      seen = signal;
      await sleep(200);
      return ALLOW;
    };
    const e = new InterceptionEmitter({ interceptors: [() => ALLOW, slow], timeoutMs: 20 });
    const started = Date.now();
    const r = await e.emitUnchecked(toolCtx());
    expect(Date.now() - started).toBeLessThan(150);
    expect(r.verdict.reason).toBe('host_error:interceptor_timeout');
    expect(r.decided_by).toBe(1);
    expect(seen?.aborted).toBe(true);
  });

  it('I1: the default per-interceptor timeout is 5000 ms', async () => {
    vi.useFakeTimers();
    try {
      const e = new InterceptionEmitter({ interceptors: [() => new Promise<Verdict>(() => {})] });
      const pending = e.emitUnchecked(toolCtx());
      await vi.advanceTimersByTimeAsync(4999);
      let settled = false;
      void pending.then(() => (settled = true));
      await vi.advanceTimersByTimeAsync(0);
      expect(settled).toBe(false);
      await vi.advanceTimersByTimeAsync(1);
      expect((await pending).verdict.reason).toBe('host_error:interceptor_timeout');
    } finally {
      vi.useRealTimers();
    }
  });

  it('I1: timeoutMs null disables the bound', async () => {
    const e = new InterceptionEmitter({ interceptors: [async () => (await sleep(30), Verdict.deny('slow-but-fine'))], timeoutMs: null });
    expect((await e.emitUnchecked(toolCtx())).verdict.reason).toBe('slow-but-fine');
  });

  it('I1: a resolver past its timeout denies approval_resolver_failed', async () => {
    const e = new InterceptionEmitter({
      interceptors: [() => Verdict.escalate('needs-human')],
      resolver: () => new Promise(() => {}),
      resolverTimeoutMs: 20,
    });
    const r = await e.emitUnchecked(toolCtx());
    expect(r.verdict.reason).toBe('host_error:approval_resolver_failed');
    expect(r.resolved_by).toBe('rejection');
  });

  it('I1: invalid timeout configuration is refused at construction', () => {
    expect(() => new InterceptionEmitter({ timeoutMs: 0 })).toThrow(TypeError);
    expect(() => new InterceptionEmitter({ resolverTimeoutMs: -1 })).toThrow(TypeError);
  });
});

describe('I1: cancellation (exactly one record per emission)', () => {
  it('I1: aborting the caller signal records a fail-closed deny and rejects with the abort reason', async () => {
    const records: InterceptionRecord[] = [];
    let interceptorSignal: AbortSignal | undefined;
    const e = new InterceptionEmitter({
      interceptors: [async (_c, { signal }) => ((interceptorSignal = signal), await sleep(1000), ALLOW)],
      recordSink: (r) => void records.push(r),
    });
    const controller = new AbortController();
    const pending = e.emit(toolCtx(), { signal: controller.signal });
    setTimeout(() => controller.abort(new Error('caller went away')), 10);
    await expect(pending).rejects.toThrow('caller went away');
    expect(records).toHaveLength(1);
    expect(records[0].verdict).toMatchObject({ decision: 'deny', reason: 'host_error:interceptor_failed' });
    expect(interceptorSignal?.aborted).toBe(true);
  });

  it('I1: an already-aborted signal dispatches nothing but still records', async () => {
    const intercept = vi.fn(() => ALLOW);
    const e = new InterceptionEmitter({ interceptors: [intercept] });
    await expect(e.emitUnchecked(toolCtx(), { signal: AbortSignal.abort('stop') })).rejects.toBe('stop');
    expect(intercept).not.toHaveBeenCalled();
    expect(e.records).toHaveLength(1);
  });
});

describe('I1: record sink', () => {
  it('I1: sink throws and rejections never change control flow but are counted', async () => {
    let calls = 0;
    const e = new InterceptionEmitter({
      interceptors: [(ctx) => (ctx.interception_point === 'output' ? Verdict.deny('no') : ALLOW)],
      recordSink: async () => {
        calls++;
        if (calls % 2 === 0) throw new Error('disk full');
        return Promise.reject(new Error('network'));
      },
    });
    const b = builder();
    await expect(e.emit(b.input({ content: 'hi', role: 'user' }))).resolves.toEqual({ content: 'hi', role: 'user' });
    await expect(e.emit(b.output({ content: 'x' }))).rejects.toBeInstanceOf(InterceptionBlocked);
    expect(e.sinkFailures).toBe(2);
    expect(e.records).toHaveLength(2);
  });

  it('I1: the sink receives exactly one payload-free record per emission, failures included', async () => {
    const records: InterceptionRecord[] = [];
    const e = new InterceptionEmitter({
      interceptors: [
        () => Verdict.transform('$target.url', 'SECRET-NEW', { message: 'x'.repeat(400) }),
        () => {
          throw new Error('secret in message');
        },
      ],
      composition: { profile: 'sequential/run_all' },
      recordSink: (r) => void records.push(r),
    });
    await e.emitUnchecked(toolCtx({ url: 'SECRET-OLD' }));
    expect(records).toHaveLength(1);
    const text = JSON.stringify(records[0]);
    expect(text).not.toContain('SECRET');
    expect(text).not.toContain('secret in message');
    expect(records[0].verdict.reason).toBe('host_error:interceptor_failed');
    expect(records[0].verdict.message).toBe('interceptor raised Error');
  });
});

describe('I1: sequence', () => {
  it('I1: 100 concurrent emissions for one session get unique, strictly increasing sequences in call order', async () => {
    const records: InterceptionRecord[] = [];
    const e = new InterceptionEmitter({
      interceptors: [async () => (await sleep(Math.random() * 10), ALLOW)],
      recordSink: (r) => void records.push(r),
    });
    const b = builder();
    const contexts = Array.from({ length: 100 }, (_, i) => b.preToolCall({ id: `tc-${i}`, name: 't', args: { i } }));
    await Promise.all(contexts.map((c) => e.emit(c)));
    const seqs = records.map((r) => r.sequence).sort((a, c) => a - c);
    expect(new Set(seqs).size).toBe(100);
    expect(seqs).toEqual(Array.from({ length: 100 }, (_, i) => i));
    contexts.forEach((c, i) => expect(c.sequence).toBe(i));
  });

  it('I1: with an async sequence provider, concurrent emissions are numbered atomically in call order', async () => {
    const inner = createMemorySequenceProvider(40);
    const provider = { next: async (sid: string) => (await sleep(Math.random() * 5), inner.next(sid)) };
    const records: InterceptionRecord[] = [];
    const e = new InterceptionEmitter({ interceptors: [() => ALLOW], sequenceProvider: provider, recordSink: (r) => void records.push(r) });
    const contexts = Array.from({ length: 100 }, () => toolCtx());
    await Promise.all(contexts.map((c) => e.emitUnchecked(c)));
    expect(contexts.map((c) => c.sequence)).toEqual(Array.from({ length: 100 }, (_, i) => 40 + i));
    expect(new Set(records.map((r) => r.sequence)).size).toBe(100);
  });

  it('I1: the builder starts at 0 on agent_startup and increases across points', () => {
    const b = builder();
    const seq = [b.agentStartup({ toolsRegistered: [] }), b.input({ content: 'x', role: 'user' }), b.output({ content: 'y' })].map((c) => c.sequence);
    expect(seq).toEqual([0, 1, 2]);
  });
});

describe('I1: enforcement of the combined verdict', () => {
  it('I1: emit returns the post-transform target and writes it back into the aliased field', async () => {
    const e = new InterceptionEmitter({ interceptors: [() => Verdict.transform('$target.url', 'https://safe')] });
    const ctx = toolCtx();
    await expect(e.emit(ctx)).resolves.toEqual({ url: 'https://safe' });
    expect((ctx.tool_call as { args: unknown }).args).toEqual({ url: 'https://safe' });
    const [r] = e.records;
    expect(r.input_identity).not.toBe(r.enforced_identity);
  });

  it('I1: emit throws InterceptionBlocked carrying the record; the caller context is untouched', async () => {
    const e = new InterceptionEmitter({
      interceptors: [() => Verdict.transform('$target.url', 'x'), () => Verdict.deny({ reason: 'policy', message: 'nope' })],
      composition: { profile: 'sequential/run_all' },
    });
    const ctx = toolCtx();
    const err = await e.emit(ctx).catch((x: unknown) => x);
    expect(err).toBeInstanceOf(InterceptionBlocked);
    expect((err as InterceptionBlocked).record.verdict).toMatchObject({ decision: 'deny', reason: 'policy', message: 'nope' });
    expect(ctx.target).toEqual({ url: 'https://evil' });
  });

  it('I1: evaluate_only records the deny but proceeds, never applies transforms, never consults', async () => {
    const resolver = vi.fn();
    const e = new InterceptionEmitter({
      mode: 'evaluate_only',
      interceptors: [() => Verdict.transform('$target.url', 'x'), () => Verdict.escalate('ask')],
      resolver,
    });
    const ctx = toolCtx();
    await expect(e.emit(ctx)).resolves.toEqual({ url: 'https://evil' });
    expect(resolver).not.toHaveBeenCalled();
    expect(e.records[0]).toMatchObject({ mode: 'evaluate_only', verdict: { decision: 'deny', reason: 'ask' } });
    expect(e.records[0].input_identity).toBe(e.records[0].enforced_identity);
  });

  it('I1: enforce with zero interceptors denies no_interceptor', async () => {
    const e = new InterceptionEmitter();
    await expect(e.emit(toolCtx())).rejects.toMatchObject({ record: { verdict: { reason: 'host_error:no_interceptor' }, interceptors_registered: 0 } });
  });

  it('I1: a transform that leaves the I-JSON domain fails closed at finalize with a null enforced identity', async () => {
    const e = new InterceptionEmitter({ interceptors: [() => Verdict.transform('$target.url', 2 ** 53)] });
    const err = (await e.emit(toolCtx()).catch((x: unknown) => x)) as InterceptionBlocked;
    expect(err.record).toMatchObject({ verdict: { reason: 'host_error:context_invalid' }, enforced_identity: null, decided_by: null });
    expect(err.record.input_identity).toMatch(/^sha256:/);
  });

  it('I1: each interceptor gets its own deep copy', async () => {
    const seen: unknown[] = [];
    const e = new InterceptionEmitter({
      interceptors: [(ctx) => (((ctx.target as Record<string, unknown>).url = 'MUTATED'), ALLOW), (ctx) => (seen.push(structuredClone(ctx.target)), ALLOW)],
    });
    const ctx = toolCtx();
    await e.emit(ctx);
    expect(seen).toEqual([{ url: 'https://evil' }]);
    expect(ctx.target).toEqual({ url: 'https://evil' });
  });

  it('I1: interceptors may be objects with intercept() and names appear on the summaries', async () => {
    const e = new InterceptionEmitter({ interceptors: { guard: { intercept: () => Verdict.warn('odd', 'looks odd') } } });
    const r = await e.emitUnchecked(toolCtx());
    expect(r.verdicts).toEqual([{ index: 0, decision: 'allow', name: 'guard' }]);
    expect(r.verdict.warnings).toEqual([{ reason: 'odd', message: 'looks odd' }]);
  });

  it('I1: a host projection failure is recorded with the fail-closed shape', async () => {
    const e = new InterceptionEmitter({ interceptors: [() => ALLOW] });
    const r = await e.recordHostFailure({ interceptionPoint: 'pre_tool_call', sessionId: 's', sequence: 7, message: 'TypeError at tool_call.args' });
    expect(r).toMatchObject({
      verdict: { decision: 'deny', reason: 'host_error:context_invalid' },
      input_identity: null,
      decided_by: null,
      verdicts: [],
      sequence: 7,
      interceptors_registered: 1,
    });
  });
});
