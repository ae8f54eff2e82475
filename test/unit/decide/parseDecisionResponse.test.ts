import { describe, expect, it } from 'vitest';
import { MAX_DECISION_RESPONSE_BYTES, parseToolCallHookResponse } from '../../../src/entry/index.ts';

const pad = (json: string, total: number) => json + ' '.repeat(total - Buffer.byteLength(json));

describe('parseToolCallHookResponse (pure, R5-order)', () => {
  it('R1: {"decision":"allow"} and {"decision":"deny","reason":…} are decisions', () => {
    expect(parseToolCallHookResponse('{"decision":"allow"}')).toEqual({ status: 'success', decision: { decision: 'allow' } });
    expect(parseToolCallHookResponse('{"decision":"deny","reason":"nope"}')).toEqual({ status: 'success', decision: { decision: 'deny', reason: 'nope' } });
    expect(parseToolCallHookResponse('{"decision":"deny"}')).toEqual({ status: 'success', decision: { decision: 'deny' } });
  });

  it('R1: bytes and strings parse the same', () => {
    expect(parseToolCallHookResponse(new TextEncoder().encode('{"decision":"allow"}'))).toEqual(parseToolCallHookResponse('{"decision":"allow"}'));
  });

  it.each([
    ['an empty body', ''],
    ['invalid JSON', '{'],
    ['plain text', 'ok'],
    ['[]', '[]'],
    ['null', 'null'],
    ['a scalar number', '42'],
    ['a scalar string', '"allow"'],
    ['true', 'true'],
    ['{}', '{}'],
    ['a legacy hookSpecificOutput-only body', '{"hookSpecificOutput":{"permissionDecision":"deny","permissionDecisionReason":"x"}}'],
    ['a nested decision only', '{"result":{"decision":"deny"}}'],
  ])('R4: %s is a notification (ignored), not a decision', (_label, body) => {
    expect(parseToolCallHookResponse(body)).toEqual({ status: 'ignored' });
  });

  it.each([
    ['an unknown decision value', '{"decision":"maybe"}'],
    ['decision null', '{"decision":null}'],
    ['decision as a number', '{"decision":1}'],
    ['decision upper-case', '{"decision":"ALLOW"}'],
    ['a deny with a numeric reason', '{"decision":"deny","reason":42}'],
    ['a deny with reason null', '{"decision":"deny","reason":null}'],
    ['a deny with an object reason', '{"decision":"deny","reason":{"t":"x"}}'],
  ])('R5-order: %s is invalid_response', (_label, body) => {
    expect(parseToolCallHookResponse(body)).toEqual({ status: 'error', code: 'invalid_response' });
  });

  it('R6: on an allow, reason is ignored whatever its type; extra fields are dropped', () => {
    for (const reason of ['"x"', '42', 'null', '{}']) {
      expect(parseToolCallHookResponse(`{"decision":"allow","reason":${reason}}`)).toEqual({ status: 'success', decision: { decision: 'allow' } });
    }
    const parsed = parseToolCallHookResponse('{"decision":"deny","reason":"r","updatedInput":{"q":"evil"},"additionalContext":"ctx","extra":1}');
    expect(parsed).toEqual({ status: 'success', decision: { decision: 'deny', reason: 'r' } });
  });

  it('R6: a whitespace-only deny reason is kept as given', () => {
    expect(parseToolCallHookResponse('{"decision":"deny","reason":"   "}')).toEqual({ status: 'success', decision: { decision: 'deny', reason: '   ' } });
  });

  it('R5: 65,536 bytes (whitespace padding) is accepted; 65,537 is response_too_large', () => {
    expect(MAX_DECISION_RESPONSE_BYTES).toBe(65_536);
    expect(parseToolCallHookResponse(pad('{"decision":"allow"}', 65_536))).toEqual({ status: 'success', decision: { decision: 'allow' } });
    expect(parseToolCallHookResponse(pad('{"decision":"allow"}', 65_537))).toEqual({ status: 'error', code: 'response_too_large' });
    expect(parseToolCallHookResponse(`{}${' '.repeat(65_535)}`)).toEqual({ status: 'error', code: 'response_too_large' });
  });

  it('R5-order: size is checked before UTF-8, UTF-8 before JSON', () => {
    const big = new Uint8Array(65_537).fill(0xff);
    expect(parseToolCallHookResponse(big)).toEqual({ status: 'error', code: 'response_too_large' });
    // Invalid UTF-8 that would otherwise be "invalid JSON" (a notification) is invalid_response.
    expect(parseToolCallHookResponse(new Uint8Array([0xff, 0xfe]))).toEqual({ status: 'error', code: 'invalid_response' });
    const bad = new Uint8Array([...new TextEncoder().encode('{"decision":"allow","x":"'), 0xc3, 0x28, ...new TextEncoder().encode('"}')]);
    expect(parseToolCallHookResponse(bad)).toEqual({ status: 'error', code: 'invalid_response' });
  });

  it('R5-order: JSON failure (notification) comes before the value check', () => {
    expect(parseToolCallHookResponse('{"decision":"maybe"')).toEqual({ status: 'ignored' });
  });

  it('R5-order: the size limit counts bytes, not characters', () => {
    // 21,846 three-byte characters = 65,538 bytes, but only 21,846 UTF-16 units.
    const json = `{"decision":"allow","p":"${'€'.repeat(21_846)}"}`;
    expect(json.length).toBeLessThan(65_536);
    expect(parseToolCallHookResponse(json)).toEqual({ status: 'error', code: 'response_too_large' });
  });
});

describe('parseToolCallHookResponse: the fast value check equals the contract schema', () => {
  it('R5-order/R6: same verdict as ToolCallDecisionSchema for every value shape', async () => {
    const { ToolCallDecisionSchema } = await import('../../../src/contract/decision.ts');
    const values = ['allow', 'deny', 'ALLOW', '', null, 1, true, {}, []];
    const reasons = [undefined, 'r', '', '  ', null, 0, {}, []];
    for (const decision of values) {
      for (const reason of reasons) {
        const body = reason === undefined ? { decision } : { decision, reason };
        const schema = ToolCallDecisionSchema.safeParse(body);
        const expected = schema.success ? { status: 'success', decision: schema.data } : { status: 'error', code: 'invalid_response' };
        expect(parseToolCallHookResponse(JSON.stringify(body)), JSON.stringify(body)).toEqual(expected);
      }
    }
  });
});
