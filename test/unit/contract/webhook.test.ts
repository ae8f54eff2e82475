import { describe, expect, it } from 'vitest';
import { AgentHookSchema, SerializedHookSchema } from '../../../src/contract/hook.ts';
import { HOOK_TYPES } from '../../../src/contract/hookTypes.ts';
import { parseHookBatch, parseSerializedHooks } from '../../../src/contract/validate.ts';
import { DEFAULT_TIMEOUT_SECONDS, isForbiddenHeaderName, MAX_TIMEOUT_SECONDS, timeoutMs, WebhookConfigSchema } from '../../../src/contract/webhook.ts';
import { accepts, hookConfigError, paths, rejects } from './helpers.ts';

const URL_OK = 'https://hooks.example.com/receive';
const wh = (extra: Record<string, unknown> = {}) => ({ url: URL_OK, ...extra });

describe('W1: webhook config fields and defaults', () => {
  it('W1: a bare { url } gets every default (fetch, 30 s, fallback fetch, ignore, continue)', () => {
    const parsed = accepts(WebhookConfigSchema, { url: URL_OK });
    expect(parsed).toEqual({
      url: URL_OK,
      delivery: 'fetch',
      timeout: 30,
      fallback: 'fetch',
      responseHandling: 'ignore',
      onError: 'continue',
    });
    expect(DEFAULT_TIMEOUT_SECONDS).toBe(30);
    expect(timeoutMs(parsed)).toBe(30_000);
    // optional fields stay absent
    expect('headers' in parsed).toBe(false);
    expect('allowedEnvVars' in parsed).toBe(false);
    expect('body' in parsed).toBe(false);
    expect('eventFields' in parsed).toBe(false);
  });

  it('W1: every field given explicitly is kept as given', () => {
    const input = {
      url: URL_OK,
      delivery: 'qstash',
      timeout: 2.5,
      headers: { authorization: 'Bearer ${HOOK_TOKEN}', 'x-tenant': 't1' },
      allowedEnvVars: ['HOOK_TOKEN'],
      body: { source: 'agent', nested: { n: 1, list: [true, null, 'x'] } },
      eventFields: ['operationId', 'stepIndex'],
      fallback: 'none',
      responseHandling: 'ignore',
      onError: 'continue',
    };
    expect(accepts(WebhookConfigSchema, input)).toEqual(input);
  });

  it('W1: a control config (toolCall + block) is accepted with fetch delivery', () => {
    const parsed = accepts(WebhookConfigSchema, wh({ responseHandling: 'toolCall', onError: 'block' }));
    expect(parsed).toMatchObject({ delivery: 'fetch', responseHandling: 'toolCall', onError: 'block' });
  });

  it('W1: missing url is rejected naming url', () => {
    expect(paths(rejects(WebhookConfigSchema, {}))).toContain('url');
  });

  it.each([
    ['delivery', 'sqs'],
    ['fallback', 'retry'],
    ['responseHandling', 'toolResult'],
    ['responseHandling', 'toolCallAndResult'],
    ['onError', 'abort'],
  ])('W1: %s = %j (not an allowed value) is rejected naming %s', (field, value) => {
    expect(paths(rejects(WebhookConfigSchema, wh({ [field]: value })))).toEqual([field]);
  });

  describe('timeout', () => {
    it.each([0.0001, 0.5, 1, 1.0005, 30, 3600.25, MAX_TIMEOUT_SECONDS])('W1: timeout %d s is accepted', (t) => {
      expect(accepts(WebhookConfigSchema, wh({ timeout: t })).timeout).toBe(t);
    });

    it.each([
      ['zero', 0],
      ['negative', -1],
      ['negative fraction', -0.001],
      ['above the setTimeout ceiling', 2_147_483.648],
      ['far above', 1e12],
      ['Infinity', Number.POSITIVE_INFINITY],
      ['-Infinity', Number.NEGATIVE_INFINITY],
      ['NaN', Number.NaN],
      ['a numeric string', '30'],
      ['null', null],
    ])('W1: timeout %s is rejected naming timeout', (_label, t) => {
      expect(paths(rejects(WebhookConfigSchema, wh({ timeout: t })))).toContain('timeout');
      expect(new Set(paths(rejects(WebhookConfigSchema, wh({ timeout: t }))))).toEqual(new Set(['timeout']));
    });

    it('W1: the largest timeout is 2,147,483.647 s', () => {
      expect(MAX_TIMEOUT_SECONDS).toBe(2_147_483.647);
    });

    it.each([
      [0.0001, 1],
      [0.001, 1],
      [0.0011, 2],
      [1, 1000],
      [1.0005, 1001],
      [1.5, 1500],
      [30, 30_000],
      [MAX_TIMEOUT_SECONDS, 2_147_483_647],
    ])('W1: timeoutMs(%d s) = ceil(t × 1000) = %d', (t, ms) => {
      expect(timeoutMs({ timeout: t })).toBe(ms);
    });

    it('W1: the largest timeout never exceeds setTimeout’s 2^31-1 ms', () => {
      expect(timeoutMs(accepts(WebhookConfigSchema, wh({ timeout: MAX_TIMEOUT_SECONDS })))).toBeLessThanOrEqual(2 ** 31 - 1);
    });
  });

  describe('url', () => {
    it.each([
      'https://hooks.example.com/x',
      'http://hooks.example.com:8080/x?y=1',
      'HTTPS://HOOKS.EXAMPLE.COM/',
      'https://[2001:db8::1]/x',
      '/path',
      '/api/hooks?x=1',
      '/',
    ])('W1: url %j is accepted (http(s) or a path with one leading "/")', (url) => {
      expect(accepts(WebhookConfigSchema, { url }).url).toBe(url);
    });

    it.each([
      ['empty', ''],
      ['protocol-relative //x', '//x'],
      ['protocol-relative //evil.example/p', '//evil.example/p'],
      ['credentials user:pass', 'https://user:pass@hooks.example.com/x'],
      ['credentials user only', 'https://user@hooks.example.com/x'],
      ['credentials password only', 'https://:pw@hooks.example.com/x'],
      ['ftp', 'ftp://hooks.example.com/x'],
      ['file', 'file:///etc/passwd'],
      ['javascript', 'javascript:alert(1)'],
      ['backslash in absolute', 'https://hooks.example.com\\@evil.example/'],
      ['backslash relative', '/\\evil.example'],
      ['a bare word', 'hooks'],
      ['a relative path without leading slash', 'api/hooks'],
    ])('W1: url %s is rejected naming url', (_label, url) => {
      expect(paths(rejects(WebhookConfigSchema, { url }))).toEqual(['url']);
    });

    it('W1: a non-string url is rejected naming url', () => {
      expect(paths(rejects(WebhookConfigSchema, { url: 42 }))).toEqual(['url']);
    });

    it('W1: a credentials error does not echo the password', () => {
      const issues = rejects(WebhookConfigSchema, { url: 'https://u:hunter2pw@hooks.example.com/' });
      expect(JSON.stringify(issues)).not.toContain('hunter2pw');
    });
  });

  describe('allowedEnvVars', () => {
    it.each([['A'], ['_'], ['HOOK_TOKEN'], ['_X1'], ['A1_B2']])('W1: allowedEnvVars name %j is accepted', (name) => {
      expect(accepts(WebhookConfigSchema, wh({ allowedEnvVars: [name] })).allowedEnvVars).toEqual([name]);
    });

    it.each([['lower'], ['1ABC'], ['HOOK-TOKEN'], ['HOOK TOKEN'], [''], ['Token'], ['A.B'], ['$A']])(
      'W1: allowedEnvVars name %j is rejected naming allowedEnvVars[i]',
      (name) => {
        expect(paths(rejects(WebhookConfigSchema, wh({ allowedEnvVars: ['OK', name] })))).toEqual(['allowedEnvVars.1']);
      },
    );

    it('W1: allowedEnvVars must be an array of strings', () => {
      expect(paths(rejects(WebhookConfigSchema, wh({ allowedEnvVars: 'TOKEN' })))).toEqual(['allowedEnvVars']);
      expect(paths(rejects(WebhookConfigSchema, wh({ allowedEnvVars: [1] })))).toEqual(['allowedEnvVars.0']);
    });
  });

  describe('body and eventFields', () => {
    it.each([
      ['an array', [1, 2]],
      ['a string', 'x'],
      ['a number', 1],
      ['null', null],
    ])('W1: body that is %s is rejected naming body', (_label, body) => {
      expect(paths(rejects(WebhookConfigSchema, wh({ body })))).toEqual(['body']);
    });

    it('W1: an empty body object is accepted', () => {
      expect(accepts(WebhookConfigSchema, wh({ body: {} })).body).toEqual({});
    });

    it('W1: body must be JSON data: a function, bigint, Date, NaN or cycle inside is rejected naming its path', () => {
      expect(paths(rejects(WebhookConfigSchema, wh({ body: { fn: () => 1 } })))).toEqual(['body.fn']);
      expect(paths(rejects(WebhookConfigSchema, wh({ body: { a: { b: [1, 2n] } } })))).toEqual(['body.a.b.1']);
      expect(paths(rejects(WebhookConfigSchema, wh({ body: { when: new Date(0) } })))).toEqual(['body.when']);
      expect(paths(rejects(WebhookConfigSchema, wh({ body: { n: Number.NaN } })))).toEqual(['body.n']);
      expect(paths(rejects(WebhookConfigSchema, wh({ body: { s: Symbol('x') } })))).toEqual(['body.s']);
      const cyclic: Record<string, unknown> = { a: 1 };
      cyclic.self = { back: cyclic };
      const issues = rejects(WebhookConfigSchema, wh({ body: cyclic }));
      expect(issues).toHaveLength(1);
      expect(issues[0]!.path.startsWith('body.self')).toBe(true);
      expect(issues[0]!.message).toMatch(/cycle/);
    });

    it('W1: eventFields is a string[]', () => {
      expect(accepts(WebhookConfigSchema, wh({ eventFields: [] })).eventFields).toEqual([]);
      expect(accepts(WebhookConfigSchema, wh({ eventFields: ['operationId', 'result'] })).eventFields).toEqual(['operationId', 'result']);
      expect(paths(rejects(WebhookConfigSchema, wh({ eventFields: 'operationId' })))).toEqual(['eventFields']);
      expect(paths(rejects(WebhookConfigSchema, wh({ eventFields: ['ok', 3] })))).toEqual(['eventFields.1']);
    });
  });

  describe('strict', () => {
    it.each(['retries', 'header', 'secret', 'Url', 'response_handling'])('W1: unknown key %j is rejected and the error names it', (key) => {
      const issues = rejects(WebhookConfigSchema, wh({ [key]: 'x' }));
      expect(issues).toHaveLength(1);
      expect(issues[0]!.message).toContain(key);
    });

    it('W1: an unknown webhook key through parseHookBatch names the hook, webhook and the key', () => {
      const error = hookConfigError(() => parseHookBatch([{ id: 'h1', type: 'afterStep', webhook: wh({ retries: 3 }) }]));
      expect(error.hookId).toBe('h1');
      expect(error.issues.map((i) => i.path)).toEqual(['webhook']);
      expect(error.message).toContain('h1');
      expect(error.message).toContain('retries');
    });

    it('W1: the webhook must be an object', () => {
      expect(paths(rejects(WebhookConfigSchema, 'https://x.example'))).toEqual(['']);
      expect(paths(rejects(WebhookConfigSchema, null))).toEqual(['']);
    });
  });
});

describe('W1a: rejected combinations', () => {
  it('W1a: toolCall with qstash is rejected naming webhook.delivery', () => {
    expect(paths(rejects(WebhookConfigSchema, wh({ responseHandling: 'toolCall', delivery: 'qstash' })))).toEqual(['delivery']);
    const error = hookConfigError(() =>
      parseHookBatch([{ id: 'ctl', type: 'beforeToolCall', webhook: wh({ responseHandling: 'toolCall', delivery: 'qstash' }) }]),
    );
    expect(error.issues.map((i) => i.path)).toEqual(['webhook.delivery']);
    expect(error.message).toContain('webhook.delivery');
  });

  it('W1a: qstash without toolCall is fine', () => {
    expect(accepts(WebhookConfigSchema, wh({ delivery: 'qstash' })).delivery).toBe('qstash');
  });

  it("W1a: onError 'block' without toolCall is rejected naming webhook.onError (explicit ignore and default alike)", () => {
    expect(paths(rejects(WebhookConfigSchema, wh({ onError: 'block' })))).toEqual(['onError']);
    expect(paths(rejects(WebhookConfigSchema, wh({ onError: 'block', responseHandling: 'ignore' })))).toEqual(['onError']);
    const error = hookConfigError(() => parseHookBatch([{ id: 'n', type: 'afterToolCall', webhook: wh({ onError: 'block' }) }]));
    expect(error.issues.map((i) => i.path)).toEqual(['webhook.onError']);
  });

  it('W1a: toolCall with body is rejected naming webhook.body (even an empty body)', () => {
    expect(paths(rejects(WebhookConfigSchema, wh({ responseHandling: 'toolCall', body: { a: 1 } })))).toEqual(['body']);
    expect(paths(rejects(WebhookConfigSchema, wh({ responseHandling: 'toolCall', body: {} })))).toEqual(['body']);
    const error = hookConfigError(() => parseHookBatch([{ id: 'ctl', type: 'afterToolCall', webhook: wh({ responseHandling: 'toolCall', body: { a: 1 } }) }]));
    expect(error.issues.map((i) => i.path)).toEqual(['webhook.body']);
  });

  it('W1a: toolCall with eventFields is rejected naming webhook.eventFields (even an empty list)', () => {
    expect(paths(rejects(WebhookConfigSchema, wh({ responseHandling: 'toolCall', eventFields: ['args'] })))).toEqual(['eventFields']);
    expect(paths(rejects(WebhookConfigSchema, wh({ responseHandling: 'toolCall', eventFields: [] })))).toEqual(['eventFields']);
    const error = hookConfigError(() =>
      parseHookBatch([{ id: 'ctl', type: 'beforeToolCall', webhook: wh({ responseHandling: 'toolCall', eventFields: ['args'] }) }]),
    );
    expect(error.issues.map((i) => i.path)).toEqual(['webhook.eventFields']);
  });

  it('W1a: toolCall with qstash, body and eventFields reports all three fields', () => {
    const issues = rejects(WebhookConfigSchema, wh({ responseHandling: 'toolCall', delivery: 'qstash', body: {}, eventFields: [] }));
    expect(new Set(paths(issues))).toEqual(new Set(['delivery', 'body', 'eventFields']));
  });

  const nonControlTypes = HOOK_TYPES.filter((t) => t !== 'beforeToolCall' && t !== 'afterToolCall');

  it.each(nonControlTypes)('W1a: toolCall on %s is rejected naming webhook.responseHandling', (type) => {
    const hook = { id: `ctl-${type}`, type, webhook: wh({ responseHandling: 'toolCall' }) };
    expect(paths(rejects(AgentHookSchema, hook))).toEqual(['webhook.responseHandling']);
    expect(paths(rejects(SerializedHookSchema, hook))).toEqual(['webhook.responseHandling']);
    const error = hookConfigError(() => parseHookBatch([hook]));
    expect(error.hookId).toBe(`ctl-${type}`);
    expect(error.issues.map((i) => i.path)).toEqual(['webhook.responseHandling']);
    expect(error.message).toContain('webhook.responseHandling');
  });

  it.each(['beforeToolCall', 'afterToolCall'] as const)('W1a: toolCall on %s is accepted', (type) => {
    const [hook] = parseHookBatch([{ id: 'c', type, webhook: wh({ responseHandling: 'toolCall', onError: 'block' }) }]);
    expect(hook!.webhook).toMatchObject({ responseHandling: 'toolCall', onError: 'block', delivery: 'fetch' });
  });
});

describe('W1b: headers', () => {
  const forbidden = [
    'host',
    'Host',
    'HOST',
    'content-length',
    'Content-Length',
    'connection',
    'Connection',
    'transfer-encoding',
    'Transfer-Encoding',
    'trailer',
    'TRAILER',
    'upgrade',
    'Upgrade',
    'proxy-authorization',
    'Proxy-Authorization',
    'proxy-connection',
    'PROXY-X',
    'sec-fetch-mode',
    'Sec-WebSocket-Key',
    'SEC-CH-UA',
    'upstash-forward-authorization',
    'Upstash-Retries',
    'UPSTASH-DELAY',
  ];

  it.each(forbidden)('W1b: header name %j is rejected naming headers.<name>', (name) => {
    expect(isForbiddenHeaderName(name)).toBe(true);
    const issues = rejects(WebhookConfigSchema, wh({ headers: { [name]: 'v' } }));
    expect(paths(issues)).toEqual([`headers.${name}`]);
    expect(issues[0]!.message).toMatch(/forbidden/);
  });

  it.each(['authorization', 'x-api-key', 'content-type', 'X-Hostname', 'x-proxy-id', 'x-sec-token', 'x-upstash', 'hosts', 'upgrades'])(
    'W1b: ordinary header name %j is accepted',
    (name) => {
      expect(isForbiddenHeaderName(name)).toBe(false);
      expect(accepts(WebhookConfigSchema, wh({ headers: { [name]: 'v' } })).headers).toEqual({ [name]: 'v' });
    },
  );

  it.each([
    ['CR', 'a\rb'],
    ['LF', 'a\nb'],
    ['CRLF injection', 'v\r\nx-injected: 1'],
    ['NUL', 'a\0b'],
  ])('W1b: a header value with %s is rejected naming headers.<name>', (_label, value) => {
    const issues = rejects(WebhookConfigSchema, wh({ headers: { 'x-test': value } }));
    expect(paths(issues)).toEqual(['headers.x-test']);
    expect(issues[0]!.message).toMatch(/CR, LF or NUL/);
  });

  it('W1b: an invalid header name (space, colon, empty) is rejected naming headers.<name>', () => {
    expect(paths(rejects(WebhookConfigSchema, wh({ headers: { 'x bad': 'v' } })))).toEqual(['headers.x bad']);
    expect(paths(rejects(WebhookConfigSchema, wh({ headers: { 'x:bad': 'v' } })))).toEqual(['headers.x:bad']);
    expect(paths(rejects(WebhookConfigSchema, wh({ headers: { '': 'v' } })))).toEqual(['headers.']);
  });

  it('W1b: header values must be strings; headers must be an object', () => {
    expect(paths(rejects(WebhookConfigSchema, wh({ headers: { 'x-n': 1 } })))).toEqual(['headers.x-n']);
    expect(paths(rejects(WebhookConfigSchema, wh({ headers: ['a'] })))).toEqual(['headers']);
  });

  it('W1b: a header error never echoes the value', () => {
    const issues = rejects(WebhookConfigSchema, wh({ headers: { authorization: 'Bearer sk-live-SECRET\r\n' } }));
    expect(JSON.stringify(issues)).not.toContain('sk-live-SECRET');
    const error = hookConfigError(() =>
      parseHookBatch([{ id: 'h', type: 'afterStep', webhook: wh({ headers: { authorization: 'Bearer sk-live-SECRET\n' } }) }]),
    );
    expect(error.message).toContain('webhook.headers.authorization');
    expect(error.message).not.toContain('sk-live-SECRET');
  });
});

describe('W2: header templates are checked against allowedEnvVars at registration', () => {
  it('W2: a ${NAME} template not in allowedEnvVars is rejected at registration naming webhook.headers.<name>, never the value', () => {
    const hook = { id: 'tmpl', type: 'afterStep', webhook: wh({ headers: { Authorization: 'Bearer sk-live-SECRET ${TOKEN}' } }) };
    const error = hookConfigError(() => parseHookBatch([hook]));
    expect(error.hookId).toBe('tmpl');
    expect(error.issues.map((i) => i.path)).toEqual(['webhook.headers.Authorization']);
    expect(error.message).toContain('webhook.headers.Authorization');
    expect(error.message).toContain('TOKEN');
    expect(error.message).not.toContain('sk-live-SECRET');
    expect(JSON.stringify(error.issues)).not.toContain('sk-live-SECRET');
  });

  it('W2: a template allowed for a different variable is still rejected', () => {
    const error = hookConfigError(() =>
      parseHookBatch([{ id: 't', type: 'afterStep', webhook: wh({ headers: { 'x-key': '${OTHER}' }, allowedEnvVars: ['TOKEN'] }) }]),
    );
    expect(error.issues.map((i) => i.path)).toEqual(['webhook.headers.x-key']);
    expect(error.message).toContain('OTHER');
  });

  it('W2: one of two templates missing from allowedEnvVars rejects the header', () => {
    const issues = rejects(WebhookConfigSchema, wh({ headers: { 'x-pair': '${A}:${B}' }, allowedEnvVars: ['A'] }));
    expect(paths(issues)).toEqual(['headers.x-pair']);
    expect(issues[0]!.message).toContain('B');
  });

  it('W2: allow-listed templates are accepted and stored unresolved', () => {
    process.env.W2_TEST_TOKEN = 'resolved-should-not-appear';
    try {
      const [hook] = parseHookBatch([
        {
          id: 'ok',
          type: 'afterStep',
          webhook: wh({ headers: { Authorization: 'Bearer ${W2_TEST_TOKEN}', 'x-pair': '${A}-${W2_TEST_TOKEN}' }, allowedEnvVars: ['W2_TEST_TOKEN', 'A'] }),
        },
      ]);
      expect(hook!.webhook!.headers).toEqual({ Authorization: 'Bearer ${W2_TEST_TOKEN}', 'x-pair': '${A}-${W2_TEST_TOKEN}' });
    } finally {
      delete process.env.W2_TEST_TOKEN;
    }
  });

  it('W2: an allow-listed variable need not be set at registration (it is resolved at send time)', () => {
    expect(process.env.W2_UNSET_VAR).toBeUndefined();
    expect(() =>
      parseHookBatch([{ id: 'u', type: 'afterStep', webhook: wh({ headers: { a: '${W2_UNSET_VAR}' }, allowedEnvVars: ['W2_UNSET_VAR'] }) }]),
    ).not.toThrow();
  });

  it('W2: a malformed template (not a variable name) is rejected and its text is not echoed', () => {
    const error = hookConfigError(() =>
      parseHookBatch([{ id: 'm', type: 'afterStep', webhook: wh({ headers: { authorization: 'Bearer ${sk-live-SECRET}' } }) }]),
    );
    expect(error.issues.map((i) => i.path)).toEqual(['webhook.headers.authorization']);
    expect(error.message).not.toContain('sk-live-SECRET');
  });

  it('W2: an empty template ${} is rejected', () => {
    expect(paths(rejects(WebhookConfigSchema, wh({ headers: { a: 'x${}' } })))).toEqual(['headers.a']);
  });

  it('W2: validation is repeatable (no regex state leaks between parses)', () => {
    const input = wh({ headers: { a: '${T}', b: '${T}' }, allowedEnvVars: ['T'] });
    for (let i = 0; i < 5; i += 1) accepts(WebhookConfigSchema, input);
    for (let i = 0; i < 5; i += 1)
      expect(paths(rejects(WebhookConfigSchema, wh({ headers: { a: '${T}', b: '${U}' }, allowedEnvVars: ['T'] })))).toEqual(['headers.b']);
  });
});

describe('W1: port 0 is refused in webhook URLs', () => {
  it.each(['http://203.0.113.10:0/hook', 'https://hooks.example.com:0/', 'https://hooks.example.com:000/', 'http://[2001:db8::1]:0/x'])(
    'W1: %s is rejected naming url',
    (url) => {
      const issues = rejects(WebhookConfigSchema, { url });
      expect(paths(issues)).toEqual(['url']);
      expect(issues[0]!.message).toMatch(/port 0/);
    },
  );

  it.each(['https://hooks.example.com:1/', 'https://hooks.example.com:65535/', 'https://hooks.example.com:443/'])('W1: %s is accepted', (url) => {
    expect(accepts(WebhookConfigSchema, { url }).url).toBe(url);
  });
});

describe('W1b: header names and values by the rules the HTTP client (undici) applies', () => {
  it.each(['webhook-signature', 'Webhook-Signature', 'webhook-id', 'WEBHOOK-TIMESTAMP', 'webhook-anything'])(
    'W1b: %j is reserved for hookrelay (Q1/Q6) and rejected at registration',
    (name) => {
      expect(isForbiddenHeaderName(name)).toBe(true);
      const issues = rejects(WebhookConfigSchema, wh({ headers: { [name]: 'v1,spoof' } }));
      expect(paths(issues)).toEqual([`headers.${name}`]);
      expect(issues[0]!.message).toMatch(/forbidden/);
    },
  );

  it.each(['te', 'TE', 'keep-alive', 'Keep-Alive', 'expect', 'Expect'])('W1b: hop-by-hop / unsupported %j is rejected at registration', (name) => {
    expect(isForbiddenHeaderName(name)).toBe(true);
    expect(paths(rejects(WebhookConfigSchema, wh({ headers: { [name]: 'x' } })))).toEqual([`headers.${name}`]);
  });

  it.each(['x-webhook-id', 'webhook', 'tenant', 'expected-by', 'x-te'])('W1b: %j is an ordinary name', (name) => {
    expect(isForbiddenHeaderName(name)).toBe(false);
    accepts(WebhookConfigSchema, wh({ headers: { [name]: 'v' } }));
  });

  it.each([
    ['\x01', 'a\x01b'],
    ['\x1f', 'a\x1fb'],
    ['DEL \x7f', 'a\x7fb'],
    ['U+2028', 'a\u2028b'],
    ['U+0100', 'a\u0100b'],
    ['€ (not Latin-1)', 'price €'],
    ['an emoji', 'ok 👍'],
  ])('W1b: a value with %s is rejected at registration, naming the header and not the value', (_label, value) => {
    const issues = rejects(WebhookConfigSchema, wh({ headers: { 'x-v': `SECRET-MARK ${value}` } }));
    expect(paths(issues)).toEqual(['headers.x-v']);
    expect(JSON.stringify(issues)).not.toContain('SECRET-MARK');
  });

  it.each([
    ['HTAB', 'a\tb'],
    ['Latin-1 é', 'café'],
    ['obs-text \xff', 'a\xffb'],
    ['visible ASCII and spaces', ' !"#~ '],
  ])('W1b: a value with %s is accepted (undici sends it)', (_label, value) => {
    expect(accepts(WebhookConfigSchema, wh({ headers: { 'x-v': value } })).headers).toEqual({ 'x-v': value });
  });

  it('W1b: the same name twice in different case is rejected at registration (as at send time)', () => {
    expect(paths(rejects(WebhookConfigSchema, wh({ headers: { 'X-Tenant': 'a', 'x-tenant': 'b' } })))).toEqual(['headers.x-tenant']);
  });

  it('W1b: user-agent is accepted at registration (hookrelay sends its own in its place)', () => {
    expect(accepts(WebhookConfigSchema, wh({ headers: { 'User-Agent': 'mine/1.0' } })).headers).toEqual({ 'User-Agent': 'mine/1.0' });
  });
});

describe("W2 template sources: hookrelay's own variables are never a template source", () => {
  const reserved = [
    'DATABASE_URL',
    'REDIS_URL',
    'QSTASH_TOKEN',
    'QSTASH_CURRENT_SIGNING_KEY',
    'QSTASH_NEXT_SIGNING_KEY',
    'HOOKRELAY_SIGNING_SECRETS',
    'HOOKRELAY_ANYTHING',
    'AGENT_HOOK_WEBHOOK_TOKEN',
    'AGENT_HOOK_WEBHOOK_URL',
  ];

  it.each(reserved)('W2 template sources: a caller hook reading %s is refused, naming it at the header and in allowedEnvVars', (variable) => {
    const error = hookConfigError(() =>
      parseHookBatch([{ id: 'thief', type: 'onComplete', webhook: wh({ headers: { 'x-db': `\${${variable}}` }, allowedEnvVars: ['HOOK_TOKEN', variable] }) }]),
    );
    expect(error.hookId).toBe('thief');
    expect(error.issues.map((i) => i.path).sort()).toEqual(['webhook.allowedEnvVars[1]', 'webhook.headers.x-db']);
    for (const issue of error.issues) expect(issue.message).toContain(variable);
  });

  it('W2 template sources: listing a reserved name in allowedEnvVars is refused even without a template', () => {
    expect(paths(rejects(WebhookConfigSchema, wh({ allowedEnvVars: ['DATABASE_URL'] })))).toEqual(['allowedEnvVars.0']);
  });

  it('W2 template sources: names that only look alike are ordinary (DATABASE_URL_2, MY_REDIS_URL, MY_QSTASH_TOKEN, HOOKRELAY without _)', () => {
    for (const name of ['DATABASE_URL_2', 'MY_REDIS_URL', 'MY_QSTASH_TOKEN', 'HOOKRELAY', 'AGENT_HOOK_TOKEN', 'APP_PGPASSWORD', 'MY_OTEL_TOKEN']) {
      accepts(WebhookConfigSchema, wh({ headers: { a: `\${${name}}` }, allowedEnvVars: [name] }));
    }
  });

  it('W2 template sources: the environment hooks hookrelay builds may read AGENT_HOOK_WEBHOOK_*, and nothing else reserved', () => {
    const envHook = (headers: Record<string, string>, allowedEnvVars: string[]) => ({
      id: 'server-env-webhook:onComplete',
      type: 'onComplete',
      webhook: wh({ headers, allowedEnvVars }),
    });
    const [ok] = parseSerializedHooks([envHook({ authorization: 'Bearer ${AGENT_HOOK_WEBHOOK_TOKEN}' }, ['AGENT_HOOK_WEBHOOK_TOKEN'])], {
      allowEnvironmentIds: true,
    });
    expect(ok!.id).toBe('server-env-webhook:onComplete');
    const error = hookConfigError(() => parseSerializedHooks([envHook({ 'x-db': '${DATABASE_URL}' }, ['DATABASE_URL'])], { allowEnvironmentIds: true }));
    expect(error.message).toContain('DATABASE_URL');
    // Without the environment-id permission the same hook is a caller hook: refused.
    hookConfigError(() => parseSerializedHooks([envHook({ authorization: 'Bearer ${AGENT_HOOK_WEBHOOK_TOKEN}' }, ['AGENT_HOOK_WEBHOOK_TOKEN'])]));
  });
});
