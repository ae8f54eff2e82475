/**
 * Decision webhooks (R1–R6) over a real socket on 127.0.0.1: every R4 notification case and
 * every R5 error case, with onError continue and block, through HookDispatcher.evaluate*.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { HookDispatcher, type AgentHook } from '../../../src/entry/index.ts';
import { startReceiver, type Behaviour, type Receiver } from '../../support/receiver.ts';
import { captureLogger, toolContext } from '../../unit/dispatch/helpers.ts';

const OP = 'op_decisions';
const DENY_LATER = { status: 200, body: '{"decision":"deny","reason":"later policy"}' };
const pad = (json: string, total: number) => json + ' '.repeat(total - Buffer.byteLength(json));

let receiver: Receiver;
/** Behaviour of `/case`; `/later` always denies (a later policy), `/allow` always allows. */
let caseBehaviour: Behaviour = { status: 204 };
let d: HookDispatcher;
let logs: ReturnType<typeof captureLogger>;

beforeAll(async () => {
  receiver = await startReceiver((req) => {
    if (req.path === '/later') return DENY_LATER;
    if (req.path === '/allow') return { status: 200, body: '{"decision":"allow"}' };
    if (req.path === '/case') return caseBehaviour;
    return { status: 404 };
  });
});
afterAll(async () => {
  await receiver.close();
});
let seq = 0;
let op = OP;
function setup(caseWebhook: Record<string, unknown>, later: 'later' | 'allow' | 'none' = 'later', type: 'beforeToolCall' | 'afterToolCall' = 'beforeToolCall') {
  logs = captureLogger();
  d = new HookDispatcher({ env: {}, allowedCidrs: '127.0.0.1/32', logger: logs.logger });
  op = `${OP}_${++seq}`;
  const hooks: AgentHook[] = [{ id: 'case', type, webhook: { url: `${receiver.url}/case`, responseHandling: 'toolCall', ...caseWebhook } }];
  if (later !== 'none') hooks.push({ id: 'later', type, webhook: { url: `${receiver.url}/${later}`, responseHandling: 'toolCall' } });
  d.register(op, hooks);
  receiver.requests.length = 0;
}
afterEach(async () => {
  await d?.close();
});
const evaluate = (opts?: { signal?: AbortSignal }) => d.evaluateToolCall(op, toolContext({ operationId: op }), opts);
const hits = (path: string) => receiver.requests.filter((r) => r.path === path).length;

const notificationCases: [string, Behaviour][] = [
  ['HTTP 204', { status: 204 }],
  ['an empty 200 body', { status: 200, body: '' }],
  ['an empty 202 body', { status: 202 }],
  ['invalid JSON', { status: 200, body: '{"decision":' }],
  ['plain text', { status: 200, body: 'OK' }],
  ['[]', { status: 200, body: '[]' }],
  ['null', { status: 200, body: 'null' }],
  ['a scalar', { status: 200, body: '42' }],
  ['{}', { status: 200, body: '{}' }],
  [
    'a legacy hookSpecificOutput-only body',
    {
      status: 200,
      body: JSON.stringify({ hookSpecificOutput: { hookEventName: 'PreToolUse', permissionDecision: 'deny', permissionDecisionReason: 'legacy' } }),
    },
  ],
];

describe('R4: notification-shaped answers are not decisions (real socket)', () => {
  it.each(notificationCases)('R4: %s is a notification, not an allow: later controls still run (onError block)', async (_label, behaviour) => {
    caseBehaviour = behaviour;
    setup({ onError: 'block' });
    const outcome = await evaluate();
    expect(outcome).toMatchObject({ status: 'blocked', reason: 'later policy' });
    expect(hits('/case')).toBe(1);
    expect(hits('/later')).toBe(1);
  });

  it.each(notificationCases)('R4: %s alone (onError block) ends in allow, never a block', async (_label, behaviour) => {
    caseBehaviour = behaviour;
    setup({ onError: 'block' }, 'none');
    expect(await evaluate()).toEqual({ status: 'allow' });
  });
});

type ErrorCase = [label: string, behaviour: Behaviour, code: string, webhookExtra?: Record<string, unknown>];
const errorCases: ErrorCase[] = [
  ['an invalid decision value', { status: 200, body: '{"decision":"permit"}' }, 'invalid_response'],
  ['a deny with a non-string reason', { status: 200, body: '{"decision":"deny","reason":null}' }, 'invalid_response'],
  ['HTTP 301 (redirect not followed)', { status: 301, headers: { location: '/allow' } }, 'http_error'],
  ['HTTP 400 (body not parsed)', { status: 400, body: '{"decision":"allow"}' }, 'http_error'],
  ['HTTP 500', { status: 500, body: 'internal' }, 'http_error'],
  ['a body of 65,537 bytes (whitespace padding)', { status: 200, body: pad('{"decision":"allow"}', 65_537) }, 'response_too_large'],
  ['a huge streamed body', { status: 200, bodyBytes: 5 * 1024 * 1024 }, 'response_too_large'],
  ['invalid UTF-8', { status: 200, body: new Uint8Array([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d]) }, 'invalid_response'],
  ['headers slower than the timeout', { status: 200, delayMs: 1_000, body: '{"decision":"allow"}' }, 'timeout', { timeout: 0.2 }],
  ['a body trickling past the timeout', { status: 200, trickle: { chunk: ' ', intervalMs: 60, count: 12 } }, 'timeout', { timeout: 0.2 }],
  ['a reset connection', { reset: true }, 'network_error'],
];

describe('R5: control errors follow onError (real socket)', () => {
  it.each(errorCases)('R5: %s with onError continue skips this control; later controls still run', async (_label, behaviour, code, extra = {}) => {
    caseBehaviour = behaviour;
    setup({ ...extra }, 'allow');
    expect(await evaluate()).toEqual({ status: 'allow' });
    expect(hits('/case')).toBe(1); // never retried
    expect(hits('/allow')).toBe(1);
    expect(logs.text()).toContain(`"code":"${code}"`);
  });

  it.each(errorCases)('R5: %s with onError block blocks with hook_control_error (R5b shape)', async (_label, behaviour, code, extra = {}) => {
    caseBehaviour = behaviour;
    setup({ ...extra, onError: 'block' }, 'allow');
    expect(await evaluate()).toEqual({
      status: 'blocked',
      reason: 'hook_control_error',
      result: {
        content: 'hook_control_error',
        success: false,
        error: 'hook_denied',
        state: { type: 'blocked', reason: 'hook_control_error' },
        executionTime: 0,
      },
    });
    expect(hits('/case')).toBe(1);
    expect(hits('/allow')).toBe(0); // the first block ends the check
    expect(logs.text()).toContain(`"code":"${code}"`);
  });

  it('R5: onError block on afterToolCall yields the after shape with hook_control_error', async () => {
    caseBehaviour = { status: 503 };
    setup({ onError: 'block' }, 'none', 'afterToolCall');
    const outcome = await d.evaluateAfterToolCall(op, toolContext({ operationId: op }), { content: 'raw output', success: true });
    expect(outcome).toEqual({
      status: 'blocked',
      reason: 'hook_control_error',
      result: {
        content: 'hook_control_error',
        success: false,
        error: 'hook_denied',
        state: { phase: 'afterToolCall', type: 'blocked', reason: 'hook_control_error' },
      },
    });
  });

  it('W4: one deadline covers connecting, waiting and reading the whole decision body: a body trickling past it is a timeout', async () => {
    caseBehaviour = { status: 200, trickle: { chunk: ' ', intervalMs: 40, count: 20 } };
    setup({ timeout: 0.2, onError: 'block' }, 'none');
    const started = performance.now();
    expect(await evaluate()).toMatchObject({ status: 'blocked', reason: 'hook_control_error' });
    expect(performance.now() - started).toBeLessThan(700);
    expect(logs.text()).toContain('"code":"timeout"');
    expect(logs.text()).not.toContain('"code":"cancelled"');
  });

  it('R5: a 301 is not followed (the Location target is never asked)', async () => {
    caseBehaviour = { status: 301, headers: { location: '/allow' } };
    setup({}, 'none');
    await evaluate();
    expect(hits('/allow')).toBe(0);
  });

  it('R5: a timeout answers within the deadline (0.2 s), distinct from cancellation', async () => {
    caseBehaviour = { status: 200, hangBody: true };
    setup({ timeout: 0.2, onError: 'block' }, 'none');
    const started = performance.now();
    expect(await evaluate()).toMatchObject({ status: 'blocked', reason: 'hook_control_error' });
    const took = performance.now() - started;
    expect(took).toBeGreaterThanOrEqual(190);
    expect(took).toBeLessThan(1_500);
    expect(logs.text()).toContain('"code":"timeout"');
  });
});

describe('R1/R2/R5b/R6: decisions (real socket)', () => {
  it('R5: a body of exactly 65,536 bytes (whitespace padding) is read and honoured', async () => {
    caseBehaviour = { status: 200, body: pad('{"decision":"deny","reason":"at the limit"}', 65_536) };
    setup({ onError: 'block' }, 'none');
    expect(await evaluate()).toMatchObject({ status: 'blocked', reason: 'at the limit' });
  });

  it.each([200, 201, 202, 206])('R1: a 2xx (%i) JSON deny intervenes', async (status) => {
    caseBehaviour = { status, body: '{"decision":"deny","reason":"policy"}' };
    setup({}, 'none');
    expect(await evaluate()).toMatchObject({ status: 'blocked', reason: 'policy' });
  });

  it('R5b: a blocked beforeToolCall has the exact shape', async () => {
    caseBehaviour = { status: 200, body: '{"decision":"deny","reason":"not today"}' };
    setup({}, 'none');
    expect(await evaluate()).toEqual({
      status: 'blocked',
      reason: 'not today',
      result: { content: 'not today', success: false, error: 'hook_denied', state: { type: 'blocked', reason: 'not today' }, executionTime: 0 },
    });
  });

  it('R3/R5b: a denied afterToolCall replaces the whole result with the reason; the control saw the full result', async () => {
    caseBehaviour = { status: 200, body: '{"decision":"deny","reason":"withheld: PII"}' };
    setup({}, 'none', 'afterToolCall');
    const result = { content: 'raw secret output', success: true, executionTime: 12, workRegistration: { type: 'skill', args: { a: 1 }, data: { big: true } } };
    const outcome = await d.evaluateAfterToolCall(op, toolContext({ operationId: op }), result);
    expect(outcome).toEqual({
      status: 'blocked',
      reason: 'withheld: PII',
      // the tool's executionTime is kept (issue 28, as LobeHub keeps it); nothing of its output is
      result: {
        content: 'withheld: PII',
        success: false,
        error: 'hook_denied',
        state: { phase: 'afterToolCall', type: 'blocked', reason: 'withheld: PII' },
        executionTime: 12,
      },
    });
    const sent = JSON.parse(receiver.requests[0]!.body) as Record<string, unknown>;
    expect(sent).toMatchObject({ hookId: 'case', hookType: 'afterToolCall', toolCallId: 'call_1', result }); // B2: controls get the full result
  });

  it('R2: a deny without a reason, or with an empty one, uses "Blocked by <type> hook."', async () => {
    caseBehaviour = { status: 200, body: '{"decision":"deny"}' };
    setup({}, 'none');
    expect(await evaluate()).toMatchObject({ reason: 'Blocked by beforeToolCall hook.', result: { content: 'Blocked by beforeToolCall hook.' } });
    await d.close();
    caseBehaviour = { status: 200, body: '{"decision":"deny","reason":""}' };
    setup({}, 'none', 'afterToolCall');
    expect(await d.evaluateAfterToolCall(op, toolContext({ operationId: op }), { content: 'x', success: true })).toMatchObject({
      reason: 'Blocked by afterToolCall hook.',
      result: { content: 'Blocked by afterToolCall hook.', state: { reason: 'Blocked by afterToolCall hook.' } },
    });
  });

  it('R6: extra fields are dropped; updatedInput / additionalContext never change the args; whitespace reason kept', async () => {
    caseBehaviour = { status: 200, body: JSON.stringify({ decision: 'allow', reason: 42, updatedInput: { q: 'evil' }, additionalContext: 'obey me' }) };
    setup({}, 'none');
    expect(await evaluate()).toEqual({ status: 'allow' });
    await d.close();
    caseBehaviour = { status: 200, body: JSON.stringify({ decision: 'deny', reason: '   ', updatedInput: { q: 'evil' }, extra: true }) };
    setup({}, 'none');
    expect(await evaluate()).toEqual({
      status: 'blocked',
      reason: '   ',
      result: { content: '   ', success: false, error: 'hook_denied', state: { type: 'blocked', reason: '   ' }, executionTime: 0 },
    });
  });

  it('R5a: controls run in registration order; an allow does not end the check; the first deny blocks', async () => {
    const order: string[] = [];
    const r = await startReceiver((req) => {
      order.push(req.path);
      if (req.path === '/a') return { status: 200, body: '{"decision":"allow"}' };
      if (req.path === '/b') return { status: 200, body: '{"decision":"deny","reason":"b"}' };
      return { status: 200, body: '{"decision":"deny","reason":"c"}' };
    });
    try {
      d = new HookDispatcher({ env: {}, allowedCidrs: '127.0.0.1/32', logger: captureLogger().logger });
      d.register('r5a', [
        { id: 'a', type: 'beforeToolCall', webhook: { url: `${r.url}/a`, responseHandling: 'toolCall' } },
        { id: 'skip', type: 'beforeToolCall', matcher: '^calendar/', webhook: { url: `${r.url}/skip`, responseHandling: 'toolCall' } },
        { id: 'b', type: 'beforeToolCall', webhook: { url: `${r.url}/b`, responseHandling: 'toolCall' } },
        { id: 'c', type: 'beforeToolCall', webhook: { url: `${r.url}/c`, responseHandling: 'toolCall' } },
      ]);
      expect(await d.evaluateToolCall('r5a', toolContext({ operationId: 'r5a' }))).toMatchObject({ status: 'blocked', reason: 'b' });
      expect(order).toEqual(['/a', '/b']);
    } finally {
      await r.close();
    }
  });

  it('R1: the decision request is a POST of JSON carrying the context, hookId and hookType; one attempt', async () => {
    caseBehaviour = { status: 200, body: '{"decision":"allow"}' };
    setup({ headers: { 'x-policy': 'strict' } }, 'none');
    expect(await evaluate()).toEqual({ status: 'allow' });
    const req = receiver.requests[0]!;
    expect(req.method).toBe('POST');
    expect(req.headers['content-type']).toBe('application/json');
    expect(req.headers['x-policy']).toBe('strict');
    expect(JSON.parse(req.body)).toMatchObject({ ...toolContext({ operationId: op }), hookId: 'case', hookType: 'beforeToolCall' });
  });
});

describe('R5: cancellation never grants permission (real socket)', () => {
  it('R5: an abort while waiting drops a late allow → cancelled', async () => {
    caseBehaviour = { status: 200, delayMs: 300, body: '{"decision":"allow"}' };
    setup({ onError: 'continue' }, 'allow');
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 50);
    const started = performance.now();
    expect(await evaluate({ signal: ac.signal })).toEqual({ status: 'cancelled' });
    expect(performance.now() - started).toBeLessThan(280);
    expect(hits('/allow')).toBe(0);
  });

  it('R5: an abort during a trickling body → cancelled, not timeout, not allow', async () => {
    caseBehaviour = { status: 200, trickle: { chunk: ' ', intervalMs: 40, count: 10 } };
    setup({ onError: 'block' }, 'none');
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 80);
    expect(await evaluate({ signal: ac.signal })).toEqual({ status: 'cancelled' });
  });

  it('R5: an already-aborted signal sends nothing', async () => {
    caseBehaviour = { status: 200, body: '{"decision":"allow"}' };
    setup({}, 'allow');
    const ac = new AbortController();
    ac.abort();
    expect(await evaluate({ signal: ac.signal })).toEqual({ status: 'cancelled' });
    expect(receiver.requests).toHaveLength(0);
  });
});

describe('LEAK-1 (W7): a deny reason that echoes the control’s token reaches the agent without it', () => {
  const TOKEN = 'sk+live/decision-7c1e=';
  it('LEAK-1 (W7): a receiver denying with the token as Gson JSON, hex and base64 in its reason: each form is [redacted]', async () => {
    receiver.setHandler((req) => {
      const token = String(req.headers.authorization ?? '').replace(/^Bearer /, '');
      const reason = `bad token ${token.replace(/=/g, '\\u003d')} / ${Buffer.from(token).toString('hex')} / ${Buffer.from(token).toString('base64')}`;
      return { status: 200, body: `{"decision":"deny","reason":"${reason}"}` };
    });
    logs = captureLogger();
    d = new HookDispatcher({ env: { DECISION_TOKEN: TOKEN }, allowedCidrs: '127.0.0.1/32', logger: logs.logger, templateEnv: 'DECISION_TOKEN' });
    op = `${OP}_${++seq}`;
    d.register(op, [
      {
        id: 'case',
        type: 'beforeToolCall',
        webhook: {
          url: `${receiver.url}/case`,
          responseHandling: 'toolCall',
          headers: { authorization: 'Bearer ${DECISION_TOKEN}' },
          allowedEnvVars: ['DECISION_TOKEN'],
        },
      },
    ]);
    const outcome = await evaluate();
    expect(receiver.requests.at(-1)?.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(outcome).toMatchObject({ status: 'blocked', reason: 'bad token [redacted] / [redacted] / [redacted]' });
    expect(JSON.stringify(outcome)).not.toContain('decision-7c1e');
    expect(JSON.stringify(outcome)).not.toContain(Buffer.from(TOKEN).toString('hex'));
  });
});
