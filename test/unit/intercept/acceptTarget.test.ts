import { describe, expect, it } from 'vitest';
import { InterceptionBlocked, InterceptionEmitter, Verdict, type InterceptionRecord } from '../../../src/intercept/index.ts';
import { toolCtx } from './helpers.ts';

const onlyObjects = (t: unknown) => (t !== null && typeof t === 'object' && !Array.isArray(t) ? undefined : 'target must be an object');

describe('I1/I4: the host limit on a folded target (EmitOptions.acceptTarget)', () => {
  it('I4: a permitted fold the host refuses is recorded and thrown as host_error:transform_invalid, with the refusal as message and the context untouched', async () => {
    const records: InterceptionRecord[] = [];
    const e = new InterceptionEmitter({ interceptors: [() => Verdict.transform('$target', 'flat')], recordSink: (r) => void records.push(r) });
    const ctx = toolCtx({ q: 'original' });
    const error = await e.emit(ctx, { acceptTarget: onlyObjects }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(InterceptionBlocked);
    expect(records).toHaveLength(1);
    expect(records[0]!.verdict).toEqual({ decision: 'deny', reason: 'host_error:transform_invalid', message: 'target must be an object' });
    expect(records[0]!.decided_by).toBeNull();
    expect(ctx.target).toEqual({ q: 'original' });
    expect(ctx.tool_call).toMatchObject({ args: { q: 'original' } });
  });

  it('I4: an accepted fold is written back; an unchanged target never asks the host', async () => {
    const asked: unknown[] = [];
    const accept = (t: unknown) => void asked.push(t);
    const rewrite = new InterceptionEmitter({ interceptors: [() => Verdict.transform('$target.q', 'safe')] });
    expect(await rewrite.emit(toolCtx({ q: 'x' }), { acceptTarget: accept })).toEqual({ q: 'safe' });
    const allow = new InterceptionEmitter({ interceptors: [() => Verdict.allow()] });
    expect(await allow.emit(toolCtx({ q: 'x' }), { acceptTarget: accept })).toEqual({ q: 'x' });
    expect(asked).toEqual([{ q: 'safe' }]);
  });

  it('I4: evaluate_only writes nothing back, so the host is not asked and the emission proceeds', async () => {
    const e = new InterceptionEmitter({ mode: 'evaluate_only', interceptors: [() => Verdict.transform('$target', 3)] });
    expect(await e.emit(toolCtx({ q: 'x' }), { acceptTarget: onlyObjects })).toEqual({ q: 'x' });
  });
});
