import { describe, expect, it } from 'vitest';
import { DeliveryConfigError } from '../../../src/contract/errors.ts';
import { resolveHeaderTemplates } from '../../../src/send/headerTemplates.ts';
import { parseTemplateEnvPattern } from '../../../src/contract/templateSources.ts';

/**
 * These tests are about resolution, so the operator allows every unreserved name (`*`); the
 * default pattern is `none` (SEC-H2, tested below with no options at all).
 */
const ALL = parseTemplateEnvPattern('*');
const resolve = (...[headers, allowed, env, options = {}]: Parameters<typeof resolveHeaderTemplates>) =>
  resolveHeaderTemplates(headers, allowed, env, { templateEnv: ALL, ...options });

const SECRET = 's3cr3t-Value-9f8e7d';

function configError(fn: () => unknown): DeliveryConfigError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(DeliveryConfigError);
    return error as DeliveryConfigError;
  }
  throw new Error('expected a DeliveryConfigError');
}

describe('W2: header templates resolve at send time', () => {
  it('W2: an allow-listed variable resolves from the given env; names are lowercased', () => {
    const headers = resolve({ Authorization: 'Bearer ${HOOK_TOKEN}', 'X-Plain': 'v' }, ['HOOK_TOKEN'], { HOOK_TOKEN: SECRET });
    expect(headers).toEqual({ authorization: `Bearer ${SECRET}`, 'x-plain': 'v', 'content-type': 'application/json' });
  });

  it('W2: several templates in one value, and repeated calls give the same result (no regex state)', () => {
    const env = { A: 'x', B: 'y' };
    for (let i = 0; i < 3; i += 1) {
      expect(resolve({ 'x-ab': '${A}-${B}-${A}' }, ['A', 'B'], env)['x-ab']).toBe('x-y-x');
    }
  });

  it('W2: reads only the env passed in, so a rotated token is picked up at once', () => {
    const headers = { authorization: 'Bearer ${T}' };
    expect(resolve(headers, ['T'], { T: 'one' }).authorization).toBe('Bearer one');
    expect(resolve(headers, ['T'], { T: 'two' }).authorization).toBe('Bearer two');
    expect(headers.authorization).toBe('Bearer ${T}');
  });

  it('W2: a variable not in allowedEnvVars is a configuration error naming it, never the value', () => {
    const error = configError(() => resolve({ authorization: 'Bearer ${OTHER}' }, ['HOOK_TOKEN'], { OTHER: SECRET, HOOK_TOKEN: SECRET }));
    expect(error.errorClass).toBe('configuration');
    expect(error.message).toContain('OTHER');
    expect(error.message).toContain('allowedEnvVars');
    expect(error.message).not.toContain(SECRET);
  });

  it('W2: no allowedEnvVars at all means no template may resolve', () => {
    const error = configError(() => resolve({ 'x-a': '${HOME}' }, undefined, { HOME: SECRET }));
    expect(error.message).toContain('HOME');
    expect(error.message).not.toContain(SECRET);
  });

  it('W2: an allow-listed variable that is unset (or empty) is a configuration error', () => {
    expect(configError(() => resolve({ authorization: 'Bearer ${HOOK_TOKEN}' }, ['HOOK_TOKEN'], {})).message).toMatch(/HOOK_TOKEN.*unset/);
    expect(configError(() => resolve({ authorization: 'Bearer ${HOOK_TOKEN}' }, ['HOOK_TOKEN'], { HOOK_TOKEN: '' })).message).toMatch(/HOOK_TOKEN/);
  });

  it('W2: inherited properties of the env object are not variables', () => {
    const env = Object.create({ HOOK_TOKEN: SECRET }) as Record<string, string | undefined>;
    configError(() => resolve({ a: '${HOOK_TOKEN}' }, ['HOOK_TOKEN'], env));
  });

  for (const [label, bad] of [
    ['CR', `a\rb${SECRET}`],
    ['LF', `a\nb${SECRET}`],
    ['NUL', `a\0b${SECRET}`],
  ] as const) {
    it(`W1b: a value with ${label} after expansion is a configuration error without the value`, () => {
      const error = configError(() => resolve({ 'x-token': 'v=${T}' }, ['T'], { T: bad }));
      expect(error.message).toContain('x-token');
      expect(error.message).toContain('CR, LF or NUL');
      expect(error.message).not.toContain(SECRET);
    });
  }

  it('W1b: a leftover ${ after expansion is a configuration error (no recursive expansion)', () => {
    const fromEnv = configError(() => resolve({ 'x-a': '${T}' }, ['T', 'U'], { T: `${SECRET}\${U}`, U: 'u' }));
    expect(fromEnv.message).toContain('${');
    expect(fromEnv.message).not.toContain(SECRET);
    configError(() => resolve({ 'x-a': 'abc ${UNCLOSED' }, [], {}));
  });

  for (const name of [
    'Host',
    'content-length',
    'Connection',
    'transfer-encoding',
    'trailer',
    'upgrade',
    'Proxy-Authorization',
    'sec-fetch-mode',
    'Upstash-Forward-X',
  ]) {
    it(`W1b: forbidden header name ${name} is rejected`, () => {
      const error = configError(() => resolve({ [name]: 'x' }, [], {}));
      expect(error.message).toContain(name.toLowerCase());
      expect(error.message).toContain('forbidden');
    });
  }

  it('W1b: an invalid header name, or the same name twice in different case, is rejected', () => {
    configError(() => resolve({ 'bad name': 'x' }, [], {}));
    configError(() => resolve({ 'X-A': '1', 'x-a': '2' }, [], {}));
  });

  it("W1b: content-type is always application/json (a caller's value is replaced)", () => {
    expect(resolve(undefined, undefined, {})).toEqual({ 'content-type': 'application/json' });
    expect(resolve({ 'Content-Type': 'text/plain' }, [], {})).toEqual({ 'content-type': 'application/json' });
  });
});

describe('W2 template sources: refused again at send time (the choke point of every request)', () => {
  const env = {
    DATABASE_URL: `postgres://u:${SECRET}@db/x`,
    QSTASH_CURRENT_SIGNING_KEY: SECRET,
    HOOKRELAY_SIGNING_SECRETS: SECRET,
    AGENT_HOOK_WEBHOOK_TOKEN: SECRET,
    BILLING_TOKEN: SECRET,
    HOOK_TOKEN: 'ok',
  };

  it.each(['DATABASE_URL', 'QSTASH_CURRENT_SIGNING_KEY', 'HOOKRELAY_SIGNING_SECRETS', 'AGENT_HOOK_WEBHOOK_TOKEN'])(
    'W2 template sources: %s is refused even when listed in allowedEnvVars; the error names it, never its value',
    (variable) => {
      const error = configError(() => resolve({ 'x-db': `\${${variable}}` }, [variable], env));
      expect(error.errorClass).toBe('configuration');
      expect(error.message).toContain(variable);
      expect(error.message).toContain("hookrelay's own variables");
      expect(error.message).not.toContain(SECRET);
    },
  );

  it('W2 template sources: only an environment hook may read AGENT_HOOK_WEBHOOK_*, and still nothing else reserved', () => {
    expect(resolve({ authorization: 'Bearer ${AGENT_HOOK_WEBHOOK_TOKEN}' }, ['AGENT_HOOK_WEBHOOK_TOKEN'], env, { environmentHook: true }).authorization).toBe(
      `Bearer ${SECRET}`,
    );
    expect(configError(() => resolve({ 'x-db': '${DATABASE_URL}' }, ['DATABASE_URL'], env, { environmentHook: true })).message).toContain('DATABASE_URL');
  });

  it('W2 template sources: the operator pattern excludes other names; allowed ones resolve', () => {
    const templateEnv = parseTemplateEnvPattern('HOOK_*');
    const error = configError(() => resolve({ authorization: 'Bearer ${BILLING_TOKEN}' }, ['BILLING_TOKEN'], env, { templateEnv }));
    expect(error.message).toContain('BILLING_TOKEN is not allowed by HOOKRELAY_TEMPLATE_ENV');
    expect(error.message).not.toContain(SECRET);
    expect(resolve({ a: '${HOOK_TOKEN}' }, ['HOOK_TOKEN'], env, { templateEnv }).a).toBe('ok');
    const none = parseTemplateEnvPattern('none');
    configError(() => resolve({ a: '${HOOK_TOKEN}' }, ['HOOK_TOKEN'], env, { templateEnv: none }));
    expect(resolve({ a: 'plain' }, [], env, { templateEnv: none }).a).toBe('plain');
  });
});

describe('W1b / W2: send-time header rules', () => {
  it('W2: a malformed template never echoes its text (it may be a pasted secret)', () => {
    for (const header of [`\${${SECRET}}`, `Bearer \${sk-live-${SECRET}}`, `\${ ${SECRET} }`]) {
      const error = configError(() => resolve({ authorization: header }, [], {}));
      expect(error.message).toContain('authorization');
      expect(error.message).not.toContain(SECRET);
    }
  });

  it.each(['webhook-signature', 'Webhook-Id', 'webhook-timestamp', 'te', 'keep-alive', 'Expect'])('W1b: %s is refused at send time too', (name) => {
    expect(configError(() => resolve({ [name]: 'v1,spoof' }, [], {})).message).toContain('forbidden');
  });

  it.each([
    ['\\x01', '\x01'],
    ['DEL', '\x7f'],
    ['U+2028', '\u2028'],
    ['a character past U+00FF', '€'],
  ])('W1b: a value with %s after expansion is a configuration error without the value', (_label, bad) => {
    const error = configError(() => resolve({ 'x-token': 'v=${T}' }, ['T'], { T: `${SECRET}${bad}` }));
    expect(error.message).toContain('x-token');
    expect(error.message).not.toContain(SECRET);
  });

  it("W1b: a caller's user-agent is dropped (the transport always sends hookrelay's)", () => {
    expect(resolve({ 'User-Agent': 'spoofed/1.0', 'x-a': 'b' }, [], {})).toEqual({ 'x-a': 'b', 'content-type': 'application/json' });
  });
});
