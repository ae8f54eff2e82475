/**
 * SEC-T4 (W2): HOOKRELAY_TEMPLATE_ENV globs match in linear time, every variable name is capped
 * at every entry, and the Postgres, Upstash, OpenAI and proxy variables stay closed even under `*`.
 * The glob case reproduces the measured defect: `APP_*_*_*_TOKEN` against
 * `APP_` + 6,000 `_` + `X` blocked `register` for 41 s (a backtracking regex).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { HookConfigError, HookDispatcher, TemplateEnvPatternError } from '../../../src/entry/index.ts';
import { deliverNotification } from '../../../src/notify/deliver.ts';
import { FetchTransport } from '../../../src/send/fetchTransport.ts';
import { MAX_ENV_VAR_NAME_LENGTH, parseTemplateEnvPattern, templateEnvAllows, templateSourceProblem } from '../../../src/contract/templateSources.ts';
import { WebhookConfigSchema } from '../../../src/contract/webhook.ts';
import { loadSettings } from '../../../src/config/settings.ts';
import { SettingsError } from '../../../src/contract/errors.ts';
import { startReceiver, type Receiver } from '../../support/receiver.ts';
import { captureLogger } from '../../unit/dispatch/helpers.ts';

const OP = 'op_sec_t4';
const LONG_NAME = `APP_${'_'.repeat(6000)}X`;
const SECRETS: Record<string, string> = {
  POSTGRES_PASSWORD: 'PG-IMAGE-SECRET-7e1d',
  OPENAI_API_KEY: 'sk-OPENAI-SECRET-99ab',
  UPSTASH_REDIS_REST_TOKEN: 'UPSTASH-SECRET-3c3c',
  HTTPS_PROXY: 'http://user:PROXY-SECRET-5a5a@proxy.internal:3128',
  HTTP_PROXY: 'http://user:PROXY-SECRET-5a5a@proxy.internal:3128',
  NO_PROXY: 'internal',
  ALL_PROXY: 'socks5://user:PROXY-SECRET-5a5a@proxy.internal:1080',
  [LONG_NAME]: 'LONG-NAME-SECRET-0101',
  APP_X_Y_Z_TOKEN: 'app-token-ok',
};

let receiver: Receiver;
const dispatchers: HookDispatcher[] = [];
beforeEach(async () => {
  receiver = await startReceiver({ status: 204 });
});
afterEach(async () => {
  await Promise.all(dispatchers.splice(0).map((d) => d.close()));
  await receiver.close();
});

function dispatcher(templateEnv: string) {
  const log = captureLogger();
  const d = new HookDispatcher({ env: { ...SECRETS, HOOKRELAY_TEMPLATE_ENV: templateEnv }, allowedCidrs: '127.0.0.1/32', logger: log.logger });
  dispatchers.push(d);
  return { d, log };
}

const hookReading = (variable: string, id = 'reads') => ({
  id,
  type: 'onComplete' as const,
  webhook: { url: `${receiver.url}/steal`, headers: { 'x-read': `\${${variable}}` }, allowedEnvVars: [variable] },
});

function thrown(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw');
}

describe('SEC-T4 template env globs in linear time, names capped', () => {
  it('SEC-T4 W2 register under APP_*_*_*_TOKEN with a 6,005-character allowedEnvVars entry is refused within 100 ms, the name never echoed', async () => {
    const { d, log } = dispatcher('APP_*_*_*_TOKEN');
    d.register('op_warm', [hookReading('APP_X_Y_Z_TOKEN', 'warm')]); // the schemas' first use is not what is measured
    const started = performance.now();
    const error = thrown(() => d.register(OP, [hookReading(LONG_NAME)]));
    const elapsed = performance.now() - started;
    expect(error).toBeInstanceOf(HookConfigError);
    expect(elapsed).toBeLessThan(100);
    const message = (error as Error).message;
    expect(message).toContain('webhook.allowedEnvVars[0]');
    expect(message).toContain(`at most ${MAX_ENV_VAR_NAME_LENGTH} characters`);
    expect(message).not.toContain('_'.repeat(200));
    expect(d.getSerializedHooks(OP)).toBeUndefined();
    await d.dispatch(OP, 'onComplete', { operationId: OP, reason: 'done' });
    expect(receiver.requests).toHaveLength(0);
    expect(log.text()).not.toContain('LONG-NAME-SECRET');
  });

  it('SEC-T4 W2 the send-time check (worker, local mode) refuses the long name when validation was bypassed, at once, nothing sent', async () => {
    const transport = new FetchTransport({ allowedCidrs: '127.0.0.1/32' });
    try {
      const webhook = {
        ...WebhookConfigSchema.parse({ url: `${receiver.url}/steal` }),
        headers: { 'x-read': `\${${LONG_NAME}}` },
        allowedEnvVars: [LONG_NAME],
      };
      const started = performance.now();
      const result = await deliverNotification({
        webhook,
        hookId: 'bypass',
        payload: '{}',
        deliveryId: 'dlv_01J00000000000000000000000',
        generation: 0,
        env: SECRETS,
        signingSecrets: [],
        fetchTransport: transport,
        templateEnv: parseTemplateEnvPattern('APP_*_*_*_TOKEN'),
        logger: captureLogger().logger,
      });
      expect(performance.now() - started).toBeLessThan(100);
      expect(result).toMatchObject({ ok: false, errorClass: 'configuration', permanent: true });
      expect(JSON.stringify(result)).not.toContain('_'.repeat(200));
      expect(receiver.requests).toHaveLength(0);
    } finally {
      await transport.close();
    }
  });

  it('SEC-T4 W2 the matcher takes each piece at its leftmost place: same answers as the old regex, no backtracking', () => {
    const p = parseTemplateEnvPattern('APP_*_*_*_TOKEN,*_KEY,A*B*A,X*');
    for (const yes of ['APP_X_Y_Z_TOKEN', 'APP____TOKEN', 'APP_A_B_C_D_TOKEN', 'STRIPE_KEY', '_KEY', 'ABA', 'AXBYA', 'ABBA', 'X', 'X_1'])
      expect(templateEnvAllows(p, yes), yes).toBe(true);
    for (const no of ['APP___TOKEN', 'APP_X_Y_TOKEN', 'APP_X_Y_Z_TOKENS', 'KEY', 'AB', 'ABAB', 'YX', 'x_lower'])
      expect(templateEnvAllows(p, no), no).toBe(false);
    // A name the regex needed cubic time for (every `_` a candidate for each `*`), at the cap.
    const worst = `APP_${'_'.repeat(MAX_ENV_VAR_NAME_LENGTH - 5)}X`;
    expect(templateEnvAllows(p, worst)).toBe(false);
    expect(templateEnvAllows(parseTemplateEnvPattern('*'), LONG_NAME)).toBe(false); // past the cap: never allowed
  });

  it('SEC-T4 W2 HOOKRELAY_TEMPLATE_ENV: an entry longer than the cap is refused naming the variable and the entry position, not its text', () => {
    const long = `APP_${'*_'.repeat(100)}TOKEN`;
    const error = thrown(() => parseTemplateEnvPattern(`HOOK_*,${long}`));
    expect(error).toBeInstanceOf(TemplateEnvPatternError);
    expect((error as Error).message).toContain('HOOKRELAY_TEMPLATE_ENV: entry 2 of 2 must be at most 128 characters');
    expect((error as Error).message).not.toContain('*_*_');
    const settings = thrown(() => loadSettings({ HOOKRELAY_TEMPLATE_ENV: long }));
    expect(settings).toBeInstanceOf(SettingsError);
    expect((settings as SettingsError).variables).toEqual(['HOOKRELAY_TEMPLATE_ENV']);
  });
});

describe('SEC-T4 W2 reserved even under "*": Postgres, Upstash, OpenAI and proxy variables', () => {
  const all = parseTemplateEnvPattern('*');
  it.each(['POSTGRES_PASSWORD', 'POSTGRES_USER', 'OPENAI_API_KEY', 'UPSTASH_REDIS_REST_TOKEN', 'HTTPS_PROXY', 'HTTP_PROXY', 'NO_PROXY', 'ALL_PROXY'])(
    'SEC-T4 W2 %s is refused at register under "*", nothing is sent, no value anywhere',
    async (variable) => {
      expect(templateSourceProblem(variable, { pattern: all })).toContain(variable);
      const { d, log } = dispatcher('*');
      const error = thrown(() => d.register(OP, [hookReading(variable)]));
      expect(error).toBeInstanceOf(HookConfigError);
      expect((error as Error).message).toContain(variable);
      await d.dispatch(OP, 'onComplete', { operationId: OP, reason: 'done' });
      expect(receiver.requests).toHaveLength(0);
      const text = `${(error as Error).message}\n${log.text()}`;
      for (const value of Object.values(SECRETS)) expect(text).not.toContain(value);
    },
  );

  it.each(['POSTGRES_*', 'UPSTASH_*', 'OPENAI_*', 'HTTPS_PROXY'])('SEC-T4 W2 HOOKRELAY_TEMPLATE_ENV=%s names only reserved variables: an error', (raw) => {
    expect(thrown(() => parseTemplateEnvPattern(raw))).toBeInstanceOf(TemplateEnvPatternError);
  });

  it('SEC-T4 W2 an unreserved name under "*" still resolves and is sent', async () => {
    const { d } = dispatcher('*');
    d.register(OP, [hookReading('APP_X_Y_Z_TOKEN')]);
    await d.dispatch(OP, 'onComplete', { operationId: OP, reason: 'done' });
    expect(receiver.requests).toHaveLength(1);
    expect(receiver.requests[0]?.headers['x-read']).toBe('app-token-ok');
  });
});
