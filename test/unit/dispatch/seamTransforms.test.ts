import { describe, expect, it } from 'vitest';
import type { JsonValue } from '../../../src/contract/agentHooks.ts';
import { ARGS_NOT_OBJECT, RESULT_NOT_CARRIABLE, refuseArgs, refuseResult, resultFromTarget } from '../../../src/dispatch/seamTransforms.ts';

describe('I4: what the tool seam can carry', () => {
  it('I4: tool args must stay an object', () => {
    expect(refuseArgs({ q: 1 })).toBeUndefined();
    for (const v of ['s', ['a'], 1, true, null] as JsonValue[]) expect(refuseArgs(v)).toBe(ARGS_NOT_OBJECT);
  });

  it('I4: a result may become a tool result object, a string or an array; nothing else', () => {
    for (const v of ['s', '', [], [1, 'x'], { content: 'c', success: false }, { content: null, success: true, extra: 1 }] as JsonValue[])
      expect(refuseResult(v)).toBeUndefined();
    for (const v of [0, false, null, {}, { content: 'c' }, { content: 'c', success: 'yes' }] as JsonValue[]) expect(refuseResult(v)).toBe(RESULT_NOT_CARRIABLE);
  });

  it('I4: a string or array becomes content; success and run metadata stay, every other member of the original goes', () => {
    const original = {
      content: 'raw',
      success: false,
      error: 'raw',
      state: { raw: 1 },
      executionTime: 3,
      deviceExecutionTime: 2,
      stop: true,
      workRegistration: { id: 1 },
      other: 'raw',
    };
    expect(resultFromTarget('[redacted]', original)).toEqual({ content: '[redacted]', success: false, executionTime: 3, deviceExecutionTime: 2, stop: true });
    expect(resultFromTarget(['a'], { content: 'raw', success: true })).toEqual({ content: ['a'], success: true });
    expect(resultFromTarget({ content: 'new', success: true }, original)).toEqual({ content: 'new', success: true });
  });

  it('I4: refusal details name the constraint, never the value', () => {
    expect(refuseArgs('secret-value-1')).not.toContain('secret-value-1');
    expect(refuseResult(123456789)).not.toContain('123456789');
  });
});
