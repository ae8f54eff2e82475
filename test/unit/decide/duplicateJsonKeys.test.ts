/**
 * SEC-6 (issue 24): the duplicate-key scan behind R5's `invalid_response` for ambiguous JSON.
 */
import { describe, expect, it } from 'vitest';
import { hasDuplicateJsonKey } from '../../../src/decide/duplicateJsonKeys.ts';
import { parseToolCallHookResponse } from '../../../src/decide/parseDecisionResponse.ts';

describe('SEC-6 duplicate keys: hasDuplicateJsonKey', () => {
  it.each([
    '{"decision":"allow","decision":"deny"}',
    '{"decision":"deny","d\\u0065cision":"allow"}',
    '{"a":{"b":1,"b":1}}',
    '{"a":[{"x":[{"k":1,"k":2}]}]}',
    '{"__proto__":1,"__proto__":2}',
    '{"":1,"":2}',
  ])('SEC-6 duplicate keys: %s has a duplicate', (text) => {
    expect(hasDuplicateJsonKey(text)).toBe(true);
  });

  it.each([
    '{"decision":"allow"}',
    '{"a":{"k":1},"b":{"k":1}}',
    '[{"k":1},{"k":2}]',
    '{"s":"\\"k\\":1,\\"k\\":2","k":"{\\"k\\":"}',
    '{"a":"}","b":"{","c":"[","d":","}',
    '{"k":[1,{"k":2}],"j":{"k":{"k":3}}}',
    '"decision"',
    '{ "a" : 1 , "b" : [ 1 , 2 ] , "c" : { } }',
  ])('SEC-6 duplicate keys: %s has none', (text) => {
    expect(hasDuplicateJsonKey(text)).toBe(false);
  });

  it('SEC-6 duplicate keys: parseToolCallHookResponse classifies an ambiguous decision as invalid_response (R5-order: after the decision check)', () => {
    expect(parseToolCallHookResponse('{"decision":"deny","decision":"allow"}')).toEqual({ status: 'error', code: 'invalid_response' });
    expect(parseToolCallHookResponse('{"decision":"allow","decision":"allow"}')).toEqual({ status: 'error', code: 'invalid_response' });
    // No top-level decision: still R4's notification, duplicates or not.
    expect(parseToolCallHookResponse('{"x":1,"x":2}')).toEqual({ status: 'ignored' });
  });
});
