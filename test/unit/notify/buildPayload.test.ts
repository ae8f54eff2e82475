import { describe, expect, it, vi } from 'vitest';
import { HOOK_TYPES, WebhookConfigSchema, type HookType, type WebhookConfigInput } from '../../../src/contract/index.ts';
import { createWebhookPayloadBuilder, type BuildPayloadInput } from '../../../src/notify/buildPayload.ts';

function hook(type: HookType, webhook: Omit<WebhookConfigInput, 'url'> = {}, id = 'hook-1'): BuildPayloadInput['hook'] {
  return { id, type, webhook: WebhookConfigSchema.parse({ url: 'https://receiver.example/hook', ...webhook }) };
}

const baseEvent = () => ({ operationId: 'op-1', stepIndex: 2, userId: 'u-event', agentId: 'agent-1' });

function emailLookup() {
  return vi.fn(async (id: string) => `${id}@example.test`);
}

function deferred<T>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((res) => {
    resolve = res;
  });
  return { promise, resolve };
}

function skillAfterToolCallEvent() {
  return {
    operationId: 'op-1',
    toolCallId: 'call-1',
    mocked: false,
    result: {
      content: 'done',
      success: true,
      workRegistration: { type: 'skill', args: { prompt: 'raw' }, data: { raw: 'big' } },
    },
  };
}

describe('B1: projection, hook fields, body merge', () => {
  it('B1: without eventFields every event key is sent, plus hookId and hookType', async () => {
    const builder = createWebhookPayloadBuilder();
    const payload = await builder.build({ hook: hook('onComplete'), event: { ...baseEvent(), reason: 'done' } });
    expect(payload).toStrictEqual({ ...baseEvent(), reason: 'done', hookId: 'hook-1', hookType: 'onComplete' });
  });

  it('B1: eventFields keeps exactly the listed keys the event has (absent ones are not invented)', async () => {
    const builder = createWebhookPayloadBuilder();
    const event = { ...baseEvent(), reason: 'done', explicitUndefined: undefined };
    const payload = await builder.build({
      hook: hook('onComplete', { eventFields: ['operationId', 'reason', 'missing', 'explicitUndefined'] }),
      event,
    });
    expect(payload).toStrictEqual({ operationId: 'op-1', reason: 'done', explicitUndefined: undefined, hookId: 'hook-1', hookType: 'onComplete' });
    expect(Object.keys(payload ?? {}).sort()).toEqual(['explicitUndefined', 'hookId', 'hookType', 'operationId', 'reason']);
  });

  it('B1: eventFields does not pick up inherited keys', async () => {
    const event = Object.assign(Object.create({ inherited: 'proto' }) as Record<string, unknown>, { operationId: 'op-1' });
    const payload = await createWebhookPayloadBuilder().build({ hook: hook('beforeStep', { eventFields: ['operationId', 'inherited'] }), event });
    expect(payload).toStrictEqual({ operationId: 'op-1', hookId: 'hook-1', hookType: 'beforeStep' });
  });

  it('B1: body is merged and wins over an event field on a clash', async () => {
    const payload = await createWebhookPayloadBuilder().build({
      hook: hook('onComplete', { body: { reason: 'from-body', channel: 'ops' } }),
      event: { ...baseEvent(), reason: 'done' },
    });
    expect(payload).toMatchObject({ reason: 'from-body', channel: 'ops', operationId: 'op-1' });
  });

  it('B1: body wins over hookId and hookType on a clash', async () => {
    const payload = await createWebhookPayloadBuilder().build({
      hook: hook('onComplete', { body: { hookId: 'custom-id', hookType: 'custom-type' } }),
      event: baseEvent(),
    });
    expect(payload?.hookId).toBe('custom-id');
    expect(payload?.hookType).toBe('custom-type');
  });

  it('B1: hookId/hookType win over event keys of the same name', async () => {
    const payload = await createWebhookPayloadBuilder().build({ hook: hook('beforeStep'), event: { ...baseEvent(), hookId: 'spoofed', hookType: 'x' } });
    expect(payload).toMatchObject({ hookId: 'hook-1', hookType: 'beforeStep' });
  });

  it('B1: body fields are added even when eventFields selects nothing from the event', async () => {
    const payload = await createWebhookPayloadBuilder().build({
      hook: hook('beforeStep', { eventFields: [], body: { team: 'a' } }),
      event: baseEvent(),
    });
    expect(payload).toStrictEqual({ hookId: 'hook-1', hookType: 'beforeStep', team: 'a' });
  });

  it('Q1: extra (deliveryId, occurredAt) comes after hookId/hookType and before body', async () => {
    const extra = { deliveryId: 'dlv_01J00000000000000000000000', occurredAt: '2026-01-01T00:00:00.000Z' };
    const builder = createWebhookPayloadBuilder();
    const payload = await builder.build({ hook: hook('beforeStep', { eventFields: ['operationId'] }), event: baseEvent(), extra });
    expect(payload).toStrictEqual({ operationId: 'op-1', hookId: 'hook-1', hookType: 'beforeStep', ...extra });
    const overridden = await builder.build({ hook: hook('beforeStep', { body: { occurredAt: 'body' } }), event: baseEvent(), extra });
    expect(overridden?.occurredAt).toBe('body');
    expect(overridden?.deliveryId).toBe(extra.deliveryId);
  });

  it('B1: the event and the webhook body are not mutated', async () => {
    const event = { ...baseEvent(), finalState: { s: 1 }, userEmail: 'x@y' };
    const webhookHook = hook('onComplete', { body: { userEmail: 'body@spoof', team: 'a' } });
    const eventCopy = structuredClone(event);
    const bodyCopy = structuredClone(webhookHook.webhook.body);
    await createWebhookPayloadBuilder({ emailLookup: emailLookup() }).build({ hook: webhookHook, event });
    expect(event).toStrictEqual(eventCopy);
    expect(webhookHook.webhook.body).toStrictEqual(bodyCopy);
  });
});

describe('B4a: stripped keys', () => {
  it('B4a: finalState, mock and a caller-supplied userEmail never reach the webhook', async () => {
    const payload = await createWebhookPayloadBuilder().build({
      hook: hook('beforeToolCall'),
      event: { ...baseEvent(), finalState: { messages: [] }, mock: () => true, userEmail: 'spoofed@evil.test' },
    });
    expect(payload).not.toHaveProperty('finalState');
    expect(payload).not.toHaveProperty('mock');
    expect(payload).not.toHaveProperty('userEmail');
    expect(payload).toMatchObject({ operationId: 'op-1' });
  });

  it('B4a: they are stripped even when projected or set in the body', async () => {
    const payload = await createWebhookPayloadBuilder().build({
      hook: hook('onComplete', { eventFields: ['operationId', 'finalState', 'mock'], body: { finalState: 1, mock: 2, userEmail: 'body@spoof' } }),
      event: { ...baseEvent(), finalState: { s: 1 }, mock: () => true },
    });
    expect(payload).toStrictEqual({ operationId: 'op-1', hookId: 'hook-1', hookType: 'onComplete' });
  });

  it('B3: a supplied userEmail is replaced by the looked-up one', async () => {
    const payload = await createWebhookPayloadBuilder({ emailLookup: emailLookup() }).build({
      hook: hook('onComplete'),
      event: { ...baseEvent(), userEmail: 'spoofed@evil.test' },
    });
    expect(payload?.userEmail).toBe('u-event@example.test');
  });
});

describe('B2: tool result redaction', () => {
  it('B2: an afterToolCall notification gets the redacted result; the event is not mutated', async () => {
    const event = skillAfterToolCallEvent();
    const before = structuredClone(event);
    const payload = await createWebhookPayloadBuilder().build({ hook: hook('afterToolCall'), event });
    expect(payload?.result).toStrictEqual({ content: 'done', success: true, workRegistration: { type: 'skill', data: null } });
    expect(event).toStrictEqual(before);
  });

  it('B2: redaction also applies with a projection', async () => {
    const payload = await createWebhookPayloadBuilder().build({
      hook: hook('afterToolCall', { eventFields: ['result'] }),
      event: skillAfterToolCallEvent(),
    });
    expect(payload).toStrictEqual({
      result: { content: 'done', success: true, workRegistration: { type: 'skill', data: null } },
      hookId: 'hook-1',
      hookType: 'afterToolCall',
    });
  });

  it('B2: a control receives the full result', async () => {
    const event = skillAfterToolCallEvent();
    const payload = await createWebhookPayloadBuilder().build({
      hook: hook('afterToolCall', { responseHandling: 'toolCall' }),
      event,
      control: true,
    });
    expect(payload?.result).toStrictEqual(event.result);
  });

  it('B2: task work is kept in notifications', async () => {
    const result = { content: 'ok', success: true, workRegistration: { type: 'task', args: { a: 1 }, data: { id: 't' } } };
    const payload = await createWebhookPayloadBuilder().build({ hook: hook('afterToolCall'), event: { operationId: 'op-1', result } });
    expect(payload?.result).toStrictEqual(result);
  });

  it('B2: only afterToolCall results are redacted', async () => {
    const event = skillAfterToolCallEvent();
    const payload = await createWebhookPayloadBuilder().build({ hook: hook('afterStep'), event });
    expect(payload?.result).toStrictEqual(event.result);
  });

  it('T4: a blocked, mocked result keeps content, success, executionTime and state', async () => {
    const result = { content: 'Blocked', success: false, error: 'hook_denied', executionTime: 0, state: { type: 'blocked', reason: 'Blocked' } };
    const payload = await createWebhookPayloadBuilder().build({
      hook: hook('afterToolCall', { eventFields: ['result', 'mocked', 'identifier', 'apiName', 'toolSource'] }),
      event: { operationId: 'op-1', identifier: 'mcp-fs', apiName: 'read', toolSource: 'mcp', mocked: true, result },
    });
    expect(payload).toStrictEqual({
      result,
      mocked: true,
      identifier: 'mcp-fs',
      apiName: 'read',
      toolSource: 'mcp',
      hookId: 'hook-1',
      hookType: 'afterToolCall',
    });
  });
});

describe('B3: email enrichment', () => {
  it.each(HOOK_TYPES)('B3: %s payloads carry the userEmail', async (type) => {
    const lookup = emailLookup();
    const payload = await createWebhookPayloadBuilder({ emailLookup: lookup }).build({ hook: hook(type), event: baseEvent() });
    expect(payload?.userEmail).toBe('u-event@example.test');
    expect(payload?.userId).toBe('u-event');
    expect(lookup).toHaveBeenCalledWith('u-event');
  });

  it('B3: the body identity wins: its userId is sent and its email looked up', async () => {
    const lookup = emailLookup();
    const payload = await createWebhookPayloadBuilder({ emailLookup: lookup }).build({
      hook: hook('onComplete', { body: { userId: 'u-body' } }),
      event: baseEvent(),
    });
    expect(payload).toMatchObject({ userId: 'u-body', userEmail: 'u-body@example.test' });
    expect(lookup).toHaveBeenCalledTimes(1);
    expect(lookup).toHaveBeenCalledWith('u-body');
  });

  it.each([null, '', 42])('B4a: an invalid body userId (%j) means no look-up and no fallback to the event id', async (invalid) => {
    const lookup = emailLookup();
    const payload = await createWebhookPayloadBuilder({ emailLookup: lookup }).build({
      hook: hook('onComplete', { body: { userId: invalid } }),
      event: baseEvent(),
    });
    expect(lookup).not.toHaveBeenCalled();
    expect(payload).not.toHaveProperty('userEmail');
    expect(payload?.userId).toBe(invalid);
  });

  it.each([undefined, null, '', 7])('B3: an invalid event userId (%j) means no look-up', async (invalid) => {
    const lookup = emailLookup();
    const payload = await createWebhookPayloadBuilder({ emailLookup: lookup }).build({
      hook: hook('onComplete'),
      event: { operationId: 'op-1', userId: invalid },
    });
    expect(lookup).not.toHaveBeenCalled();
    expect(payload).not.toHaveProperty('userEmail');
  });

  it.each([
    ['undefined', async () => undefined],
    ['null', async () => null],
    [
      'a throwing lookup',
      async (): Promise<string> => {
        throw new Error('db down');
      },
    ],
  ])('B3: %s → the email is omitted and the payload is still built', async (_label, lookup) => {
    const payload = await createWebhookPayloadBuilder({ emailLookup: lookup }).build({ hook: hook('onComplete'), event: baseEvent() });
    expect(payload).toStrictEqual({ ...baseEvent(), hookId: 'hook-1', hookType: 'onComplete' });
  });

  it('B4a: a projection that excludes userEmail makes no look-up', async () => {
    const lookup = emailLookup();
    const payload = await createWebhookPayloadBuilder({ emailLookup: lookup }).build({
      hook: hook('onComplete', { eventFields: ['operationId', 'userId'] }),
      event: baseEvent(),
    });
    expect(lookup).not.toHaveBeenCalled();
    expect(payload).toStrictEqual({ operationId: 'op-1', userId: 'u-event', hookId: 'hook-1', hookType: 'onComplete' });
  });

  it("B3: an ['userEmail'] projection sends the email (from the event's id) without userId", async () => {
    const lookup = emailLookup();
    const payload = await createWebhookPayloadBuilder({ emailLookup: lookup }).build({
      hook: hook('onComplete', { eventFields: ['userEmail'] }),
      event: { ...baseEvent(), userEmail: 'spoofed@evil.test' },
    });
    expect(payload).toStrictEqual({ hookId: 'hook-1', hookType: 'onComplete', userEmail: 'u-event@example.test' });
    expect(lookup).toHaveBeenCalledWith('u-event');
  });

  it('B3: a projection with userId and userEmail sends both', async () => {
    const payload = await createWebhookPayloadBuilder({ emailLookup: emailLookup() }).build({
      hook: hook('onComplete', { eventFields: ['userId', 'userEmail'] }),
      event: baseEvent(),
    });
    expect(payload).toStrictEqual({ userId: 'u-event', hookId: 'hook-1', hookType: 'onComplete', userEmail: 'u-event@example.test' });
  });

  it('B3: without an emailLookup no userEmail is added', async () => {
    const payload = await createWebhookPayloadBuilder().build({ hook: hook('onComplete'), event: baseEvent() });
    expect(payload).not.toHaveProperty('userEmail');
  });

  it('B3: concurrent builds for different users keep their identities distinct', async () => {
    const builder = createWebhookPayloadBuilder({ emailLookup: emailLookup() });
    const [a, b] = await Promise.all([
      builder.build({ hook: hook('onComplete'), event: { operationId: 'op-a', userId: 'alice' } }),
      builder.build({ hook: hook('onComplete'), event: { operationId: 'op-b', userId: 'bob' } }),
    ]);
    expect(a).toMatchObject({ userId: 'alice', userEmail: 'alice@example.test' });
    expect(b).toMatchObject({ userId: 'bob', userEmail: 'bob@example.test' });
  });
});

describe('B4: one email cache per builder', () => {
  it('B4: builds of one builder share look-ups (10 concurrent → 1 query)', async () => {
    const pending = deferred<string>();
    const lookup = vi.fn(() => pending.promise);
    const builder = createWebhookPayloadBuilder({ emailLookup: lookup });
    const builds = Array.from({ length: 10 }, (_, i) => builder.build({ hook: hook('afterStep', {}, `h${i}`), event: baseEvent() }));
    await Promise.resolve();
    pending.resolve('shared@example.test');
    const payloads = await Promise.all(builds);
    expect(lookup).toHaveBeenCalledTimes(1);
    expect(payloads.map((p) => p?.userEmail)).toEqual(Array(10).fill('shared@example.test'));
  });

  it('B4: misses are cached across builds', async () => {
    const lookup = vi.fn(async () => null);
    const builder = createWebhookPayloadBuilder({ emailLookup: lookup });
    await builder.build({ hook: hook('onComplete'), event: baseEvent() });
    await builder.build({ hook: hook('onError'), event: baseEvent() });
    expect(lookup).toHaveBeenCalledTimes(1);
  });

  it('B4: the cache refreshes after 5 minutes on the injected clock', async () => {
    let clock = 0;
    const lookup = emailLookup();
    const builder = createWebhookPayloadBuilder({ emailLookup: lookup, now: () => clock });
    await builder.build({ hook: hook('onComplete'), event: baseEvent() });
    clock = 299_999;
    await builder.build({ hook: hook('onComplete'), event: baseEvent() });
    expect(lookup).toHaveBeenCalledTimes(1);
    clock = 300_000;
    await builder.build({ hook: hook('onComplete'), event: baseEvent() });
    expect(lookup).toHaveBeenCalledTimes(2);
  });

  it('B4: two builders (two dispatchers) do not share a cache', async () => {
    const lookup = emailLookup();
    await createWebhookPayloadBuilder({ emailLookup: lookup }).build({ hook: hook('onComplete'), event: baseEvent() });
    await createWebhookPayloadBuilder({ emailLookup: lookup }).build({ hook: hook('onComplete'), event: baseEvent() });
    expect(lookup).toHaveBeenCalledTimes(2);
  });
});

describe('B5: cancellation', () => {
  it('B5: an already-aborted signal returns undefined and makes no query', async () => {
    const lookup = emailLookup();
    const controller = new AbortController();
    controller.abort();
    const payload = await createWebhookPayloadBuilder({ emailLookup: lookup }).build({
      hook: hook('onComplete'),
      event: baseEvent(),
      signal: controller.signal,
    });
    expect(payload).toBeUndefined();
    expect(lookup).not.toHaveBeenCalled();
  });

  it('B5: an already-aborted signal returns undefined even when no email is needed', async () => {
    const controller = new AbortController();
    controller.abort();
    const payload = await createWebhookPayloadBuilder().build({
      hook: hook('beforeStep', { eventFields: ['operationId'] }),
      event: baseEvent(),
      signal: controller.signal,
    });
    expect(payload).toBeUndefined();
  });

  it('B5: a build cancelled during the look-up returns undefined; a concurrent build still gets the email; 1 query', async () => {
    const pending = deferred<string>();
    const lookup = vi.fn(() => pending.promise);
    const builder = createWebhookPayloadBuilder({ emailLookup: lookup });
    const controller = new AbortController();
    const cancelled = builder.build({ hook: hook('onComplete', {}, 'a'), event: baseEvent(), signal: controller.signal });
    const other = builder.build({ hook: hook('onComplete', {}, 'b'), event: baseEvent(), signal: new AbortController().signal });
    await Promise.resolve();
    controller.abort();
    expect(await cancelled).toBeUndefined();
    pending.resolve('u-event@example.test');
    expect(await other).toMatchObject({ hookId: 'b', userEmail: 'u-event@example.test' });
    expect(lookup).toHaveBeenCalledTimes(1);
  });
});

describe('B6: one payload for every transport', () => {
  it('B6: the built payload is plain JSON and the same on every build of the same input', async () => {
    const builder = createWebhookPayloadBuilder({ emailLookup: emailLookup() });
    const input: BuildPayloadInput = {
      hook: hook('afterToolCall', { delivery: 'qstash', body: { team: 'a' } }),
      event: { ...skillAfterToolCallEvent(), userId: 'u-event', mock: () => true },
      extra: { deliveryId: 'dlv_01J00000000000000000000000', occurredAt: '2026-01-01T00:00:00.000Z' },
    };
    const first = await builder.build(input);
    const second = await builder.build({ ...input, hook: hook('afterToolCall', { delivery: 'fetch', body: { team: 'a' } }) });
    expect(first).toStrictEqual(second);
    expect(JSON.parse(JSON.stringify(first))).toStrictEqual(first);
  });
});
