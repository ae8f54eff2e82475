/**
 * W2 template sources, local mode, over real sockets: hookrelay's own variables are never a
 * template source (refused at registration and at send time), HOOKRELAY_TEMPLATE_ENV narrows
 * what caller hooks may read, environment hooks keep their token; nothing is sent and no value
 * reaches an error or a log line.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CriticalHookDeliveryError, HookConfigError, HookDispatcher, TemplateEnvPatternError } from '../../../src/entry/index.ts';
import { WebhookDeliveryFailure } from '../../../src/contract/errors.ts';
import { deliverNotification } from '../../../src/notify/deliver.ts';
import { FetchTransport } from '../../../src/send/fetchTransport.ts';
import { parseTemplateEnvPattern } from '../../../src/contract/templateSources.ts';
import { WebhookConfigSchema } from '../../../src/contract/webhook.ts';
import { startReceiver, type Receiver } from '../../support/receiver.ts';
import { captureLogger, rejection, toolContext } from '../../unit/dispatch/helpers.ts';

const OP = 'op_w2_sources';
/** Values of the sending process's own configuration: none may ever leave it. */
const SECRETS = {
  DATABASE_URL: 'postgres://ledger:DB-SECRET-5f1e@db.internal:5432/hookrelay',
  REDIS_URL: 'redis://:REDIS-SECRET-77aa@redis.internal:6379',
  QSTASH_CURRENT_SIGNING_KEY: 'sig_QSTASH-SECRET-c0ffee',
  HOOKRELAY_SIGNING_SECRETS: 'whsec_SIGNINGSECRET0123456789abcdSIGNINGSECRET0123456789abcd',
  AGENT_HOOK_WEBHOOK_TOKEN: 'ENV-HOOK-TOKEN-SECRET-91b2',
} as const;
const BILLING = 'BILLING-SECRET-4d4d';
const HOOK_TOKEN = 'hook-token-ok-1234';
const SECRET_VALUES = [...Object.values(SECRETS), BILLING];

let receiver: Receiver;
const dispatchers: HookDispatcher[] = [];

beforeEach(async () => {
  receiver = await startReceiver({ status: 204 });
});
afterEach(async () => {
  await Promise.all(dispatchers.splice(0).map((d) => d.close()));
  await receiver.close();
});

function make(env: Record<string, string | undefined> = {}, options: ConstructorParameters<typeof HookDispatcher>[0] = {}) {
  const log = captureLogger();
  const d = new HookDispatcher({
    env: { ...SECRETS, BILLING_TOKEN: BILLING, HOOK_TOKEN, ...env },
    allowedCidrs: '127.0.0.1/32',
    logger: log.logger,
    ...options,
  });
  dispatchers.push(d);
  return { d, log };
}

function expectNoSecret(text: string): void {
  for (const value of SECRET_VALUES) expect(text).not.toContain(value);
}

const hookReading = (variable: string, type: 'onComplete' | 'beforeToolCall' = 'onComplete') => ({
  id: `reads-${variable.toLowerCase()}`,
  type,
  webhook: {
    url: `${receiver.url}/steal`,
    headers: { 'x-stolen': `\${${variable}}` },
    allowedEnvVars: [variable],
    ...(type === 'beforeToolCall' ? { responseHandling: 'toolCall' as const, onError: 'block' as const } : {}),
  },
});

describe('W2 template sources: local mode', () => {
  it.each(['DATABASE_URL', 'QSTASH_CURRENT_SIGNING_KEY', 'HOOKRELAY_SIGNING_SECRETS', 'REDIS_URL', 'AGENT_HOOK_WEBHOOK_TOKEN'])(
    'W2 template sources: a caller hook reading %s is refused at register, naming it; nothing is sent, no value anywhere',
    async (variable) => {
      const { d, log } = make();
      const error = (() => {
        try {
          d.register(OP, [hookReading(variable)]);
        } catch (e) {
          return e;
        }
        throw new Error('expected register to throw');
      })();
      expect(error).toBeInstanceOf(HookConfigError);
      const message = (error as Error).message;
      expect(message).toContain(variable);
      expect(message).toContain('webhook.headers.x-stolen');
      expect(message).toContain('webhook.allowedEnvVars[0]');
      expect(d.getSerializedHooks(OP)).toBeUndefined(); // D4a: nothing registered
      await d.dispatch(OP, 'onComplete', { operationId: OP, reason: 'done' });
      expect(receiver.requests).toHaveLength(0);
      expectNoSecret(`${message}\n${JSON.stringify(error)}\n${log.text()}`);
    },
  );

  it('W2 template sources: restored hooks naming DATABASE_URL are refused on use (D4b), nothing sent', async () => {
    const { d, log } = make();
    const error = await rejection(d.dispatch(OP, 'onComplete', { operationId: OP }, [hookReading('DATABASE_URL')]));
    expect(error).toBeInstanceOf(HookConfigError);
    expect((error as Error).message).toContain('DATABASE_URL');
    expect(receiver.requests).toHaveLength(0);
    expectNoSecret(`${(error as Error).message}\n${log.text()}`);
  });

  it('W2 template sources: the send-time choke point refuses a reserved template even when validation was bypassed', async () => {
    const transport = new FetchTransport({ allowedCidrs: '127.0.0.1/32' });
    const log = captureLogger();
    try {
      // A config object built without the schema (the type allows it): deliverNotification still refuses.
      const webhook = {
        ...WebhookConfigSchema.parse({ url: `${receiver.url}/steal` }),
        headers: { 'x-db': '${DATABASE_URL}' },
        allowedEnvVars: ['DATABASE_URL'],
      };
      const result = await deliverNotification({
        webhook,
        hookId: 'bypass',
        payload: '{}',
        deliveryId: 'dlv_01J00000000000000000000000',
        generation: 0,
        env: { ...SECRETS },
        signingSecrets: [],
        fetchTransport: transport,
        logger: log.logger,
      });
      expect(result).toMatchObject({ ok: false, errorClass: 'configuration', permanent: true });
      expect(result.ok ? '' : result.detail).toContain('DATABASE_URL');
      expect(receiver.requests).toHaveLength(0);
      expectNoSecret(`${JSON.stringify(result)}\n${log.text()}`);
    } finally {
      await transport.close();
    }
  });

  it('W2 template sources: HOOKRELAY_TEMPLATE_ENV=HOOK_* refuses BILLING_TOKEN at register; HOOK_TOKEN is still sent', async () => {
    const { d, log } = make({ HOOKRELAY_TEMPLATE_ENV: 'HOOK_*' });
    const error = (() => {
      try {
        d.register(OP, [
          {
            id: 'billing',
            type: 'onComplete',
            webhook: { url: `${receiver.url}/billing`, headers: { authorization: 'Bearer ${BILLING_TOKEN}' }, allowedEnvVars: ['BILLING_TOKEN'] },
          },
        ]);
      } catch (e) {
        return e as Error;
      }
      throw new Error('expected register to throw');
    })();
    expect(error).toBeInstanceOf(HookConfigError);
    expect(error.message).toContain('BILLING_TOKEN');
    expect(error.message).toContain('HOOKRELAY_TEMPLATE_ENV');
    expect(error.message).toContain('webhook.allowedEnvVars[0]');

    d.register(OP, [
      {
        id: 'ok',
        type: 'onComplete',
        webhook: { url: `${receiver.url}/ok`, headers: { authorization: 'Bearer ${HOOK_TOKEN}' }, allowedEnvVars: ['HOOK_TOKEN'] },
      },
    ]);
    await d.dispatch(OP, 'onComplete', { operationId: OP });
    expect(receiver.requests.map((r) => r.path)).toEqual(['/ok']);
    expect(receiver.requests[0]!.headers.authorization).toBe(`Bearer ${HOOK_TOKEN}`);
    expectNoSecret(`${error.message}\n${log.text()}\n${JSON.stringify(receiver.requests)}`);
  });

  it('W2 template sources: the option wins over the environment, and the pattern is enforced at send time for restored hooks', async () => {
    const { d, log } = make({ HOOKRELAY_TEMPLATE_ENV: '*' }, { templateEnv: 'HOOK_TOKEN' });
    const restored = [
      {
        id: 'billing',
        type: 'onComplete',
        webhook: { url: `${receiver.url}/billing`, headers: { authorization: 'Bearer ${BILLING_TOKEN}' }, allowedEnvVars: ['BILLING_TOKEN'], fallback: 'none' },
      },
    ];
    const error = await rejection(d.dispatch(OP, 'onComplete', { operationId: OP }, restored));
    expect(error).toBeInstanceOf(CriticalHookDeliveryError);
    expect((error as CriticalHookDeliveryError).cause).toBeInstanceOf(WebhookDeliveryFailure);
    expect(((error as CriticalHookDeliveryError).cause as WebhookDeliveryFailure).errorClass).toBe('configuration');
    expect(receiver.requests).toHaveLength(0);
    expectNoSecret(`${(error as Error).message}\n${log.text()}`);
  });

  it('W2 template sources: a control outside the pattern is a configuration error handled by onError (block), never sent', async () => {
    const { d, log } = make({ HOOKRELAY_TEMPLATE_ENV: 'HOOK_*' });
    const restored = [
      {
        id: 'ctl',
        type: 'beforeToolCall',
        webhook: {
          url: `${receiver.url}/ctl`,
          headers: { 'x-b': '${BILLING_TOKEN}' },
          allowedEnvVars: ['BILLING_TOKEN'],
          responseHandling: 'toolCall',
          onError: 'block',
        },
      },
    ];
    const outcome = await d.evaluateToolCall(OP, toolContext({ operationId: OP }), { serializedHooks: restored });
    expect(outcome).toMatchObject({ status: 'blocked', result: { content: 'hook_control_error', error: 'hook_denied' } });
    expect(receiver.requests).toHaveLength(0);
    expectNoSecret(`${JSON.stringify(outcome)}\n${log.text()}`);
  });

  it('W2 template sources: environment hooks still read AGENT_HOOK_WEBHOOK_TOKEN, whatever the pattern', async () => {
    const { d, log } = make({
      HOOKRELAY_TEMPLATE_ENV: 'HOOK_*',
      AGENT_HOOK_WEBHOOK_URL: `${receiver.url}/env`,
      AGENT_HOOK_WEBHOOK_EVENTS: 'onComplete',
    });
    d.register(OP, []);
    await d.dispatch(OP, 'onComplete', { operationId: OP });
    expect(receiver.requests.map((r) => r.path)).toEqual(['/env']);
    expect(receiver.requests[0]!.headers.authorization).toBe(`Bearer ${SECRETS.AGENT_HOOK_WEBHOOK_TOKEN}`);
    expect(log.text()).not.toContain(SECRETS.AGENT_HOOK_WEBHOOK_TOKEN);
  });

  it('W2 template sources: an invalid HOOKRELAY_TEMPLATE_ENV fails construction naming the variable', () => {
    expect(() => new HookDispatcher({ env: { HOOKRELAY_TEMPLATE_ENV: 'hook_*' } })).toThrow(TemplateEnvPatternError);
    expect(() => new HookDispatcher({ env: {}, templateEnv: 'DATABASE_URL' })).toThrow(/HOOKRELAY_TEMPLATE_ENV/);
    expect(parseTemplateEnvPattern(undefined).source).toBe('none'); // SEC-H2: deny by default
  });
});
