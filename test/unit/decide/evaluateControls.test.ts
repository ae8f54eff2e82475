import { describe, expect, it } from 'vitest';
import { evaluateControls, type ControlHook } from '../../../src/decide/evaluateControls.ts';
import type { ToolCallWebhookResult } from '../../../src/decide/decisionWebhook.ts';
import { blockedAfterResult, blockedBeforeResult, defaultDenyReason, HOOK_CONTROL_ERROR } from '../../../src/decide/blockedResult.ts';
import { EnvHookConfigError } from '../../../src/contract/errors.ts';
import { quietLogger, toolContext } from '../dispatch/helpers.ts';

const control = (
  id: string,
  extra: Partial<NonNullable<ControlHook['webhook']>> = {},
  type: 'beforeToolCall' | 'afterToolCall' = 'beforeToolCall',
  matcher?: string,
): ControlHook => ({
  id,
  type,
  ...(matcher !== undefined ? { matcher } : {}),
  webhook: { url: 'https://example.com/h', delivery: 'fetch', timeout: 30, fallback: 'fetch', responseHandling: 'toolCall', onError: 'continue', ...extra },
});

function harness(answers: Record<string, ToolCallWebhookResult>, opts: { env?: ControlHook[] | (() => ControlHook[]); signal?: AbortSignal } = {}) {
  const calls: string[] = [];
  const events: Record<string, unknown>[] = [];
  const run = async (hook: ControlHook, event: Record<string, unknown>) => {
    calls.push(hook.id);
    events.push(event);
    return answers[hook.id] ?? { status: 'ignored' as const };
  };
  const envHooks = typeof opts.env === 'function' ? opts.env : () => (opts.env as ControlHook[] | undefined) ?? [];
  return {
    calls,
    events,
    evaluate: (callers: ControlHook[], type: 'beforeToolCall' | 'afterToolCall' = 'beforeToolCall') =>
      evaluateControls({
        type,
        context: toolContext(),
        ...(type === 'afterToolCall' ? { result: { content: 'raw', success: true } } : {}),
        callerHooks: () => callers,
        envHooks,
        run,
        logger: quietLogger(),
        ...(opts.signal ? { signal: opts.signal } : {}),
      }),
  };
}

const allow: ToolCallWebhookResult = { status: 'success', decision: { decision: 'allow' } };
const deny = (reason?: string): ToolCallWebhookResult => ({
  status: 'success',
  decision: reason === undefined ? { decision: 'deny' } : { decision: 'deny', reason },
});

describe('evaluateControls (pure)', () => {
  it('R5a: controls run in registration order; an allow does not end the check', async () => {
    const h = harness({ a: allow, b: allow, c: allow });
    expect(await h.evaluate([control('a'), control('b'), control('c')])).toEqual({ status: 'allow' });
    expect(h.calls).toEqual(['a', 'b', 'c']);
  });

  it('R5a: the first deny blocks and later controls are not asked', async () => {
    const h = harness({ a: allow, b: deny('first'), c: deny('second') });
    const outcome = await h.evaluate([control('a'), control('b'), control('c')]);
    expect(outcome).toMatchObject({ status: 'blocked', reason: 'first' });
    expect(h.calls).toEqual(['a', 'b']);
  });

  it('R4: a notification answer (ignored) goes on to the next control; never an allow that skips later policies', async () => {
    const h = harness({ a: { status: 'ignored' }, b: deny('later policy') });
    expect(await h.evaluate([control('a', { onError: 'block' }), control('b')])).toMatchObject({ status: 'blocked', reason: 'later policy' });
  });

  it('R2: a deny without a non-empty reason uses the default per type', async () => {
    expect(defaultDenyReason('beforeToolCall')).toBe('Blocked by beforeToolCall hook.');
    expect(defaultDenyReason('afterToolCall')).toBe('Blocked by afterToolCall hook.');
    expect(await harness({ a: deny() }).evaluate([control('a')])).toMatchObject({ reason: 'Blocked by beforeToolCall hook.' });
    expect(await harness({ a: deny('') }).evaluate([control('a')])).toMatchObject({ reason: 'Blocked by beforeToolCall hook.' });
    expect(await harness({ a: deny() }).evaluate([control('a', {}, 'afterToolCall')], 'afterToolCall')).toMatchObject({
      reason: 'Blocked by afterToolCall hook.',
      result: { content: 'Blocked by afterToolCall hook.' },
    });
  });

  it('R6: a whitespace-only deny reason is kept as given', async () => {
    expect(await harness({ a: deny('  ') }).evaluate([control('a')])).toMatchObject({ status: 'blocked', reason: '  ', result: { content: '  ' } });
  });

  it('R5b: exact blocked shapes for before and after', async () => {
    expect(await harness({ a: deny('no') }).evaluate([control('a')])).toEqual({
      status: 'blocked',
      reason: 'no',
      result: { content: 'no', success: false, error: 'hook_denied', state: { type: 'blocked', reason: 'no' }, executionTime: 0 },
    });
    expect(await harness({ a: deny('withheld') }).evaluate([control('a', {}, 'afterToolCall')], 'afterToolCall')).toEqual({
      status: 'blocked',
      reason: 'withheld',
      result: { content: 'withheld', success: false, error: 'hook_denied', state: { phase: 'afterToolCall', type: 'blocked', reason: 'withheld' } },
    });
    expect(blockedBeforeResult('x')).toEqual({ content: 'x', success: false, error: 'hook_denied', state: { type: 'blocked', reason: 'x' }, executionTime: 0 });
    expect(blockedAfterResult('x')).toEqual({
      content: 'x',
      success: false,
      error: 'hook_denied',
      state: { phase: 'afterToolCall', type: 'blocked', reason: 'x' },
    });
  });

  it.each(['http_error', 'network_error', 'timeout', 'invalid_response', 'response_too_large', 'configuration'] as const)(
    'R5: %s with onError continue skips this control and evaluates the rest',
    async (code) => {
      const h = harness({ a: { status: 'error', code }, b: allow });
      expect(await h.evaluate([control('a'), control('b')])).toEqual({ status: 'allow' });
      expect(h.calls).toEqual(['a', 'b']);
    },
  );

  it.each(['http_error', 'network_error', 'timeout', 'invalid_response', 'response_too_large', 'configuration'] as const)(
    'R5: %s with onError block blocks with hook_control_error (before and after alike)',
    async (code) => {
      const before = await harness({ a: { status: 'error', code } }).evaluate([control('a', { onError: 'block' })]);
      expect(before).toEqual({ status: 'blocked', reason: HOOK_CONTROL_ERROR, result: blockedBeforeResult(HOOK_CONTROL_ERROR) });
      const after = await harness({ a: { status: 'error', code } }).evaluate([control('a', { onError: 'block' }, 'afterToolCall')], 'afterToolCall');
      expect(after).toEqual({ status: 'blocked', reason: HOOK_CONTROL_ERROR, result: blockedAfterResult(HOOK_CONTROL_ERROR) });
      expect(after).toMatchObject({ result: { error: 'hook_denied', content: 'hook_control_error' } });
    },
  );

  it('R5: cancellation never grants permission (a cancelled answer, or an abort after an allow)', async () => {
    expect(await harness({ a: { status: 'cancelled' } }).evaluate([control('a')])).toEqual({ status: 'cancelled' });
    const ac = new AbortController();
    const h = harness({}, { signal: ac.signal });
    const outcome = await evaluateControls({
      type: 'beforeToolCall',
      context: toolContext(),
      callerHooks: () => [control('a')],
      envHooks: () => [],
      run: async () => {
        ac.abort();
        return allow; // a late allow
      },
      logger: quietLogger(),
      signal: ac.signal,
    });
    expect(outcome).toEqual({ status: 'cancelled' });
    void h;
  });

  it('R5: an already-aborted signal asks nobody', async () => {
    const ac = new AbortController();
    ac.abort();
    const h = harness({ a: allow }, { signal: ac.signal });
    expect(await h.evaluate([control('a')])).toEqual({ status: 'cancelled' });
    expect(h.calls).toEqual([]);
  });

  it('L3/E4: caller controls first, then environment controls once, last', async () => {
    const env = [control('server-env-webhook:beforeToolCall')];
    const h = harness({ a: allow, 'server-env-webhook:beforeToolCall': deny('env says no') }, { env });
    expect(await h.evaluate([control('a')])).toMatchObject({ status: 'blocked', reason: 'env says no' });
    expect(h.calls).toEqual(['a', 'server-env-webhook:beforeToolCall']);
  });

  it('L5: an invalid environment configuration fails closed with hook_control_error', async () => {
    const h = harness(
      { a: allow },
      {
        env: () => {
          throw new EnvHookConfigError(['AGENT_HOOK_WEBHOOK_TOKEN'], 'missing');
        },
      },
    );
    expect(await h.evaluate([control('a')])).toEqual({ status: 'blocked', reason: HOOK_CONTROL_ERROR, result: blockedBeforeResult(HOOK_CONTROL_ERROR) });
  });

  it('D4: controls are filtered by type and matcher against identifier/apiName', async () => {
    const h = harness({});
    await h.evaluate([
      control('other-tool', {}, 'beforeToolCall', '^calendar/'),
      control('this-tool', {}, 'beforeToolCall', '^web-browsing/search$'),
      control('after', {}, 'afterToolCall'),
    ]);
    expect(h.calls).toEqual(['this-tool']);
  });

  it('R3/B2: afterToolCall controls receive the full result with the context', async () => {
    const h = harness({});
    await h.evaluate([control('a', {}, 'afterToolCall')], 'afterToolCall');
    expect(h.events[0]).toMatchObject({ toolCallId: 'call_1', result: { content: 'raw', success: true } });
  });
});
