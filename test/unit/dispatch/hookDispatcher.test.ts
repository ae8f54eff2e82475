import { afterEach, describe, expect, it } from 'vitest';
import { CriticalHookDeliveryError, HookDispatcher, type AgentHook } from '../../../src/entry/index.ts';
import { HookConfigError } from '../../../src/contract/errors.ts';
import { HOOK_TYPES, type HookType } from '../../../src/contract/hookTypes.ts';
import { captureLogger, quietLogger, recordingProducer, rejection, thrown, toolContext } from './helpers.ts';

const OP = 'op_1';
const dispatchers: HookDispatcher[] = [];
function local(extra: ConstructorParameters<typeof HookDispatcher>[0] = {}): HookDispatcher {
  const d = new HookDispatcher({ env: {}, logger: quietLogger(), ...extra });
  dispatchers.push(d);
  return d;
}
function queue(producer = recordingProducer(), extra: ConstructorParameters<typeof HookDispatcher>[0] = {}) {
  const d = new HookDispatcher({ mode: 'queue', producer, env: {}, logger: quietLogger(), ...extra });
  dispatchers.push(d);
  return { d, producer };
}
afterEach(async () => {
  await Promise.all(dispatchers.splice(0).map((d) => d.close()));
});

const ev = (extra: Record<string, unknown> = {}) => ({ operationId: OP, ...extra });
const toolEv = (identifier: string, apiName: string, extra: Record<string, unknown> = {}) => ev({ identifier, apiName, ...extra });
/** A webhook URL that is never contacted in these unit tests (queue mode, or hooks not selected). */
const WH = { url: 'https://hooks.example.com/in' };

describe('HookDispatcher: registration and ordering', () => {
  it('D1: handlers run in registration order, each awaited before the next', async () => {
    const d = local();
    const log: string[] = [];
    const slow = (name: string, ms: number) => async () => {
      log.push(`${name}:start`);
      await new Promise((r) => setTimeout(r, ms));
      log.push(`${name}:end`);
    };
    d.register(OP, [
      { id: 'a', type: 'onComplete', handler: slow('a', 20) },
      { id: 'b', type: 'onComplete', handler: slow('b', 1) },
      { id: 'c', type: 'onComplete', handler: () => void log.push('c') },
    ]);
    await d.dispatch(OP, 'onComplete', ev({ reason: 'done' }));
    expect(log).toEqual(['a:start', 'a:end', 'b:start', 'b:end', 'c']);
  });

  it('D1: only hooks of the dispatched type and operation run; every one of the 16 types dispatches', async () => {
    const d = local();
    const seen: string[] = [];
    d.register(
      OP,
      HOOK_TYPES.map((type) => ({ id: type, type, handler: () => void seen.push(type) })),
    );
    d.register('other', [{ id: 'x', type: 'onComplete', handler: () => void seen.push('other') }]);
    for (const type of HOOK_TYPES) await d.dispatch(OP, type, ev());
    expect(seen).toEqual(HOOK_TYPES.filter((t) => t !== 'beforeToolCall')); // D9b: beforeToolCall handlers only in dispatchBeforeToolCall
  });

  it('D1: the handler receives the event (loose fields pass through)', async () => {
    const d = local();
    let got: unknown;
    d.register(OP, [{ id: 'a', type: 'afterStep', handler: (e) => void (got = e) }]);
    await d.dispatch(OP, 'afterStep', ev({ stepIndex: 2, content: 'hi', custom: { x: 1 } }));
    expect(got).toMatchObject({ operationId: OP, stepIndex: 2, content: 'hi', custom: { x: 1 } });
  });

  it('D2: unregister removes the registration', async () => {
    const d = local();
    let n = 0;
    d.register(OP, [{ id: 'a', type: 'onComplete', handler: () => void n++ }]);
    await d.dispatch(OP, 'onComplete', ev());
    d.unregister(OP);
    await d.dispatch(OP, 'onComplete', ev());
    expect(n).toBe(1);
    expect(d.getSerializedHooks(OP)).toBeUndefined();
    expect(() => d.unregister(OP)).not.toThrow();
  });

  it('D9: a second register appends; an empty batch is valid; duplicate ids are rejected', async () => {
    const d = local();
    const log: string[] = [];
    d.register(OP, [{ id: 'a', type: 'onComplete', handler: () => void log.push('a') }]);
    d.register(OP, []);
    d.register(OP, [{ id: 'b', type: 'onComplete', handler: () => void log.push('b') }]);
    expect(thrown(() => d.register(OP, [{ id: 'a', type: 'onComplete', handler: () => undefined }]))).toBeInstanceOf(HookConfigError);
    expect(
      thrown(() =>
        d.register('op_2', [
          { id: 'x', type: 'onComplete', handler: () => undefined },
          { id: 'x', type: 'onError', handler: () => undefined },
        ]),
      ),
    ).toBeInstanceOf(HookConfigError);
    await d.dispatch(OP, 'onComplete', ev());
    expect(log).toEqual(['a', 'b']);
    expect(d.getSerializedHooks('op_2')).toBeUndefined();
  });

  it('D9a: getSerializedHooks is undefined for an unknown operation and [] without webhook hooks', () => {
    const d = local();
    expect(d.getSerializedHooks('nope')).toBeUndefined();
    d.register(OP, []); // D9 / LH: an empty batch registers nothing
    expect(d.getSerializedHooks(OP)).toBeUndefined();
    d.register(OP, [{ id: 'h', type: 'onComplete', handler: () => undefined }]);
    expect(d.getSerializedHooks(OP)).toEqual([]);
  });

  it('D3: only the webhook config is serialized (handlers do not survive); matcher and fallback survive', () => {
    const d = local({ templateEnv: 'TOKEN' }); // SEC-H2: templates are denied unless the operator lists them
    d.register(OP, [
      {
        id: 'dual',
        type: 'afterToolCall',
        matcher: '^web-',
        handler: () => undefined,
        webhook: { ...WH, fallback: 'none', headers: { authorization: 'Bearer ${TOKEN}' }, allowedEnvVars: ['TOKEN'] },
      },
      { id: 'fn', type: 'onComplete', handler: () => undefined },
    ]);
    const s = d.getSerializedHooks(OP)!;
    expect(s).toHaveLength(1);
    expect(s[0]).toMatchObject({
      id: 'dual',
      type: 'afterToolCall',
      matcher: '^web-',
      webhook: { url: WH.url, fallback: 'none', headers: { authorization: 'Bearer ${TOKEN}' } },
    });
    expect(Object.keys(s[0]!).sort()).toEqual(['id', 'matcher', 'type', 'webhook']);
    expect(JSON.parse(JSON.stringify(s))).toEqual(s);
  });

  it('D4a: one invalid hook rejects the whole batch and changes nothing', async () => {
    const d = local();
    let ran = 0;
    d.register(OP, [{ id: 'keep', type: 'onComplete', handler: () => void ran++ }]);
    const invalid: unknown[] = [
      { id: 'x', type: 'onSomething', handler: () => undefined },
      { id: 42, type: 'onComplete', handler: () => undefined },
      { id: 'x', type: 'beforeToolCall', matcher: '(', handler: () => undefined },
      { id: 'x', type: 'beforeToolCall', handler: () => undefined, webhook: { ...WH, responseHandling: 'toolCall' } },
      { id: 'x', type: 'onComplete' },
      { id: 'x', type: 'onComplete', matcher: '*', handler: () => undefined },
      { id: 'x', type: 'onComplete', matcher: '', handler: () => undefined },
      { id: 'x', type: 'onComplete', webhook: { ...WH, unknownKey: 1 } },
      { id: 'x', type: 'onComplete', handler: 'not a function' },
    ];
    for (const bad of invalid) {
      const error = thrown(() => d.register(OP, [{ id: 'new-good', type: 'onComplete', handler: () => void ran++ }, bad as AgentHook]));
      expect(error).toBeInstanceOf(HookConfigError);
    }
    await d.dispatch(OP, 'onComplete', ev());
    expect(ran).toBe(1);
    // the valid first hook of each rejected batch was not stored, so its id is still free
    d.register(OP, [{ id: 'new-good', type: 'onComplete', handler: () => undefined }]);
  });

  it('W1a: rejected combinations reject the batch at registration', () => {
    const d = local();
    const bad: AgentHook[] = [
      { id: 'a', type: 'beforeToolCall', webhook: { ...WH, responseHandling: 'toolCall', delivery: 'qstash' } },
      { id: 'b', type: 'onComplete', webhook: { ...WH, onError: 'block' } },
      { id: 'c', type: 'afterToolCall', webhook: { ...WH, responseHandling: 'toolCall', body: { x: 1 } } },
      { id: 'd', type: 'afterToolCall', webhook: { ...WH, responseHandling: 'toolCall', eventFields: ['toolCallId'] } },
      { id: 'e', type: 'onToolCallError', webhook: { ...WH, responseHandling: 'toolCall' } },
    ];
    for (const hook of bad) expect(thrown(() => d.register(OP, [hook]))).toBeInstanceOf(HookConfigError);
    expect(d.getSerializedHooks(OP)).toBeUndefined();
    d.register(OP, [{ id: 'ok', type: 'afterToolCall', webhook: { ...WH, responseHandling: 'toolCall', onError: 'block' } }]);
  });

  it('W2: a template naming a variable not in allowedEnvVars is rejected at registration', () => {
    const d = local();
    const error = thrown(() =>
      d.register(OP, [{ id: 't', type: 'onComplete', webhook: { ...WH, headers: { authorization: 'Bearer ${SECRET_TOKEN}' } } }]),
    ) as HookConfigError;
    expect(error).toBeInstanceOf(HookConfigError);
    expect(error.message).toContain('SECRET_TOKEN');
  });

  it('D4a: the error names the hook id and the field', () => {
    const d = local();
    const error = thrown(() => d.register(OP, [{ id: 'bad-one', type: 'afterToolCall', webhook: { ...WH, timeout: -1 } }])) as HookConfigError;
    expect(error.message).toContain('bad-one');
    expect(error.message).toContain('timeout');
  });

  it('D4a: registration stores a snapshot; mutating the caller objects later changes nothing', () => {
    const d = local();
    const headers: Record<string, string> = { 'x-a': '1' };
    const hook = { id: 'h', type: 'onComplete' as const, webhook: { url: WH.url, headers, eventFields: ['reason'] } };
    const batch: AgentHook[] = [hook];
    d.register(OP, batch);
    hook.webhook.url = 'https://evil.example.com/';
    headers['x-a'] = 'changed';
    hook.webhook.eventFields.push('finalState');
    hook.id = 'renamed';
    batch.push({ id: 'late', type: 'onComplete', webhook: WH });
    expect(d.getSerializedHooks(OP)).toEqual([
      { id: 'h', type: 'onComplete', webhook: expect.objectContaining({ url: WH.url, headers: { 'x-a': '1' }, eventFields: ['reason'] }) },
    ]);
    // and the returned copy is not the registry
    d.getSerializedHooks(OP)![0]!.webhook.url = 'https://mutated.example.com/';
    expect(d.getSerializedHooks(OP)![0]!.webhook.url).toBe(WH.url);
  });

  it('E4: a caller hook using a reserved server-env-webhook: id is rejected', () => {
    const d = local();
    expect(thrown(() => d.register(OP, [{ id: 'server-env-webhook:onComplete', type: 'onComplete', webhook: WH }]))).toBeInstanceOf(HookConfigError);
    expect(d.getSerializedHooks(OP)).toBeUndefined();
  });

  it('D9a: register accepts serialized hooks (restored hooks can simply be registered)', async () => {
    const { d, producer } = queue();
    d.register(OP, [{ id: 'w', type: 'onComplete', webhook: WH }]);
    const restored = d.getSerializedHooks(OP)!;
    const { d: d2, producer: p2 } = queue();
    d2.register(OP, restored);
    await d2.dispatch(OP, 'onComplete', ev());
    expect(p2.calls[0]!.hooks.map((h) => h.id)).toEqual(['w']);
    void producer;
  });
});

describe('HookDispatcher: matchers (D4)', () => {
  const hooksWith = (seen: string[]): AgentHook[] => [
    { id: 'all', type: 'afterToolCall', handler: () => void seen.push('all') },
    { id: 'empty', type: 'afterToolCall', matcher: '', handler: () => void seen.push('empty') },
    { id: 'star', type: 'afterToolCall', matcher: '*', handler: () => void seen.push('star') },
    { id: 'combined', type: 'afterToolCall', matcher: '^web-browsing/search$', handler: () => void seen.push('combined') },
    { id: 'alt', type: 'afterToolCall', matcher: '^(calendar|web-browsing)/', handler: () => void seen.push('alt') },
    { id: 'api-only', type: 'afterToolCall', matcher: '/crawl$', handler: () => void seen.push('api-only') },
  ];

  it('D4: tested against `${identifier}/${apiName}`; omitted, "" and "*" match every tool; alternation works', async () => {
    const d = local();
    const seen: string[] = [];
    d.register(OP, hooksWith(seen));
    await d.dispatch(OP, 'afterToolCall', toolEv('web-browsing', 'search'));
    expect(seen).toEqual(['all', 'empty', 'star', 'combined', 'alt']);
    seen.length = 0;
    await d.dispatch(OP, 'afterToolCall', toolEv('calendar', 'list'));
    expect(seen).toEqual(['all', 'empty', 'star', 'alt']);
    seen.length = 0;
    await d.dispatch(OP, 'afterToolCall', toolEv('web-browsing', 'crawl'));
    expect(seen).toEqual(['all', 'empty', 'star', 'alt', 'api-only']);
    seen.length = 0;
    // the combined name, not the identifier alone: "search" is not matched by "^web-browsing/search$" on another tool
    await d.dispatch(OP, 'afterToolCall', toolEv('web-browsing-search', ''));
    expect(seen).toEqual(['all', 'empty', 'star']);
  });

  it('D4: no regex state leaks between tests (same matcher, many calls)', async () => {
    const d = local();
    let n = 0;
    d.register(OP, [{ id: 'm', type: 'onToolCallError', matcher: 'search', handler: () => void n++ }]);
    for (let i = 0; i < 5; i++) await d.dispatch(OP, 'onToolCallError', toolEv('web-browsing', 'search', { error: 'x' }));
    expect(n).toBe(5);
  });

  it('D4: a tool event without identifier/apiName only reaches matcher-less hooks', async () => {
    const d = local();
    const seen: string[] = [];
    d.register(OP, hooksWith(seen));
    await d.dispatch(OP, 'afterToolCall', ev());
    expect(seen).toEqual(['all', 'empty', 'star']);
  });

  it('D4: a matcher on a non-tool event is a registration error, even "" or "*"; non-tool events dispatch without matchers', async () => {
    const d = local();
    for (const matcher of ['', '*', '.*']) {
      expect(thrown(() => d.register(OP, [{ id: 'x', type: 'onComplete', matcher, handler: () => undefined }]))).toBeInstanceOf(HookConfigError);
    }
    let n = 0;
    d.register(OP, [{ id: 'c', type: 'onComplete', handler: () => void n++ }]);
    await d.dispatch(OP, 'onComplete', toolEv('a', 'b'));
    expect(n).toBe(1);
  });

  it('D4: an invalid regex is rejected at registration', () => {
    expect(thrown(() => local().register(OP, [{ id: 'x', type: 'beforeToolCall', matcher: '[', handler: () => undefined }]))).toBeInstanceOf(HookConfigError);
  });
});

describe('HookDispatcher: handler errors and loose events', () => {
  it('D5: a throwing handler does not stop its siblings and is logged', async () => {
    const { logger, text } = captureLogger();
    const d = local({ logger });
    const log: string[] = [];
    d.register(OP, [
      { id: 'a', type: 'onError', handler: () => void log.push('a') },
      {
        id: 'boom',
        type: 'onError',
        handler: () => {
          throw new Error('handler exploded');
        },
      },
      { id: 'async-boom', type: 'onError', handler: async () => Promise.reject(new Error('async exploded')) },
      { id: 'c', type: 'onError', handler: () => void log.push('c') },
    ]);
    await expect(d.dispatch(OP, 'onError', ev({ errorMessage: 'x' }))).resolves.toEqual({ notAccepted: [] });
    expect(log).toEqual(['a', 'c']);
    expect(text()).toContain('boom');
    expect(text()).toContain('async-boom');
  });

  it('D6: handler errors are never critical', async () => {
    const d = local();
    d.register(OP, [
      {
        id: 'h',
        type: 'onComplete',
        handler: () => {
          throw new CriticalHookDeliveryError([{ hookId: 'h', cause: new Error('x') }]);
        },
      },
    ]);
    await expect(d.dispatch(OP, 'onComplete', ev())).resolves.toEqual({ notAccepted: [] });
  });

  it('D10: dispatch accepts any object with a string operationId; unknown keys pass through', async () => {
    const d = local();
    const got: unknown[] = [];
    d.register(OP, [{ id: 'h', type: 'afterCompact', handler: (e) => void got.push(e) }]);
    await d.dispatch(OP, 'afterCompact', { operationId: OP });
    await d.dispatch(OP, 'afterCompact', { operationId: OP, groupId: 'g', unknownKey: [1, 2], stepIndex: 0 });
    expect(got).toEqual([{ operationId: OP }, { operationId: OP, groupId: 'g', unknownKey: [1, 2], stepIndex: 0 }]);
  });

  it('D10: a missing/non-string operationId, or a negative / fractional stepIndex or callIndex, is rejected', async () => {
    const d = local();
    for (const bad of [
      null,
      'x',
      {},
      { operationId: 1 },
      { operationId: OP, stepIndex: -1 },
      { operationId: OP, stepIndex: 1.5 },
      { operationId: OP, callIndex: '0' },
    ]) {
      await expect(d.dispatch(OP, 'onComplete', bad as never)).rejects.toThrow(TypeError);
    }
    await expect(d.dispatch(OP, 'nope' as HookType, ev())).rejects.toThrow(TypeError);
  });

  it('D10: dispatch is typed by hook type (HookEventOf<T>): typed fields are checked at compile time, unknown keys pass', async () => {
    const d = local();
    const seen: unknown[] = [];
    d.register(OP, [{ id: 'h', type: 'afterCompact', handler: (e) => void seen.push(e) }]);
    await d.dispatch(OP, 'afterCompact', { operationId: OP, messagesBefore: 40, messagesAfter: 8, summary: 's', custom: { any: 'thing' } });
    // @ts-expect-error messagesBefore is a number on afterCompact (npm run typecheck fails if this compiles)
    await d.dispatch(OP, 'afterCompact', { operationId: OP, messagesBefore: 'forty' });
    // @ts-expect-error operationId is required
    await expect(d.dispatch(OP, 'beforeStep', { stepIndex: 0 })).rejects.toThrow(TypeError);
    expect(seen).toHaveLength(2);
    expect(seen[0]).toMatchObject({ messagesAfter: 8, custom: { any: 'thing' } });
  });
});

describe('HookDispatcher: mocks (M)', () => {
  it('M1/M2: the first accepted mock wins; remaining handlers are skipped', async () => {
    const d = local();
    const log: string[] = [];
    d.register(OP, [
      { id: 'observer', type: 'beforeToolCall', handler: () => void log.push('observer') },
      {
        id: 'first',
        type: 'beforeToolCall',
        handler: (e) => {
          log.push('first');
          expect((e.mock as (r: unknown) => boolean)({ content: 'mocked-1', success: true })).toBe(true);
          expect((e.mock as (r: unknown) => boolean)({ content: 'again', success: true })).toBe(false);
        },
      },
      { id: 'second', type: 'beforeToolCall', handler: () => void log.push('second') },
    ]);
    const out = await d.dispatchBeforeToolCall(OP, toolEv('web-browsing', 'search'));
    expect(out).toEqual({ isMocked: true, result: { content: 'mocked-1', success: true } });
    expect(log).toEqual(['observer', 'first']);
  });

  it('M1: a handler that mocks and then throws still counts as mocked', async () => {
    const d = local();
    let later = false;
    d.register(OP, [
      {
        id: 'm',
        type: 'beforeToolCall',
        handler: (e) => {
          (e.mock as (r: unknown) => boolean)({ content: 'm', success: true });
          throw new Error('after mock');
        },
      },
      { id: 'n', type: 'beforeToolCall', handler: () => void (later = true) },
    ]);
    expect(await d.dispatchBeforeToolCall(OP, toolEv('a', 'b'))).toEqual({ isMocked: true, result: { content: 'm', success: true } });
    expect(later).toBe(false);
  });

  it('M1: a later mock() (from a handler that kept the callback) returns false', async () => {
    const d = local();
    let kept: ((r: unknown) => boolean) | undefined;
    d.register(OP, [
      { id: 'keeper', type: 'beforeToolCall', handler: (e) => void (kept = e.mock as (r: unknown) => boolean) },
      { id: 'mocker', type: 'beforeToolCall', handler: (e) => void (e.mock as (r: unknown) => boolean)({ content: 'x', success: true }) },
    ]);
    await d.dispatchBeforeToolCall(OP, toolEv('a', 'b'));
    expect(kept!({ content: 'late', success: true })).toBe(false);
  });

  it('M2: returns null when nobody mocks; matchers apply; a throwing handler does not stop the others', async () => {
    const d = local();
    const log: string[] = [];
    d.register(OP, [
      {
        id: 'x',
        type: 'beforeToolCall',
        handler: () => {
          throw new Error('x');
        },
      },
      {
        id: 'other-tool',
        type: 'beforeToolCall',
        matcher: '^calendar/',
        handler: (e) => void (e.mock as (r: unknown) => boolean)({ content: 'no', success: true }),
      },
      { id: 'y', type: 'beforeToolCall', handler: () => void log.push('y') },
    ]);
    expect(await d.dispatchBeforeToolCall(OP, toolEv('web-browsing', 'search'))).toBeNull();
    expect(log).toEqual(['y']);
  });

  it('M3: dispatchBeforeToolCall delivers no webhooks (local and queue)', async () => {
    const { d, producer } = queue();
    d.register(OP, [{ id: 'w', type: 'beforeToolCall', webhook: WH }]);
    expect(await d.dispatchBeforeToolCall(OP, toolEv('a', 'b'))).toBeNull();
    expect(producer.calls).toEqual([]);
  });

  it('D8: queue mode has no mocks and runs no handlers', async () => {
    const { d, producer } = queue();
    let ran = 0;
    d.register(OP, [
      {
        id: 'm',
        type: 'beforeToolCall',
        handler: (e) => {
          ran++;
          (e.mock as (r: unknown) => boolean)({ content: 'x', success: true });
        },
      },
      { id: 'h', type: 'onComplete', handler: () => void ran++ },
    ]);
    expect(await d.dispatchBeforeToolCall(OP, toolEv('a', 'b'))).toBeNull();
    await d.dispatch(OP, 'onComplete', ev());
    expect(ran).toBe(0);
    expect(producer.calls).toEqual([]);
  });
});

describe('HookDispatcher: queue mode (D3, D8, D9)', () => {
  it('D3/D8: webhook-only and dual hooks are enqueued with their serialized webhook; handlers do not run', async () => {
    const { d, producer } = queue();
    let handled = 0;
    d.register(OP, [
      { id: 'wh', type: 'onComplete', webhook: { ...WH, body: { source: 'test' }, eventFields: ['reason', 'finalState'] } },
      { id: 'dual', type: 'onComplete', handler: () => void handled++, webhook: { url: 'https://hooks.example.com/dual' } },
      { id: 'fn', type: 'onComplete', handler: () => void handled++ },
      { id: 'other-type', type: 'onError', webhook: WH },
    ]);
    await d.dispatch(OP, 'onComplete', ev({ reason: 'done', finalState: { secret: true }, mock: () => true }));
    expect(handled).toBe(0);
    expect(producer.calls).toHaveLength(1);
    const call = producer.calls[0]!;
    expect(call.operationId).toBe(OP);
    expect(call.type).toBe('onComplete');
    expect(call.hooks.map((h) => h.id)).toEqual(['wh', 'dual']);
    expect(call.hooks[0]).toMatchObject({
      id: 'wh',
      type: 'onComplete',
      webhook: { url: WH.url, body: { source: 'test' }, eventFields: ['reason', 'finalState'] },
    });
    expect(call.event).toEqual({ operationId: OP, reason: 'done' }); // B4a: no finalState, no mock
    expect(() => JSON.stringify(call)).not.toThrow();
  });

  it('D8: nothing to deliver → no enqueue; controls are never enqueued', async () => {
    const { d, producer } = queue();
    d.register(OP, [
      { id: 'fn', type: 'onComplete', handler: () => undefined },
      { id: 'ctl', type: 'beforeToolCall', webhook: { ...WH, responseHandling: 'toolCall' } },
    ]);
    await d.dispatch(OP, 'onComplete', ev());
    await d.dispatch(OP, 'beforeToolCall', toolEv('a', 'b'));
    expect(producer.calls).toEqual([]);
  });

  it('D9: queue mode uses serializedHooks over in-memory hooks', async () => {
    const { d, producer } = queue();
    d.register(OP, [{ id: 'memory', type: 'onComplete', webhook: WH }]);
    await d.dispatch(OP, 'onComplete', ev(), [{ id: 'restored', type: 'onComplete', webhook: WH }]);
    await d.dispatch(OP, 'onComplete', ev());
    expect(producer.calls.map((c) => c.hooks.map((h) => h.id))).toEqual([['restored'], ['memory']]);
  });

  it('D9: local mode uses in-memory hooks first and falls back to serializedHooks', async () => {
    const d = local();
    const seen: string[] = [];
    d.register(OP, [{ id: 'memory', type: 'onComplete', handler: () => void seen.push('memory') }]);
    // the restored webhook would be refused (unreachable) if it were used; it is not
    await d.dispatch(OP, 'onComplete', ev(), [{ id: 'restored', type: 'onComplete', webhook: { url: 'http://127.0.0.1:9/x', fallback: 'none' } }]);
    expect(seen).toEqual(['memory']);
    // unknown operation: falls back to the restored hooks (here a critical one, refused by the SSRF guard)
    const error = await rejection(
      d.dispatch('cold-op', 'onComplete', { operationId: 'cold-op' }, [
        { id: 'restored', type: 'onComplete', webhook: { url: 'http://127.0.0.1:9/x', fallback: 'none' } },
      ]),
    );
    expect(error).toBeInstanceOf(CriticalHookDeliveryError);
    expect((error as CriticalHookDeliveryError).hookId).toBe('restored');
  });

  it('D4b: a corrupt restored hook throws on every use (never dropped), in both modes and in evaluate*', async () => {
    const corrupt = [
      { id: 'ok', type: 'onComplete', webhook: WH },
      { id: 'bad', type: 'onComplete', webhook: { url: 'ftp://x' } },
    ];
    const { d: q, producer } = queue();
    await expect(q.dispatch(OP, 'onComplete', ev(), corrupt)).rejects.toThrow(HookConfigError);
    await expect(q.dispatch(OP, 'onComplete', ev(), corrupt)).rejects.toThrow(/bad/);
    expect(producer.calls).toEqual([]);
    const l = local();
    await expect(l.dispatch('cold', 'onComplete', { operationId: 'cold' }, corrupt)).rejects.toThrow(HookConfigError);
    await expect(
      l.dispatchBeforeToolCall('cold', { operationId: 'cold' }, [{ id: 'x', type: 'beforeToolCall', webhook: { url: 'https://a.example' }, extra: 1 }]),
    ).rejects.toThrow(HookConfigError);
    await expect(
      l.evaluateToolCall('cold', toolContext({ operationId: 'cold' }), {
        serializedHooks: [{ id: 'c', type: 'beforeToolCall', webhook: { url: 'https://a.example', responseHandling: 'toolCall', delivery: 'qstash' } }],
      }),
    ).rejects.toThrow(HookConfigError);
    await expect(l.dispatch('cold', 'onComplete', { operationId: 'cold' }, 'not-an-array' as never)).rejects.toThrow(HookConfigError);
  });

  it('D8: a recording failure is logged and only fallback:none deliveries make dispatch throw', async () => {
    const failing = recordingProducer(() => new Error('postgres down'));
    const { d } = queue(failing);
    d.register(OP, [{ id: 'plain', type: 'onComplete', webhook: WH }]);
    // F1: not thrown (D5), but reported: never only a log line.
    const report = await d.dispatch(OP, 'onComplete', ev());
    expect(report.notAccepted.map((n) => [n.hookId, (n.error as Error).message])).toEqual([['plain', 'postgres down']]);
    d.register(OP, [
      { id: 'crit-1', type: 'onComplete', webhook: { ...WH, fallback: 'none' } },
      { id: 'crit-2', type: 'onComplete', webhook: { ...WH, delivery: 'qstash', fallback: 'none' } },
    ]);
    const error = (await rejection(d.dispatch(OP, 'onComplete', ev()))) as CriticalHookDeliveryError;
    expect(error).toBeInstanceOf(CriticalHookDeliveryError);
    expect(error.hookId).toBe('crit-1');
    expect(error.failures.map((f) => f.hookId)).toEqual(['crit-1', 'crit-2']);
  });

  it('D9a: evaluate* accept opts.serializedHooks with D9 precedence (local: memory first)', async () => {
    const d = local();
    d.register(OP, [{ id: 'obs', type: 'beforeToolCall', handler: () => undefined }]);
    // memory exists (no controls): the restored control (unreachable, onError block) is not used
    const restored = [{ id: 'ctl', type: 'beforeToolCall', webhook: { url: 'http://127.0.0.1:9/x', responseHandling: 'toolCall', onError: 'block' } }];
    expect(await d.evaluateToolCall(OP, toolContext(), { serializedHooks: restored })).toEqual({ status: 'allow' });
    // cold operation: the restored control is used (refused by the SSRF guard → onError block)
    expect(await d.evaluateToolCall('cold', toolContext({ operationId: 'cold' }), { serializedHooks: restored })).toMatchObject({
      status: 'blocked',
      reason: 'hook_control_error',
    });
    expect(await d.evaluateAfterToolCall('cold', toolContext({ operationId: 'cold' }), { content: 'r', success: true }, { serializedHooks: restored })).toEqual(
      { status: 'allow' },
    );
  });

  it('D9b: controls never run in dispatch; beforeToolCall handlers only in dispatchBeforeToolCall; afterToolCall handlers in dispatch', async () => {
    const { d, producer } = queue();
    d.register(OP, [
      { id: 'ctl-before', type: 'beforeToolCall', webhook: { ...WH, responseHandling: 'toolCall' } },
      { id: 'ctl-after', type: 'afterToolCall', webhook: { ...WH, responseHandling: 'toolCall' } },
      { id: 'note-before', type: 'beforeToolCall', webhook: WH },
      { id: 'note-after', type: 'afterToolCall', webhook: WH },
    ]);
    await d.dispatch(OP, 'beforeToolCall', toolEv('a', 'b'));
    await d.dispatch(OP, 'afterToolCall', toolEv('a', 'b', { result: { content: 'c', success: true } }));
    expect(producer.calls.map((c) => c.hooks.map((h) => h.id))).toEqual([['note-before'], ['note-after']]);

    const l = local();
    const calls: string[] = [];
    l.register(OP, [
      { id: 'before-fn', type: 'beforeToolCall', handler: () => void calls.push('before-fn') },
      { id: 'after-fn', type: 'afterToolCall', handler: () => void calls.push('after-fn') },
    ]);
    await l.dispatch(OP, 'beforeToolCall', toolEv('a', 'b'));
    expect(calls).toEqual([]);
    await l.dispatchBeforeToolCall(OP, toolEv('a', 'b'));
    expect(calls).toEqual(['before-fn']);
    await l.dispatch(OP, 'afterToolCall', toolEv('a', 'b'));
    expect(calls).toEqual(['before-fn', 'after-fn']);
    expect(await l.evaluateToolCall(OP, toolContext())).toEqual({ status: 'allow' });
    expect(await l.evaluateAfterToolCall(OP, toolContext(), { content: 'x', success: true })).toEqual({ status: 'allow' });
    expect(calls).toEqual(['before-fn', 'after-fn']);
  });
});
