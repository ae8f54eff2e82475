import { describe, expect, it } from 'vitest';
import { redactResultForEvents } from '../../../src/notify/redactResult.ts';

function skillResult() {
  return {
    content: 'done',
    success: true,
    executionTime: 12,
    workRegistration: { type: 'skill', name: 'report', args: { prompt: 'x'.repeat(50) }, data: { raw: [1, 2, 3] } },
  };
}

describe('B2: redactResultForEvents', () => {
  it('B2: a skill workRegistration loses args and gets data: null; the rest is kept', () => {
    const redacted = redactResultForEvents(skillResult());
    expect(redacted).toStrictEqual({
      content: 'done',
      success: true,
      executionTime: 12,
      workRegistration: { type: 'skill', name: 'report', data: null },
    });
    expect(Object.hasOwn(redacted.workRegistration, 'args')).toBe(false);
  });

  it('B2: the original result and its workRegistration are not mutated', () => {
    const original = skillResult();
    const snapshot = structuredClone(original);
    const work = original.workRegistration;
    const redacted = redactResultForEvents(original);
    expect(original).toStrictEqual(snapshot);
    expect(original.workRegistration).toBe(work);
    expect(redacted).not.toBe(original);
    expect(redacted.workRegistration).not.toBe(work);
  });

  it('B2: task work is kept untouched (same reference)', () => {
    const result = { content: 'ok', success: true, workRegistration: { type: 'task', args: { a: 1 }, data: { id: 't1' } } };
    expect(redactResultForEvents(result)).toBe(result);
    expect(result.workRegistration).toStrictEqual({ type: 'task', args: { a: 1 }, data: { id: 't1' } });
  });

  it('B2: a result without workRegistration is returned as is', () => {
    const result = { content: 'ok', success: true };
    expect(redactResultForEvents(result)).toBe(result);
  });

  it.each([null, undefined, 'text', 42, [1, 2]])('B2: a non-object value %j is returned as is', (value) => {
    expect(redactResultForEvents(value)).toBe(value);
  });

  it('B2: a non-object workRegistration is left alone', () => {
    const result = { content: 'ok', success: true, workRegistration: 'skill' };
    expect(redactResultForEvents(result)).toBe(result);
  });
});
