import { afterEach, describe, expect, it } from 'vitest';
import { EnvHookConfigError, HookDispatcher, loadEnvHooks } from '../../../src/entry/index.ts';
import { quietLogger, recordingProducer, rejection, thrown } from './helpers.ts';

const URL_ = 'https://policy.example.com/hook';
const TOKEN = 'tok_SECRET_value_123';
const base = { AGENT_HOOK_WEBHOOK_URL: URL_, AGENT_HOOK_WEBHOOK_TOKEN: TOKEN, AGENT_HOOK_WEBHOOK_EVENTS: 'onComplete' };

function configError(env: Record<string, string | undefined>): EnvHookConfigError {
  const error = thrown(() => loadEnvHooks(env));
  expect(error).toBeInstanceOf(EnvHookConfigError);
  const e = error as EnvHookConfigError;
  // E2: names variables, never values
  // (the mode / onError values are the documented enum words the message may use to explain)
  for (const name of ['AGENT_HOOK_WEBHOOK_URL', 'AGENT_HOOK_WEBHOOK_TOKEN', 'AGENT_HOOK_WEBHOOK_EVENTS']) {
    const value = env[name]?.trim();
    if (value && value.length > 3) expect(e.message).not.toContain(value);
  }
  return e;
}

describe('loadEnvHooks (E1–E3, R7)', () => {
  it('E1/E2: unset or blank URL = feature off', () => {
    expect(loadEnvHooks({})).toEqual([]);
    expect(loadEnvHooks({ AGENT_HOOK_WEBHOOK_URL: '   ', AGENT_HOOK_WEBHOOK_EVENTS: 'bogus' })).toEqual([]);
  });

  it('E1/E3: one hook per event (trimmed, empties dropped, duplicates removed), id server-env-webhook:<event>, token as a template', () => {
    const hooks = loadEnvHooks({ ...base, AGENT_HOOK_WEBHOOK_EVENTS: ' onComplete, ,afterStep,onComplete,' });
    expect(hooks.map((h) => h.id)).toEqual(['server-env-webhook:onComplete', 'server-env-webhook:afterStep']);
    expect(hooks[0]).toEqual({
      id: 'server-env-webhook:onComplete',
      type: 'onComplete',
      webhook: expect.objectContaining({
        url: URL_,
        delivery: 'fetch',
        headers: { authorization: 'Bearer ${AGENT_HOOK_WEBHOOK_TOKEN}' },
        allowedEnvVars: ['AGENT_HOOK_WEBHOOK_TOKEN'],
        responseHandling: 'ignore',
        onError: 'continue',
      }),
    });
    expect(JSON.stringify(hooks)).not.toContain(TOKEN);
  });

  it('E3: tool-call events become controls in toolCall mode (with the env onError); others stay notifications', () => {
    const hooks = loadEnvHooks({
      ...base,
      AGENT_HOOK_WEBHOOK_EVENTS: 'beforeToolCall,afterToolCall,onToolCallError,onComplete',
      AGENT_HOOK_WEBHOOK_RESPONSE_HANDLING: 'toolCall',
      AGENT_HOOK_WEBHOOK_ON_ERROR: 'block',
    });
    expect(hooks.map((h) => [h.type, h.webhook.responseHandling, h.webhook.onError])).toEqual([
      ['beforeToolCall', 'toolCall', 'block'],
      ['afterToolCall', 'toolCall', 'block'],
      ['onToolCallError', 'ignore', 'continue'],
      ['onComplete', 'ignore', 'continue'],
    ]);
  });

  it('R7: only subscribed events are active (after-only review = subscribe only to afterToolCall)', () => {
    const hooks = loadEnvHooks({ ...base, AGENT_HOOK_WEBHOOK_EVENTS: 'afterToolCall', AGENT_HOOK_WEBHOOK_RESPONSE_HANDLING: 'toolCall' });
    expect(hooks.map((h) => [h.type, h.webhook.responseHandling])).toEqual([['afterToolCall', 'toolCall']]);
  });

  it.each(['toolResult', 'toolCallAndResult'])('R7: the removed mode %s is rejected, telling to use toolCall', (mode) => {
    const e = configError({ ...base, AGENT_HOOK_WEBHOOK_EVENTS: 'beforeToolCall', AGENT_HOOK_WEBHOOK_RESPONSE_HANDLING: mode });
    expect(e.message).toContain('AGENT_HOOK_WEBHOOK_RESPONSE_HANDLING');
    expect(e.message).toContain("'toolCall'");
  });

  it.each([
    ['a URL without token', { AGENT_HOOK_WEBHOOK_URL: URL_, AGENT_HOOK_WEBHOOK_EVENTS: 'onComplete' }, 'AGENT_HOOK_WEBHOOK_TOKEN'],
    ['a blank token', { ...base, AGENT_HOOK_WEBHOOK_TOKEN: '   ' }, 'AGENT_HOOK_WEBHOOK_TOKEN'],
    ['a URL without events', { AGENT_HOOK_WEBHOOK_URL: URL_, AGENT_HOOK_WEBHOOK_TOKEN: TOKEN }, 'AGENT_HOOK_WEBHOOK_EVENTS'],
    ['events of only commas', { ...base, AGENT_HOOK_WEBHOOK_EVENTS: ' , ,' }, 'AGENT_HOOK_WEBHOOK_EVENTS'],
    ['"..." as events', { ...base, AGENT_HOOK_WEBHOOK_EVENTS: '...' }, 'AGENT_HOOK_WEBHOOK_EVENTS'],
    ['an unknown event', { ...base, AGENT_HOOK_WEBHOOK_EVENTS: 'onComplete,onSecretThing' }, 'AGENT_HOOK_WEBHOOK_EVENTS'],
    ['an ftp URL', { ...base, AGENT_HOOK_WEBHOOK_URL: 'ftp://files.example.com/x' }, 'AGENT_HOOK_WEBHOOK_URL'],
    ['a relative URL', { ...base, AGENT_HOOK_WEBHOOK_URL: '/hooks' }, 'AGENT_HOOK_WEBHOOK_URL'],
    ['a URL with credentials', { ...base, AGENT_HOOK_WEBHOOK_URL: 'https://user:pw1234@example.com/' }, 'AGENT_HOOK_WEBHOOK_URL'],
    ['a bad response mode', { ...base, AGENT_HOOK_WEBHOOK_RESPONSE_HANDLING: 'always' }, 'AGENT_HOOK_WEBHOOK_RESPONSE_HANDLING'],
    ['a bad onError', { ...base, AGENT_HOOK_WEBHOOK_ON_ERROR: 'explode' }, 'AGENT_HOOK_WEBHOOK_ON_ERROR'],
    ['block without toolCall', { ...base, AGENT_HOOK_WEBHOOK_ON_ERROR: 'block' }, 'AGENT_HOOK_WEBHOOK_ON_ERROR'],
    ['toolCall without a before/afterToolCall event', { ...base, AGENT_HOOK_WEBHOOK_RESPONSE_HANDLING: 'toolCall' }, 'AGENT_HOOK_WEBHOOK_EVENTS'],
  ])('E2: %s is invalid; the error names the variables, never their values', (_label, env, variable) => {
    expect(configError(env).message).toContain(variable);
  });
});

describe('HookDispatcher with environment hooks (E4, L5)', () => {
  const dispatchers: HookDispatcher[] = [];
  afterEach(async () => {
    await Promise.all(dispatchers.splice(0).map((d) => d.close()));
  });

  it('E4: environment hooks are never in getSerializedHooks; queue mode hands them over last', async () => {
    const producer = recordingProducer();
    const d = new HookDispatcher({ mode: 'queue', producer, env: { ...base }, logger: quietLogger() });
    dispatchers.push(d);
    d.register('op', [{ id: 'caller', type: 'onComplete', webhook: { url: 'https://caller.example.com/' } }]);
    expect(d.getSerializedHooks('op')!.map((h) => h.id)).toEqual(['caller']);
    await d.dispatch('op', 'onComplete', { operationId: 'op' });
    expect(producer.calls[0]!.hooks.map((h) => h.id)).toEqual(['caller', 'server-env-webhook:onComplete']);
    expect(JSON.stringify(producer.calls)).not.toContain(TOKEN);
  });

  it('E4: restored hooks with reserved ids are dropped in favour of the current environment hooks', async () => {
    const producer = recordingProducer();
    const d = new HookDispatcher({ mode: 'queue', producer, env: { ...base }, logger: quietLogger() });
    dispatchers.push(d);
    await d.dispatch('op', 'onComplete', { operationId: 'op' }, [
      { id: 'server-env-webhook:onComplete', type: 'onComplete', webhook: { url: 'https://stale.example.com/' } },
    ]);
    expect(producer.calls[0]!.hooks).toEqual([
      expect.objectContaining({ id: 'server-env-webhook:onComplete', webhook: expect.objectContaining({ url: URL_ }) }),
    ]);
  });

  it('E4: rebuilt from the current environment at each dispatch (URL switch, removal)', async () => {
    const env: Record<string, string | undefined> = { ...base };
    const producer = recordingProducer();
    const d = new HookDispatcher({ mode: 'queue', producer, env, logger: quietLogger() });
    dispatchers.push(d);
    await d.dispatch('op', 'onComplete', { operationId: 'op' }, []);
    env.AGENT_HOOK_WEBHOOK_URL = 'https://policy-2.example.com/hook';
    await d.dispatch('op', 'onComplete', { operationId: 'op' }, []);
    delete env.AGENT_HOOK_WEBHOOK_URL;
    await d.dispatch('op', 'onComplete', { operationId: 'op' }, []);
    expect(producer.calls.map((c) => c.hooks.map((h) => h.webhook.url))).toEqual([[URL_], ['https://policy-2.example.com/hook']]);
  });

  it('E2: an invalid environment makes register throw, naming the variables (not values); nothing is registered', () => {
    const d = new HookDispatcher({ env: { AGENT_HOOK_WEBHOOK_URL: URL_, AGENT_HOOK_WEBHOOK_EVENTS: 'onComplete' }, logger: quietLogger() });
    dispatchers.push(d);
    const error = thrown(() => d.register('op', [{ id: 'a', type: 'onComplete', handler: () => undefined }])) as Error;
    expect(error).toBeInstanceOf(EnvHookConfigError);
    expect(error.message).toContain('AGENT_HOOK_WEBHOOK_TOKEN');
    expect(error.message).not.toContain(URL_);
    expect(d.getSerializedHooks('op')).toBeUndefined();
  });

  it('L5: an invalid environment makes dispatch throw after the caller hooks of that dispatch ran', async () => {
    const env: Record<string, string | undefined> = { ...base };
    const d = new HookDispatcher({ env, logger: quietLogger() });
    dispatchers.push(d);
    const ran: string[] = [];
    d.register('op', [
      { id: 'a', type: 'onComplete', handler: () => void ran.push('a') },
      { id: 'b', type: 'onComplete', handler: () => void ran.push('b') },
    ]);
    env.AGENT_HOOK_WEBHOOK_EVENTS = 'onComplete,notAType';
    const error = (await rejection(d.dispatch('op', 'onComplete', { operationId: 'op' }))) as Error;
    expect(error).toBeInstanceOf(EnvHookConfigError);
    expect(error.message).toContain('AGENT_HOOK_WEBHOOK_EVENTS');
    expect(error.message).not.toContain('notAType');
    expect(ran).toEqual(['a', 'b']);
  });

  it('L5: an invalid environment makes evaluate* fail closed with hook_control_error', async () => {
    const env: Record<string, string | undefined> = {};
    const d = new HookDispatcher({ env, logger: quietLogger() });
    dispatchers.push(d);
    d.register('op', []);
    Object.assign(env, {
      AGENT_HOOK_WEBHOOK_URL: URL_,
      AGENT_HOOK_WEBHOOK_TOKEN: TOKEN,
      AGENT_HOOK_WEBHOOK_EVENTS: 'beforeToolCall',
      AGENT_HOOK_WEBHOOK_ON_ERROR: 'block',
    });
    const ctx = {
      toolCallId: 't',
      assistantMessageId: 'm',
      identifier: 'x',
      apiName: 'y',
      args: {},
      callIndex: 0,
      stepIndex: 0,
      operationId: 'op',
      executor: 'server' as const,
    };
    expect(await d.evaluateToolCall('op', ctx)).toMatchObject({
      status: 'blocked',
      reason: 'hook_control_error',
      result: { content: 'hook_control_error', error: 'hook_denied' },
    });
    expect(await d.evaluateAfterToolCall('op', ctx, { content: 'x', success: true })).toMatchObject({
      status: 'blocked',
      reason: 'hook_control_error',
      result: { state: { phase: 'afterToolCall' } },
    });
  });
});
