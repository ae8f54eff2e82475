/**
 * SEC-6 (issue 24): a decision body that repeats a key is ambiguous JSON — `JSON.parse` keeps the
 * last value, a receiver's parser may keep the first — so it follows the invalid-response
 * rule (R5: `invalid_response`, then onError), never an allow or a deny picked by parser luck.
 * Over a real socket on 127.0.0.1, through HookDispatcher.evaluateToolCall.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { HookDispatcher, type AgentHook } from '../../../src/entry/index.ts';
import { startReceiver, type Receiver } from '../../support/receiver.ts';
import { captureLogger, toolContext } from '../../unit/dispatch/helpers.ts';

const BLOCKED_BY_CONTROL_ERROR = {
  status: 'blocked',
  reason: 'hook_control_error',
  result: {
    content: 'hook_control_error',
    success: false,
    error: 'hook_denied',
    state: { type: 'blocked', reason: 'hook_control_error' },
    executionTime: 0,
  },
};

const AMBIGUOUS: [label: string, body: string][] = [
  ['deny then allow', '{"decision":"deny","decision":"allow"}'],
  ['allow then deny', '{"decision":"allow","decision":"deny"}'],
  ['the same key spelled with an escape', '{"decision":"deny","d\\u0065cision":"allow"}'],
  ['two deny reasons', '{"decision":"deny","reason":"a","reason":"b"}'],
  ['a duplicate inside an extra field', '{"decision":"allow","extra":{"k":1,"k":2}}'],
];

let receiver: Receiver;
let body = '';
let d: HookDispatcher | undefined;
let logs: ReturnType<typeof captureLogger>;
let n = 0;

beforeAll(async () => {
  receiver = await startReceiver((req) => (req.path === '/allow' ? { status: 200, body: '{"decision":"allow"}' } : { status: 200, body }));
});
afterAll(async () => {
  await receiver.close();
});
afterEach(async () => {
  await d?.close();
});

async function evaluate(onError: 'continue' | 'block', withLaterAllow: boolean) {
  logs = captureLogger();
  d = new HookDispatcher({ env: {}, allowedCidrs: '127.0.0.1/32', logger: logs.logger });
  const op = `op_sec6_dup_${++n}`;
  const hooks: AgentHook[] = [{ id: 'case', type: 'beforeToolCall', webhook: { url: `${receiver.url}/case`, responseHandling: 'toolCall', onError } }];
  if (withLaterAllow) hooks.push({ id: 'later', type: 'beforeToolCall', webhook: { url: `${receiver.url}/allow`, responseHandling: 'toolCall' } });
  d.register(op, hooks);
  return d.evaluateToolCall(op, toolContext({ operationId: op }));
}

describe('SEC-6 duplicate keys in a decision response (R5)', () => {
  it.each(AMBIGUOUS)('SEC-6 duplicate keys: %s with onError block blocks with hook_control_error (invalid_response)', async (_label, json) => {
    body = json;
    expect(await evaluate('block', false)).toEqual(BLOCKED_BY_CONTROL_ERROR);
    expect(logs.text()).toContain('"code":"invalid_response"');
  });

  it.each(AMBIGUOUS)('SEC-6 duplicate keys: %s with onError continue skips the control (neither its allow nor its deny counts)', async (_label, json) => {
    body = json;
    expect(await evaluate('continue', true)).toEqual({ status: 'allow' });
    expect(logs.text()).toContain('"code":"invalid_response"');
  });

  it('SEC-6 duplicate keys: repeated keys in different objects, and a notification body with duplicates, are not ambiguous decisions', async () => {
    body = '{"decision":"deny","reason":"r","list":[{"k":1},{"k":2}]}';
    expect(await evaluate('block', false)).toMatchObject({ status: 'blocked', reason: 'r' });
    body = '{"note":1,"note":2}'; // no top-level decision: R4, a notification
    expect(await evaluate('block', false)).toEqual({ status: 'allow' });
  });
});
