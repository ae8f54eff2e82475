import { describe, expect, it } from 'vitest';
import { AllowDecisionSchema, DenyDecisionSchema, ToolCallDecisionSchema } from '../../../src/contract/decision.ts';
import { accepts } from './helpers.ts';

describe('R1 / R6: decision schema', () => {
  it('R1: {decision:"allow"} is an allow', () => {
    expect(accepts(ToolCallDecisionSchema, { decision: 'allow' })).toEqual({ decision: 'allow' });
  });

  it('R1: a deny without reason has no reason key', () => {
    const parsed = accepts(ToolCallDecisionSchema, { decision: 'deny' });
    expect(parsed).toEqual({ decision: 'deny' });
    expect('reason' in parsed).toBe(false);
  });

  it('R1: a deny with a string reason keeps it', () => {
    expect(accepts(ToolCallDecisionSchema, { decision: 'deny', reason: 'not on weekends' })).toEqual({ decision: 'deny', reason: 'not on weekends' });
  });

  it('R6: empty and whitespace-only deny reasons are kept as given', () => {
    expect(accepts(ToolCallDecisionSchema, { decision: 'deny', reason: '' })).toEqual({ decision: 'deny', reason: '' });
    expect(accepts(ToolCallDecisionSchema, { decision: 'deny', reason: '   ' })).toEqual({ decision: 'deny', reason: '   ' });
  });

  it('R6: extra keys are dropped (allow and deny); updatedInput / additionalContext never survive', () => {
    expect(accepts(ToolCallDecisionSchema, { decision: 'allow', updatedInput: { x: 1 }, additionalContext: 'c', extra: true })).toEqual({ decision: 'allow' });
    expect(accepts(ToolCallDecisionSchema, { decision: 'deny', reason: 'r', updatedInput: { x: 1 }, hookSpecificOutput: {} })).toEqual({
      decision: 'deny',
      reason: 'r',
    });
  });

  it.each([
    ['a number', 5],
    ['an object', { text: 'x' }],
    ['true', true],
  ])('R6: an allow with a non-string reason (%s) is accepted and the reason dropped', (_label, reason) => {
    expect(accepts(ToolCallDecisionSchema, { decision: 'allow', reason })).toEqual({ decision: 'allow' });
  });

  it('R6: an allow with a string reason drops it too', () => {
    expect(accepts(ToolCallDecisionSchema, { decision: 'allow', reason: 'fine' })).toEqual({ decision: 'allow' });
  });

  it.each([
    ['null', null],
    ['a number', 42],
    ['an object', { text: 'x' }],
    ['an array', ['x']],
    ['false', false],
  ])('R5-order: a deny with a %s reason is rejected (naming reason)', (_label, reason) => {
    const result = ToolCallDecisionSchema.safeParse({ decision: 'deny', reason });
    expect(result.success).toBe(false);
    const deny = DenyDecisionSchema.safeParse({ decision: 'deny', reason });
    expect(deny.success).toBe(false);
    expect(deny.error!.issues.map((i) => i.path.join('.'))).toEqual(['reason']);
  });

  it.each([
    ['an unknown value', { decision: 'maybe' }],
    ['an upper-case value', { decision: 'ALLOW' }],
    ['a legacy value', { decision: 'block' }],
    ['an approve value', { decision: 'approve' }],
    ['a null decision', { decision: null }],
    ['a numeric decision', { decision: 1 }],
    ['a missing decision', {}],
    ['an array', [{ decision: 'allow' }]],
    ['null', null],
    ['a string', 'allow'],
  ])('R5-order: %s is not a valid decision', (_label, input) => {
    expect(ToolCallDecisionSchema.safeParse(input).success).toBe(false);
  });

  it('R1: the allow and deny schemas reject each other’s value', () => {
    expect(AllowDecisionSchema.safeParse({ decision: 'deny' }).success).toBe(false);
    expect(DenyDecisionSchema.safeParse({ decision: 'allow' }).success).toBe(false);
  });

  it('R6: the parsed decision is a fresh object', () => {
    const input = { decision: 'deny', reason: 'r', extra: 1 };
    const parsed = accepts(ToolCallDecisionSchema, input);
    expect(parsed).not.toBe(input);
    expect(input.extra).toBe(1);
  });
});
