import { describe, expect, it } from 'vitest';
import { HookConfigError } from '../../../src/contract/errors.ts';
import { AgentHookSchema, isControlHook, matcherProblem, serializeHook, SerializedHookSchema } from '../../../src/contract/hook.ts';
import { ENV_HOOK_ID_PREFIX, HOOK_TYPES, TOOL_HOOK_TYPES } from '../../../src/contract/hookTypes.ts';
import { parseHookBatch, parseSerializedHooks } from '../../../src/contract/validate.ts';
import { accepts, hookConfigError, paths, rejects } from './helpers.ts';

const handler = () => undefined;
const URL_OK = 'https://hooks.example.com/h';
const nonToolTypes = HOOK_TYPES.filter((t) => !(TOOL_HOOK_TYPES as readonly string[]).includes(t));

describe('hook types', () => {
  it('there are exactly the 16 hook types', () => {
    expect(HOOK_TYPES).toHaveLength(16);
    expect([...HOOK_TYPES].sort()).toEqual(
      [
        'beforeStep',
        'afterStep',
        'beforeToolCall',
        'afterToolCall',
        'onToolCallError',
        'beforeHumanIntervention',
        'afterHumanIntervention',
        'onStopByHumanIntervention',
        'beforeCompact',
        'afterCompact',
        'onCompactError',
        'beforeCallAgent',
        'afterCallAgent',
        'onCallAgentError',
        'onComplete',
        'onError',
      ].sort(),
    );
  });

  it.each(HOOK_TYPES)('D3: a handler hook of type %s is accepted', (type) => {
    expect(parseHookBatch([{ id: 'h', type, handler }])[0]).toMatchObject({ id: 'h', type });
  });
});

describe('D4: matcher', () => {
  it.each(nonToolTypes)("D4: a matcher on %s is rejected naming matcher, even '' and '*'", (type) => {
    for (const matcher of ['', '*', 'search/.*']) {
      expect(paths(rejects(AgentHookSchema, { id: 'm', type, matcher, handler }))).toEqual(['matcher']);
      expect(paths(rejects(SerializedHookSchema, { id: 'm', type, matcher, webhook: { url: URL_OK } }))).toEqual(['matcher']);
      const error = hookConfigError(() => parseHookBatch([{ id: 'm', type, matcher, handler }]));
      expect(error.issues.map((i) => i.path)).toEqual(['matcher']);
      expect(error.message).toContain('"m"');
      expect(error.message).toContain('matcher');
    }
  });

  it.each(TOOL_HOOK_TYPES)('D4: matchers on %s are accepted: omitted, "", "*", and a valid regex', (type) => {
    for (const matcher of [undefined, '', '*', '^search/', 'web-(search|fetch)/get.*', 'mcp__.+/.*']) {
      const hook = matcher === undefined ? { id: 'm', type, handler } : { id: 'm', type, matcher, handler };
      const [parsed] = parseHookBatch([hook]);
      expect(parsed!.matcher).toBe(matcher);
    }
  });

  it.each(['(', '[a-', '*abc', '+', 'a{2,1}', '(?<n>x', '\\'])('D4: invalid regex %j is rejected naming matcher', (matcher) => {
    expect(matcherProblem(matcher)).toBeDefined();
    const error = hookConfigError(() => parseHookBatch([{ id: 'bad-re', type: 'beforeToolCall', matcher, handler }]));
    expect(error.hookId).toBe('bad-re');
    expect(error.issues.map((i) => i.path)).toEqual(['matcher']);
    expect(error.message).toContain('regular expression');
  });

  it("D4: '' and '*' are not compiled (a bare '*' is not a valid regex but matches every tool)", () => {
    expect(matcherProblem('')).toBeUndefined();
    expect(matcherProblem('*')).toBeUndefined();
    expect(matcherProblem('**')).toBeDefined();
  });

  it('D4: a non-string matcher is rejected naming matcher', () => {
    expect(paths(rejects(AgentHookSchema, { id: 'm', type: 'beforeToolCall', matcher: /x/, handler }))).toEqual(['matcher']);
    expect(paths(rejects(AgentHookSchema, { id: 'm', type: 'beforeToolCall', matcher: null, handler }))).toEqual(['matcher']);
  });
});

describe('D3 / D4a: hook shape', () => {
  it('D3: a hook with handler and a notification webhook is accepted', () => {
    const [hook] = parseHookBatch([{ id: 'both', type: 'afterToolCall', handler, webhook: { url: URL_OK } }]);
    expect(hook!.handler).toBe(handler);
    expect(hook!.webhook!.url).toBe(URL_OK);
    expect(isControlHook(hook!)).toBe(false);
  });

  it('D4a: a hook with neither handler nor webhook is rejected', () => {
    const error = hookConfigError(() => parseHookBatch([{ id: 'empty', type: 'afterStep' }]));
    expect(error.hookId).toBe('empty');
    expect(error.issues.map((i) => i.path)).toEqual(['handler']);
    expect(error.message).toContain('"empty"');
  });

  it('D4a: a control with a handler is rejected naming handler', () => {
    const error = hookConfigError(() =>
      parseHookBatch([{ id: 'ctl', type: 'beforeToolCall', handler, webhook: { url: URL_OK, responseHandling: 'toolCall' } }]),
    );
    expect(error.hookId).toBe('ctl');
    expect(error.issues.map((i) => i.path)).toEqual(['handler']);
    expect(error.message).toMatch(/ctl.*handler/);
  });

  it('D4a: a control without a handler is accepted and is a control', () => {
    const [hook] = parseHookBatch([{ id: 'ctl', type: 'beforeToolCall', webhook: { url: URL_OK, responseHandling: 'toolCall' } }]);
    expect(isControlHook(hook!)).toBe(true);
  });

  it('D4a: a non-function handler is rejected naming handler', () => {
    const error = hookConfigError(() => parseHookBatch([{ id: 'h', type: 'afterStep', handler: 'doIt' }]));
    expect(error.issues.map((i) => i.path)).toEqual(['handler']);
  });

  it('D4a: an unknown type is rejected naming type', () => {
    const error = hookConfigError(() => parseHookBatch([{ id: 'x', type: 'beforeEverything', handler }]));
    expect(error.hookId).toBe('x');
    expect(error.issues.map((i) => i.path)).toEqual(['type']);
    expect(error.message).toContain('"x"');
    expect(error.message).toContain('type');
  });

  it('D4a: a missing type is rejected naming type', () => {
    expect(hookConfigError(() => parseHookBatch([{ id: 'x', handler }])).issues.map((i) => i.path)).toEqual(['type']);
  });

  it.each([
    ['a number', 5],
    ['null', null],
    ['an object', { id: 'x' }],
    ['missing', undefined],
  ])('D4a: a non-string id (%s) is rejected naming id; the message names the index', (_label, id) => {
    const hooks = [
      { id: 'fine', type: 'afterStep', handler },
      { ...(id === undefined ? {} : { id }), type: 'afterStep', handler },
    ];
    const error = hookConfigError(() => parseHookBatch(hooks));
    expect(error.hookId).toBeUndefined();
    expect(error.index).toBe(1);
    expect(error.issues.map((i) => i.path)).toEqual(['id']);
    expect(error.message).toContain('index 1');
    expect(error.message).toContain('id');
  });

  it('D4a: an empty id is rejected naming id', () => {
    expect(hookConfigError(() => parseHookBatch([{ id: '', type: 'afterStep', handler }])).issues.map((i) => i.path)).toEqual(['id']);
  });

  it('D4a: an unknown hook key is rejected and named (strict)', () => {
    const error = hookConfigError(() => parseHookBatch([{ id: 'k', type: 'afterStep', handler, matchr: 'x' }]));
    expect(error.hookId).toBe('k');
    expect(error.message).toContain('matchr');
  });

  it('D4a: a non-object hook is rejected naming the index', () => {
    for (const raw of [null, 'hook', 42, [handler]]) {
      const error = hookConfigError(() => parseHookBatch([raw]));
      expect(error.index).toBe(0);
      expect(error.hookId).toBeUndefined();
      expect(error.message).toContain('index 0');
    }
  });

  it('D4a: a batch that is not an array is rejected with a HookConfigError', () => {
    expect(() => parseHookBatch({ id: 'h' } as unknown as unknown[])).toThrow(HookConfigError);
  });

  it('D4a: a webhook field error names the hook id and the nested path', () => {
    const error = hookConfigError(() => parseHookBatch([{ id: 'deep', type: 'afterStep', webhook: { url: URL_OK, timeout: 0 } }]));
    expect(error).toBeInstanceOf(HookConfigError);
    expect(error.name).toBe('HookConfigError');
    expect(error.hookId).toBe('deep');
    expect(error.index).toBe(0);
    expect(error.issues).toHaveLength(1);
    expect(error.issues[0]!.path).toBe('webhook.timeout');
    expect(error.message).toContain('"deep"');
    expect(error.message).toContain('webhook.timeout');
  });

  it('D4a: nested array paths are formatted with [i]', () => {
    const error = hookConfigError(() => parseHookBatch([{ id: 'arr', type: 'afterStep', webhook: { url: URL_OK, eventFields: ['a', 1] } }]));
    expect(error.issues[0]!.path).toBe('webhook.eventFields[1]');
    expect(error.message).toContain('webhook.eventFields[1]');
  });

  it('D4a: a body holding a function is a HookConfigError naming the path (not a clone error)', () => {
    const error = hookConfigError(() => parseHookBatch([{ id: 'fnbody', type: 'afterStep', webhook: { url: URL_OK, body: { cb: () => 1 } } }]));
    expect(error.hookId).toBe('fnbody');
    expect(error.issues.map((i) => i.path)).toEqual(['webhook.body.cb']);
  });
});

describe('D4a: the whole batch is validated before anything is returned', () => {
  const good = (id: string) => ({ id, type: 'afterStep', handler });

  it.each([
    ['unknown type', { id: 'bad', type: 'nope', handler }, 'type'],
    ['non-string id', { id: 7, type: 'afterStep', handler }, 'id'],
    ['bad matcher', { id: 'bad', type: 'beforeToolCall', matcher: '(', handler }, 'matcher'],
    ['matcher on a non-tool event', { id: 'bad', type: 'onComplete', matcher: '*', handler }, 'matcher'],
    ['control with a handler', { id: 'bad', type: 'afterToolCall', handler, webhook: { url: URL_OK, responseHandling: 'toolCall' } }, 'handler'],
    ['neither handler nor webhook', { id: 'bad', type: 'afterStep' }, 'handler'],
  ])('D4a: one invalid hook (%s) in the middle rejects the batch', (_label, bad, path) => {
    const error = hookConfigError(() => parseHookBatch([good('a'), bad, good('c')]));
    expect(error.index).toBe(1);
    expect(error.issues.map((i) => i.path)).toEqual([path]);
    if (typeof bad.id === 'string') {
      expect(error.hookId).toBe(bad.id);
      expect(error.message).toContain(`"${bad.id}"`);
    } else {
      expect(error.hookId).toBeUndefined();
      expect(error.message).toContain('index 1');
    }
    expect(error.message).toContain(path);
  });

  it('D4a: an invalid hook at the end still rejects the batch (nothing partially returned)', () => {
    let result: unknown = 'untouched';
    expect(() => {
      result = parseHookBatch([good('a'), good('b'), { id: 'z', type: 'bogus', handler }]);
    }).toThrow(HookConfigError);
    expect(result).toBe('untouched');
  });

  it('D9: an empty batch is valid', () => {
    expect(parseHookBatch([])).toEqual([]);
  });

  it('D1: the parsed batch keeps registration order', () => {
    expect(parseHookBatch([good('c'), good('a'), good('b')]).map((h) => h.id)).toEqual(['c', 'a', 'b']);
  });
});

describe('D4a: registration stores a snapshot', () => {
  it("D4a: mutating the caller's webhook object after parse changes nothing in the parsed result", () => {
    const webhook = {
      url: URL_OK,
      headers: { authorization: 'Bearer ${TOKEN}' } as Record<string, string>,
      allowedEnvVars: ['TOKEN'],
      body: { tenant: 't1', nested: { level: 1 }, list: [1, { x: 'y' }] } as Record<string, any>,
      eventFields: ['operationId'],
    };
    const hook = { id: 'snap', type: 'afterStep' as const, matcher: undefined as string | undefined, webhook };
    const [parsed] = parseHookBatch([hook]);
    const before = structuredClone(parsed!.webhook);

    webhook.url = 'https://evil.example/';
    webhook.headers.authorization = 'changed';
    webhook.headers['x-new'] = 'added';
    webhook.allowedEnvVars.push('OTHER');
    webhook.body.tenant = 't2';
    webhook.body.nested.level = 99;
    webhook.body.list[1].x = 'z';
    webhook.eventFields.push('userId');
    (hook as { id: string }).id = 'renamed';

    expect(parsed!.webhook).toEqual(before);
    expect(parsed!.id).toBe('snap');
    expect(parsed!.webhook!.body).toEqual({ tenant: 't1', nested: { level: 1 }, list: [1, { x: 'y' }] });
  });

  it('D4a: the parsed webhook objects are not the caller’s objects', () => {
    const body = { nested: { a: 1 } };
    const webhook = { url: URL_OK, body };
    const [parsed] = parseHookBatch([{ id: 's', type: 'afterStep', webhook }]);
    expect(parsed!.webhook).not.toBe(webhook);
    expect(parsed!.webhook!.body).not.toBe(body);
    expect(parsed!.webhook!.body!.nested).not.toBe(body.nested);
  });

  it('D4a: two parses of the same input give independent snapshots', () => {
    const input = [{ id: 'i', type: 'afterStep', webhook: { url: URL_OK, body: { n: { v: 1 } } } }];
    const [a] = parseHookBatch(input);
    const [b] = parseHookBatch(input);
    (a!.webhook!.body!.n as { v: number }).v = 2;
    expect(b!.webhook!.body).toEqual({ n: { v: 1 } });
  });

  it('D3: a handler-only hook has no webhook key; the handler is kept by reference', () => {
    const [parsed] = parseHookBatch([{ id: 'h', type: 'afterStep', handler }]);
    expect('webhook' in parsed!).toBe(false);
    expect(parsed!.handler).toBe(handler);
  });
});

describe('D9: duplicate ids', () => {
  it('D9: duplicate ids inside a batch are rejected naming id and the duplicate', () => {
    const error = hookConfigError(() =>
      parseHookBatch([
        { id: 'a', type: 'afterStep', handler },
        { id: 'b', type: 'afterStep', handler },
        { id: 'a', type: 'onComplete', handler },
      ]),
    );
    expect(error.hookId).toBe('a');
    expect(error.index).toBe(2);
    expect(error.issues.map((i) => i.path)).toEqual(['id']);
    expect(error.message).toContain('"a"');
    expect(error.message).toMatch(/duplicate/);
  });

  it('D9: an id already registered for the operation (existingIds) is rejected', () => {
    const error = hookConfigError(() =>
      parseHookBatch(
        [
          { id: 'new', type: 'afterStep', handler },
          { id: 'old', type: 'afterStep', handler },
        ],
        new Set(['old']),
      ),
    );
    expect(error.hookId).toBe('old');
    expect(error.index).toBe(1);
    expect(error.issues.map((i) => i.path)).toEqual(['id']);
  });

  it('D9: a second batch with new ids appends (existingIds do not collide)', () => {
    expect(parseHookBatch([{ id: 'b', type: 'afterStep', handler }], new Set(['a'])).map((h) => h.id)).toEqual(['b']);
  });

  it('D9: existingIds is not mutated by parsing', () => {
    const existing = new Set(['a']);
    parseHookBatch([{ id: 'b', type: 'afterStep', handler }], existing);
    expect([...existing]).toEqual(['a']);
  });
});

describe('E4: reserved environment hook ids', () => {
  it('E4: the reserved prefix is server-env-webhook:', () => {
    expect(ENV_HOOK_ID_PREFIX).toBe('server-env-webhook:');
  });

  it.each(['server-env-webhook:afterStep', 'server-env-webhook:', 'server-env-webhook:anything'])('E4: caller hook id %j is rejected naming id', (id) => {
    const error = hookConfigError(() => parseHookBatch([{ id, type: 'afterStep', handler }]));
    expect(error.hookId).toBe(id);
    expect(error.issues.map((i) => i.path)).toEqual(['id']);
    expect(error.message).toContain('reserved');
  });

  it('E4: a reserved id is rejected in serialized (restored) hooks too', () => {
    const error = hookConfigError(() => parseSerializedHooks([{ id: 'server-env-webhook:onComplete', type: 'onComplete', webhook: { url: URL_OK } }]));
    expect(error.issues.map((i) => i.path)).toEqual(['id']);
  });

  it('E4: ids that merely contain the words are fine', () => {
    for (const id of ['my-server-env-webhook:x', 'server-env-webhook', 'Server-Env-Webhook:x']) {
      expect(parseHookBatch([{ id, type: 'afterStep', handler }])[0]!.id).toBe(id);
    }
  });
});

describe('D4b: serialized hooks', () => {
  const stored = [
    { id: 'n1', type: 'afterStep', webhook: { url: URL_OK } },
    { id: 'c1', type: 'beforeToolCall', matcher: '^search/', webhook: { url: '/decide', responseHandling: 'toolCall', onError: 'block' } },
  ];

  it('D4b: valid serialized hooks are re-validated with defaults applied', () => {
    const parsed = parseSerializedHooks(stored);
    expect(parsed).toEqual([
      {
        id: 'n1',
        type: 'afterStep',
        webhook: { url: URL_OK, delivery: 'fetch', timeout: 30, fallback: 'fetch', responseHandling: 'ignore', onError: 'continue' },
      },
      {
        id: 'c1',
        type: 'beforeToolCall',
        matcher: '^search/',
        webhook: { url: '/decide', delivery: 'fetch', timeout: 30, fallback: 'fetch', responseHandling: 'toolCall', onError: 'block' },
      },
    ]);
  });

  it.each([
    ['a bad url', { id: 'x', type: 'afterStep', webhook: { url: 'ftp://x' } }, 'webhook.url'],
    ['a missing webhook', { id: 'x', type: 'afterStep' }, 'webhook'],
    ['an unknown type', { id: 'x', type: 'gone', webhook: { url: URL_OK } }, 'type'],
    ['a bad matcher', { id: 'x', type: 'afterToolCall', matcher: '(', webhook: { url: URL_OK } }, 'matcher'],
    ['a control on a non-control type', { id: 'x', type: 'onComplete', webhook: { url: URL_OK, responseHandling: 'toolCall' } }, 'webhook.responseHandling'],
    ['an un-allow-listed template', { id: 'x', type: 'afterStep', webhook: { url: URL_OK, headers: { a: '${T}' } } }, 'webhook.headers.a'],
    ['a forbidden header', { id: 'x', type: 'afterStep', webhook: { url: URL_OK, headers: { Host: 'h' } } }, 'webhook.headers.Host'],
  ])('D4b: a corrupt entry (%s) throws, it is never dropped', (_label, corrupt, path) => {
    const error = hookConfigError(() => parseSerializedHooks([...stored, corrupt]));
    expect(error.index).toBe(2);
    expect(error.issues.map((i) => i.path)).toEqual([path]);
  });

  it('D4b: a corrupt entry among valid ones throws on every use', () => {
    const hooks = [stored[0], null, stored[1]];
    for (let i = 0; i < 3; i += 1) expect(() => parseSerializedHooks(hooks)).toThrow(HookConfigError);
  });

  it('D4b: a non-array is rejected', () => {
    expect(() => parseSerializedHooks('[]' as unknown as unknown[])).toThrow(HookConfigError);
  });

  it('D4b: SerializedHook is strict: a handler key is rejected', () => {
    const issues = rejects(SerializedHookSchema, { id: 's', type: 'afterStep', webhook: { url: URL_OK }, handler });
    expect(issues).toHaveLength(1);
    expect(issues[0]!.message).toContain('handler');
    const error = hookConfigError(() => parseSerializedHooks([{ id: 's', type: 'afterStep', webhook: { url: URL_OK }, handler }]));
    expect(error.hookId).toBe('s');
    expect(error.message).toContain('handler');
  });

  it('D4b: SerializedHook is strict: any unknown key is rejected', () => {
    expect(rejects(SerializedHookSchema, { id: 's', type: 'afterStep', webhook: { url: URL_OK }, extra: 1 })[0]!.message).toContain('extra');
  });

  it('D3 / D9a: serializeHook keeps only id, type, matcher and webhook, cloned', () => {
    const [parsed] = parseHookBatch([{ id: 'h', type: 'afterToolCall', matcher: 'x/.*', handler, webhook: { url: URL_OK, body: { a: { b: 1 } } } }]);
    const serialized = serializeHook(parsed!)!;
    expect(Object.keys(serialized).sort()).toEqual(['id', 'matcher', 'type', 'webhook']);
    expect(serialized.webhook).toEqual(parsed!.webhook);
    expect(serialized.webhook.body).not.toBe(parsed!.webhook!.body);
    expect(accepts(SerializedHookSchema, JSON.parse(JSON.stringify(serialized)))).toEqual(serialized);
    expect(serializeHook(parseHookBatch([{ id: 'h2', type: 'afterStep', handler }])[0]!)).toBeUndefined();
  });

  it('D9a: register accepts serialized hooks (the agent-hook schema is a superset)', () => {
    const parsed = parseHookBatch(stored);
    expect(parsed.map((h) => h.id)).toEqual(['n1', 'c1']);
    expect(isControlHook(parsed[1]!)).toBe(true);
  });
});
