/**
 * Local-mode webhook delivery through HookDispatcher over real sockets: D3, D5, D6, W2/W3,
 * environment hooks (E1–E4, L5), secrets, and the SSRF guard at dispatcher level (Q5).
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { CriticalHookDeliveryError, HookConfigError, HookDispatcher, type AgentHook } from '../../../src/entry/index.ts';
import { userAgent } from '../../../src/send/userAgent.ts';
import { WebhookDeliveryFailure } from '../../../src/contract/errors.ts';
import { startReceiver, type Behaviour, type Receiver } from '../../support/receiver.ts';
import { captureLogger, quietLogger, rejection, toolContext } from '../../unit/dispatch/helpers.ts';

const OP = 'op_notify';
const ALLOW = '127.0.0.1/32';
let receiver: Receiver;
let routes: Record<string, Behaviour>;
const dispatchers: HookDispatcher[] = [];

beforeEach(async () => {
  routes = {};
  receiver = await startReceiver((req) => routes[req.path.split('?')[0]!] ?? { status: 200, body: 'ok' });
});
afterEach(async () => {
  await Promise.all(dispatchers.splice(0).map((d) => d.close()));
  await receiver.close();
  vi.unstubAllEnvs();
});

function make(options: ConstructorParameters<typeof HookDispatcher>[0] = {}): HookDispatcher {
  const d = new HookDispatcher({ env: {}, allowedCidrs: ALLOW, logger: quietLogger(), ...options });
  dispatchers.push(d);
  return d;
}
const at = (path: string) => `${receiver.url}${path}`;
const paths = () => receiver.requests.map((r) => r.path);
const count = (path: string) => receiver.requests.filter((r) => r.path === path).length;

describe('D3/W3: webhook delivery in local mode', () => {
  it('D3: a webhook-only hook is delivered in local mode: one POST of the JSON payload with webhook-id', async () => {
    const d = make();
    d.register(OP, [{ id: 'wh', type: 'onComplete', webhook: { url: at('/done'), body: { app: 'demo' } } }]);
    await d.dispatch(OP, 'onComplete', { operationId: OP, reason: 'done', userId: 'u1', finalState: { big: true } });
    expect(paths()).toEqual(['/done']);
    const req = receiver.requests[0]!;
    expect(req.method).toBe('POST');
    expect(req.headers['content-type']).toBe('application/json');
    expect(req.headers['webhook-id']).toMatch(/^dlv_[0-9A-HJKMNP-TV-Z]{26}$/);
    const body = JSON.parse(req.body) as Record<string, unknown>;
    expect(body).toMatchObject({
      operationId: OP,
      reason: 'done',
      userId: 'u1',
      hookId: 'wh',
      hookType: 'onComplete',
      app: 'demo',
      deliveryId: req.headers['webhook-id'],
    });
    expect(body).not.toHaveProperty('finalState');
  });

  it('D3/D8: a dual hook runs its handler locally and its webhook is not sent', async () => {
    const d = make();
    let handled = 0;
    d.register(OP, [
      { id: 'dual', type: 'afterToolCall', handler: () => void handled++, webhook: { url: at('/dual') } },
      { id: 'wh', type: 'afterToolCall', webhook: { url: at('/wh') } },
    ]);
    await d.dispatch(OP, 'afterToolCall', { ...toolContext({ operationId: OP }), result: { content: 'x', success: true }, mocked: false });
    expect(handled).toBe(1);
    expect(paths()).toEqual(['/wh']);
  });

  it('D1: webhooks and handlers interleave in registration order, each awaited', async () => {
    const d = make();
    const order: string[] = [];
    routes['/slow'] = { status: 200, delayMs: 80 };
    d.register(OP, [
      { id: 'slow', type: 'afterStep', webhook: { url: at('/slow') } },
      { id: 'fn', type: 'afterStep', handler: () => void order.push(`fn after ${receiver.requests.length} request(s)`) },
      { id: 'fast', type: 'afterStep', webhook: { url: at('/fast') } },
    ]);
    await d.dispatch(OP, 'afterStep', { operationId: OP, stepIndex: 0 });
    expect(order).toEqual(['fn after 1 request(s)']);
    expect(paths()).toEqual(['/slow', '/fast']);
  });

  it('D9b: dispatch(beforeToolCall / afterToolCall) delivers those notification webhooks; controls are not asked', async () => {
    const d = make();
    d.register(OP, [
      { id: 'ctl', type: 'beforeToolCall', webhook: { url: at('/ctl'), responseHandling: 'toolCall' } },
      { id: 'note-before', type: 'beforeToolCall', webhook: { url: at('/note-before') } },
      { id: 'ctl-after', type: 'afterToolCall', webhook: { url: at('/ctl-after'), responseHandling: 'toolCall' } },
      { id: 'note-after', type: 'afterToolCall', webhook: { url: at('/note-after') } },
    ]);
    await d.dispatch(OP, 'beforeToolCall', toolContext({ operationId: OP }));
    await d.dispatch(OP, 'afterToolCall', { ...toolContext({ operationId: OP }), result: { content: 'x', success: true } });
    expect(paths()).toEqual(['/note-before', '/note-after']);
  });

  it('M3: dispatchBeforeToolCall delivers no webhooks in local mode', async () => {
    const d = make();
    d.register(OP, [{ id: 'note', type: 'beforeToolCall', webhook: { url: at('/note') } }]);
    expect(await d.dispatchBeforeToolCall(OP, toolContext({ operationId: OP }))).toBeNull();
    expect(receiver.requests).toHaveLength(0);
  });

  it('B2: afterToolCall notifications get the redacted result; the caller object is not mutated', async () => {
    const d = make();
    d.register(OP, [{ id: 'note', type: 'afterToolCall', webhook: { url: at('/note') } }]);
    const result = { content: 'c', success: true, workRegistration: { type: 'skill', args: { secret: 1 }, data: { x: 1 } } };
    await d.dispatch(OP, 'afterToolCall', { ...toolContext({ operationId: OP }), result });
    const sent = JSON.parse(receiver.requests[0]!.body) as { result: { workRegistration: Record<string, unknown> } };
    expect(sent.result.workRegistration).not.toHaveProperty('args');
    expect(sent.result.workRegistration.data).toBeNull();
    expect(result.workRegistration.args).toEqual({ secret: 1 });
  });

  it.each<[string, Behaviour]>([
    ['204', { status: 204 }],
    ['a deny body', { status: 200, body: '{"decision":"deny"}' }],
    ['invalid UTF-8', { status: 200, body: new Uint8Array([0xff, 0xfe]) }],
    ['a large body', { status: 200, bodyBytes: 2 * 1024 * 1024 }],
  ])('W3: a notification answered with %s succeeds; the body is not interpreted (even with fallback none)', async (_l, behaviour) => {
    routes['/n'] = behaviour;
    const d = make();
    d.register(OP, [{ id: 'n', type: 'onComplete', webhook: { url: at('/n'), fallback: 'none' } }]);
    await expect(d.dispatch(OP, 'onComplete', { operationId: OP })).resolves.toEqual({ notAccepted: [] });
  });
});

describe('D5/D6: failures, siblings and CriticalHookDeliveryError', () => {
  it('D5: a failing webhook or throwing handler does not stop its siblings; failures are logged', async () => {
    routes['/bad'] = { status: 500 };
    routes['/reset'] = { reset: true };
    const { logger, text } = captureLogger();
    const d = make({ logger });
    const ran: string[] = [];
    d.register(OP, [
      { id: 'bad', type: 'onError', webhook: { url: at('/bad') } },
      {
        id: 'throws',
        type: 'onError',
        handler: () => {
          throw new Error('boom');
        },
      },
      { id: 'reset', type: 'onError', webhook: { url: at('/reset') } },
      { id: 'fn', type: 'onError', handler: () => void ran.push('fn') },
      { id: 'good', type: 'onError', webhook: { url: at('/good') } },
    ]);
    await expect(d.dispatch(OP, 'onError', { operationId: OP, errorMessage: 'x' })).resolves.toEqual({ notAccepted: [] });
    expect(ran).toEqual(['fn']);
    expect(paths()).toEqual(['/bad', '/reset', '/good']);
    expect(text()).toContain('"hookId":"bad"');
    expect(text()).toContain('"hookId":"reset"');
  });

  it('D5: an event that cannot be serialized fails that webhook only; siblings still run', async () => {
    const d = make();
    const ran: string[] = [];
    d.register(OP, [
      { id: 'wh', type: 'afterStep', webhook: { url: at('/wh') } },
      { id: 'fn', type: 'afterStep', handler: () => void ran.push('fn') },
    ]);
    await expect(d.dispatch(OP, 'afterStep', { operationId: OP, usage: 10n })).resolves.toEqual({ notAccepted: [] });
    expect(ran).toEqual(['fn']);
    d.register('op_crit', [{ id: 'crit', type: 'afterStep', webhook: { url: at('/wh'), fallback: 'none' } }]);
    const error = (await rejection(d.dispatch('op_crit', 'afterStep', { operationId: 'op_crit', usage: 10n }))) as CriticalHookDeliveryError;
    expect(error).toBeInstanceOf(CriticalHookDeliveryError);
    expect(receiver.requests).toHaveLength(0);
  });

  it('D6: critical failures are collected and thrown after every sibling of the tier ran (caller then env hooks); names the first, lists all', async () => {
    routes['/crit-500'] = { status: 500, body: 'remote secret text' };
    routes['/crit-reset'] = { reset: true };
    const { logger, text } = captureLogger();
    const env = { AGENT_HOOK_WEBHOOK_URL: at('/env'), AGENT_HOOK_WEBHOOK_TOKEN: 'env-token-value', AGENT_HOOK_WEBHOOK_EVENTS: 'onComplete' };
    const d = make({ logger, env });
    const ran: string[] = [];
    d.register(OP, [
      { id: 'crit-500', type: 'onComplete', webhook: { url: at('/crit-500'), fallback: 'none' } },
      {
        id: 'handler-throws',
        type: 'onComplete',
        handler: () => {
          throw new Error('never critical');
        },
      },
      { id: 'ok', type: 'onComplete', webhook: { url: at('/ok') } },
      { id: 'crit-reset', type: 'onComplete', webhook: { url: at('/crit-reset'), fallback: 'none' } },
      { id: 'plain-fail', type: 'onComplete', webhook: { url: at('/crit-500') } },
      { id: 'after', type: 'onComplete', handler: () => void ran.push('after') },
    ]);
    const error = (await rejection(d.dispatch(OP, 'onComplete', { operationId: OP, reason: 'done' }))) as CriticalHookDeliveryError;
    expect(error).toBeInstanceOf(CriticalHookDeliveryError);
    expect(error.name).toBe('CriticalHookDeliveryError');
    expect(error.hookId).toBe('crit-500');
    expect(error.message).toContain('crit-500');
    expect(error.cause).toBeInstanceOf(WebhookDeliveryFailure);
    expect(error.cause).toMatchObject({ errorClass: 'http_error', httpStatus: 500 });
    expect(error.failures.map((f) => f.hookId)).toEqual(['crit-500', 'crit-reset']);
    expect(error.failures[1]!.cause).toMatchObject({ errorClass: 'network_error' });
    // every sibling ran, the environment tier included, before the throw
    expect(ran).toEqual(['after']);
    expect(paths()).toEqual(['/crit-500', '/ok', '/crit-reset', '/crit-500', '/env']);
    // D6: one attempt per webhook in local mode (no retries)
    expect(count('/crit-reset')).toBe(1);
    // no remote text in the error or the logs; the log carries the ids
    expect(`${error.message} ${String(error.cause)} ${JSON.stringify(error.failures)}`).not.toContain('remote secret text');
    expect(text()).not.toContain('remote secret text');
    expect(text()).toContain('"hookIds":["crit-500","crit-reset"]');
    expect(text()).toContain(`"operationId":"${OP}"`);
  });

  it('D6: one attempt per webhook in local mode, critical or not (503 and timeout)', async () => {
    routes['/503'] = { status: 503, headers: { 'retry-after': '0' } };
    routes['/slow'] = { status: 200, delayMs: 500 };
    const d = make();
    d.register(OP, [
      { id: 'a', type: 'onComplete', webhook: { url: at('/503'), fallback: 'none' } },
      { id: 'b', type: 'onComplete', webhook: { url: at('/503') } },
      { id: 'c', type: 'onComplete', webhook: { url: at('/slow'), timeout: 0.1, fallback: 'none' } },
    ]);
    const error = (await rejection(d.dispatch(OP, 'onComplete', { operationId: OP }))) as CriticalHookDeliveryError;
    expect(error.failures.map((f) => [f.hookId, (f.cause as WebhookDeliveryFailure).errorClass])).toEqual([
      ['a', 'http_error'],
      ['c', 'timeout'],
    ]);
    await new Promise((r) => setTimeout(r, 100));
    expect(count('/503')).toBe(2);
    expect(count('/slow')).toBe(1);
  });

  it('W3/W4: a notification body is not read: one trickling past the timeout does not hold the dispatch (2xx = success)', async () => {
    routes['/trickle'] = { status: 200, trickle: { chunk: 'x', intervalMs: 50, count: 20 } };
    const d = make();
    d.register(OP, [{ id: 't', type: 'onComplete', webhook: { url: at('/trickle'), timeout: 0.2, fallback: 'none' } }]);
    const started = performance.now();
    await expect(d.dispatch(OP, 'onComplete', { operationId: OP })).resolves.toEqual({ notAccepted: [] });
    expect(performance.now() - started).toBeLessThan(500);
  });

  it('W4: a notification whose headers arrive after the timeout is a timeout (one deadline for the attempt)', async () => {
    routes['/late'] = { status: 200, delayMs: 600 };
    const d = make();
    d.register(OP, [{ id: 'late', type: 'onComplete', webhook: { url: at('/late'), timeout: 0.2, fallback: 'none' } }]);
    const started = performance.now();
    const error = (await rejection(d.dispatch(OP, 'onComplete', { operationId: OP }))) as CriticalHookDeliveryError;
    expect(error.cause).toMatchObject({ errorClass: 'timeout' });
    expect(performance.now() - started).toBeLessThan(550);
  });

  it('W1b: content-type: application/json is always sent (a caller value is replaced); forbidden names are rejected at registration', async () => {
    const d = make();
    d.register(OP, [{ id: 'ct', type: 'onComplete', webhook: { url: at('/ct'), headers: { 'Content-Type': 'text/plain', 'X-Trace': 'abc' } } }]);
    await d.dispatch(OP, 'onComplete', { operationId: OP });
    expect(receiver.requests[0]!.headers['content-type']).toBe('application/json');
    expect(receiver.requests[0]!.headers['x-trace']).toBe('abc');
    for (const name of [
      'host',
      'Content-Length',
      'connection',
      'transfer-encoding',
      'trailer',
      'upgrade',
      'proxy-authorization',
      'sec-fetch-mode',
      'upstash-forward-x',
    ]) {
      expect(() => d.register(OP, [{ id: `bad-${name}`, type: 'onComplete', webhook: { url: at('/x'), headers: { [name]: 'v' } } }])).toThrow(/headers/);
    }
  });

  it('W1b: a value with CR/LF after template expansion is a configuration error: nothing is sent', async () => {
    const d = make({ env: { INJECT: 'a\r\nx-evil: 1' }, templateEnv: 'INJECT' });
    d.register(OP, [
      { id: 'inj', type: 'onComplete', webhook: { url: at('/inj'), headers: { 'x-v': '${INJECT}' }, allowedEnvVars: ['INJECT'], fallback: 'none' } },
    ]);
    const error = (await rejection(d.dispatch(OP, 'onComplete', { operationId: OP }))) as CriticalHookDeliveryError;
    expect(error.cause).toMatchObject({ errorClass: 'configuration' });
    expect(receiver.requests).toHaveLength(0);
  });

  it('W3: a redirect is a failure and is not followed', async () => {
    routes['/moved'] = { status: 302, headers: { location: '/target' } };
    const d = make();
    d.register(OP, [{ id: 'm', type: 'onComplete', webhook: { url: at('/moved'), fallback: 'none' } }]);
    const error = (await rejection(d.dispatch(OP, 'onComplete', { operationId: OP }))) as CriticalHookDeliveryError;
    expect(error.cause).toMatchObject({ errorClass: 'http_error', httpStatus: 302 });
    expect(count('/target')).toBe(0);
  });

  it('W2: an allow-listed variable unset at send time is a configuration error: nothing is sent', async () => {
    const d = make({ templateEnv: 'MISSING_TOKEN' });
    d.register(OP, [
      {
        id: 'tpl',
        type: 'onComplete',
        webhook: { url: at('/tpl'), headers: { authorization: 'Bearer ${MISSING_TOKEN}' }, allowedEnvVars: ['MISSING_TOKEN'], fallback: 'none' },
      },
    ]);
    const error = (await rejection(d.dispatch(OP, 'onComplete', { operationId: OP }))) as CriticalHookDeliveryError;
    expect(error.cause).toMatchObject({ errorClass: 'configuration' });
    expect(receiver.requests).toHaveLength(0);
  });

  it('W1: a relative URL resolves against appUrl (trusted); none configured → configuration error', async () => {
    const d = make({ appUrl: `${receiver.url}/app`, allowedCidrs: '' });
    d.register(OP, [{ id: 'rel', type: 'onComplete', webhook: { url: '/hooks/done', fallback: 'none' } }]);
    await d.dispatch(OP, 'onComplete', { operationId: OP });
    expect(paths()).toEqual(['/app/hooks/done']);
    const bare = make();
    bare.register(OP, [{ id: 'rel', type: 'onComplete', webhook: { url: '/hooks/done', fallback: 'none' } }]);
    const error = (await rejection(bare.dispatch(OP, 'onComplete', { operationId: OP }))) as CriticalHookDeliveryError;
    expect(error.cause).toMatchObject({ errorClass: 'configuration' });
  });
});

describe('Q5: the SSRF guard at dispatcher level', () => {
  it('Q5: a webhook to 127.0.0.1 without allowedCidrs is refused (the receiver sees nothing)', async () => {
    const d = make({ allowedCidrs: '' });
    d.register(OP, [
      { id: 'plain', type: 'onComplete', webhook: { url: at('/x') } },
      { id: 'crit', type: 'onComplete', webhook: { url: at('/y'), fallback: 'none' } },
      { id: 'ctl', type: 'beforeToolCall', webhook: { url: at('/ctl'), responseHandling: 'toolCall', onError: 'block' } },
    ]);
    const error = (await rejection(d.dispatch(OP, 'onComplete', { operationId: OP }))) as CriticalHookDeliveryError;
    expect(error.cause).toMatchObject({ errorClass: 'ssrf_blocked' });
    expect(await d.evaluateToolCall(OP, toolContext({ operationId: OP }))).toMatchObject({ status: 'blocked', reason: 'hook_control_error' });
    expect(receiver.requests).toHaveLength(0);
  });

  it('Q5: a localhost name resolving to loopback is refused too (the connected address is checked)', async () => {
    const d = make({ allowedCidrs: '' });
    d.register(OP, [{ id: 'crit', type: 'onComplete', webhook: { url: `http://localhost:${receiver.port}/x`, fallback: 'none' } }]);
    const error = (await rejection(d.dispatch(OP, 'onComplete', { operationId: OP }))) as CriticalHookDeliveryError;
    expect(error.cause).toMatchObject({ errorClass: 'ssrf_blocked' });
    expect(receiver.requests).toHaveLength(0);
  });

  it('Q5: reachable when allow-listed', async () => {
    const d = make({ allowedCidrs: ALLOW });
    d.register(OP, [{ id: 'plain', type: 'onComplete', webhook: { url: at('/x'), fallback: 'none' } }]);
    await d.dispatch(OP, 'onComplete', { operationId: OP });
    expect(paths()).toEqual(['/x']);
  });

  it('Q5: new HookDispatcher() reads HOOKRELAY_ALLOWED_CIDRS from process.env at construction', async () => {
    vi.stubEnv('HOOKRELAY_ALLOWED_CIDRS', ALLOW);
    vi.stubEnv('AGENT_HOOK_WEBHOOK_URL', '');
    vi.stubEnv('LOG_LEVEL', 'silent');
    const d = new HookDispatcher();
    dispatchers.push(d);
    vi.stubEnv('HOOKRELAY_ALLOWED_CIDRS', ''); // read at construction, not per request
    d.register(OP, [{ id: 'plain', type: 'onComplete', webhook: { url: at('/x'), fallback: 'none' } }]);
    await d.dispatch(OP, 'onComplete', { operationId: OP });
    expect(paths()).toEqual(['/x']);
    expect(d.mode).toBe('local');
  });

  it('Q5: environment hooks are operator-trusted targets (not SSRF-guarded)', async () => {
    const env = { AGENT_HOOK_WEBHOOK_URL: at('/env'), AGENT_HOOK_WEBHOOK_TOKEN: 't0k3n-value', AGENT_HOOK_WEBHOOK_EVENTS: 'onComplete' };
    const d = make({ env, allowedCidrs: '' });
    await d.dispatch(OP, 'onComplete', { operationId: OP });
    expect(paths()).toEqual(['/env']);
  });
});

describe('E1–E4: environment hooks over a real socket', () => {
  const envFor = (extra: Record<string, string> = {}): Record<string, string | undefined> => ({
    AGENT_HOOK_WEBHOOK_URL: at('/env'),
    AGENT_HOOK_WEBHOOK_TOKEN: 'token-one-AAAA',
    AGENT_HOOK_WEBHOOK_EVENTS: 'onComplete,beforeToolCall,afterToolCall',
    ...extra,
  });

  it('E4: environment hooks are appended last, with the bearer token resolved at send time', async () => {
    const d = make({ env: envFor() });
    d.register(OP, [{ id: 'caller', type: 'onComplete', webhook: { url: at('/caller') } }]);
    await d.dispatch(OP, 'onComplete', { operationId: OP });
    expect(paths()).toEqual(['/caller', '/env']);
    const envReq = receiver.requests[1]!;
    expect(envReq.headers.authorization).toBe('Bearer token-one-AAAA');
    expect(JSON.parse(envReq.body)).toMatchObject({ hookId: 'server-env-webhook:onComplete', hookType: 'onComplete' });
    expect(d.getSerializedHooks(OP)!.map((h) => h.id)).toEqual(['caller']);
  });

  it('E4/W2: read fresh at each dispatch: token rotation, URL switch and removal apply at once', async () => {
    const env = envFor();
    const d = make({ env });
    await d.dispatch(OP, 'onComplete', { operationId: OP });
    env.AGENT_HOOK_WEBHOOK_TOKEN = 'token-two-BBBB';
    await d.dispatch(OP, 'onComplete', { operationId: OP });
    env.AGENT_HOOK_WEBHOOK_URL = at('/env-2');
    await d.dispatch(OP, 'onComplete', { operationId: OP });
    delete env.AGENT_HOOK_WEBHOOK_URL;
    await d.dispatch(OP, 'onComplete', { operationId: OP });
    expect(receiver.requests.map((r) => [r.path, r.headers.authorization])).toEqual([
      ['/env', 'Bearer token-one-AAAA'],
      ['/env', 'Bearer token-two-BBBB'],
      ['/env-2', 'Bearer token-two-BBBB'],
    ]);
  });

  it('W2: a caller template rotates too (resolved from the current env at send time)', async () => {
    const env: Record<string, string | undefined> = { CALLER_TOKEN: 'caller-1' };
    const d = make({ env, templateEnv: 'CALLER_TOKEN' });
    d.register(OP, [{ id: 'c', type: 'onComplete', webhook: { url: at('/c'), headers: { 'x-token': '${CALLER_TOKEN}' }, allowedEnvVars: ['CALLER_TOKEN'] } }]);
    await d.dispatch(OP, 'onComplete', { operationId: OP });
    env.CALLER_TOKEN = 'caller-2';
    await d.dispatch(OP, 'onComplete', { operationId: OP });
    expect(receiver.requests.map((r) => r.headers['x-token'])).toEqual(['caller-1', 'caller-2']);
  });

  it('E3/L3: an env control runs after the caller controls, once, and can deny', async () => {
    routes['/env'] = { status: 200, body: '{"decision":"deny","reason":"operator policy"}' };
    routes['/caller-ctl'] = { status: 200, body: '{"decision":"allow"}' };
    const d = make({ env: envFor({ AGENT_HOOK_WEBHOOK_RESPONSE_HANDLING: 'toolCall' }) });
    d.register(OP, [{ id: 'caller-ctl', type: 'beforeToolCall', webhook: { url: at('/caller-ctl'), responseHandling: 'toolCall' } }]);
    expect(await d.evaluateToolCall(OP, toolContext({ operationId: OP }))).toMatchObject({ status: 'blocked', reason: 'operator policy' });
    expect(paths()).toEqual(['/caller-ctl', '/env']);
    expect(receiver.requests[1]!.headers.authorization).toBe('Bearer token-one-AAAA');
  });

  it('E3: with the default mode env hooks on tool events are notifications (never asked by evaluate*)', async () => {
    routes['/env'] = { status: 200, body: '{"decision":"deny"}' };
    const d = make({ env: envFor() });
    expect(await d.evaluateToolCall(OP, toolContext({ operationId: OP }))).toEqual({ status: 'allow' });
    expect(receiver.requests).toHaveLength(0);
    await d.dispatch(OP, 'beforeToolCall', toolContext({ operationId: OP }));
    expect(paths()).toEqual(['/env']);
  });

  it('E4/L4: removing the env control stops it from then on', async () => {
    routes['/env'] = { status: 200, body: '{"decision":"deny"}' };
    const env = envFor({ AGENT_HOOK_WEBHOOK_RESPONSE_HANDLING: 'toolCall' });
    const d = make({ env });
    expect(await d.evaluateToolCall(OP, toolContext({ operationId: OP }))).toMatchObject({ status: 'blocked' });
    delete env.AGENT_HOOK_WEBHOOK_URL;
    expect(await d.evaluateToolCall(OP, toolContext({ operationId: OP }))).toEqual({ status: 'allow' });
  });

  it('M1/E3: mocks work alongside env controls (env webhooks are never handlers)', async () => {
    const d = make({ env: envFor({ AGENT_HOOK_WEBHOOK_RESPONSE_HANDLING: 'toolCall' }) });
    d.register(OP, [{ id: 'm', type: 'beforeToolCall', handler: (e) => void (e.mock as (r: unknown) => boolean)({ content: 'mocked', success: true }) }]);
    expect(await d.dispatchBeforeToolCall(OP, toolContext({ operationId: OP }))).toEqual({ isMocked: true, result: { content: 'mocked', success: true } });
    expect(receiver.requests).toHaveLength(0);
  });

  it('L5: an invalid env makes dispatch throw after the caller webhooks of that dispatch were delivered', async () => {
    const env = envFor();
    const d = make({ env });
    d.register(OP, [{ id: 'caller', type: 'onComplete', webhook: { url: at('/caller') } }]);
    env.AGENT_HOOK_WEBHOOK_TOKEN = '';
    const error = (await rejection(d.dispatch(OP, 'onComplete', { operationId: OP }))) as Error;
    expect(error.message).toContain('AGENT_HOOK_WEBHOOK_TOKEN');
    expect(paths()).toEqual(['/caller']);
  });

  it('DOOR-5 (D6): a critical failure and an invalid env in one dispatch → CriticalHookDeliveryError reaches the caller, carrying the env error', async () => {
    const env = envFor();
    const d = make({ env });
    routes['/critical'] = { status: 500 };
    d.register(OP, [{ id: 'critical', type: 'onComplete', webhook: { url: at('/critical'), fallback: 'none' } }]);
    env.AGENT_HOOK_WEBHOOK_TOKEN = '';
    const error = await rejection(d.dispatch(OP, 'onComplete', { operationId: OP }));
    expect(error).toBeInstanceOf(CriticalHookDeliveryError);
    const critical = error as CriticalHookDeliveryError;
    expect(critical.hookId).toBe('critical');
    expect(critical.otherErrors).toHaveLength(1);
    expect((critical.otherErrors[0] as Error).name).toBe('EnvHookConfigError');
    expect((critical.otherErrors[0] as Error).message).toContain('AGENT_HOOK_WEBHOOK_TOKEN');
    expect(critical.message).toContain('EnvHookConfigError');
    expect(paths()).toEqual(['/critical']);
  });

  it('L5: an invalid env makes evaluate* fail closed (blocked, hook_control_error) without asking caller allows to decide', async () => {
    routes['/caller-ctl'] = { status: 200, body: '{"decision":"allow"}' };
    const env = envFor({ AGENT_HOOK_WEBHOOK_RESPONSE_HANDLING: 'toolCall' });
    const d = make({ env });
    d.register(OP, [{ id: 'caller-ctl', type: 'afterToolCall', webhook: { url: at('/caller-ctl'), responseHandling: 'toolCall' } }]);
    env.AGENT_HOOK_WEBHOOK_RESPONSE_HANDLING = 'toolResult';
    expect(await d.evaluateAfterToolCall(OP, toolContext({ operationId: OP }), { content: 'x', success: true })).toMatchObject({
      status: 'blocked',
      reason: 'hook_control_error',
      result: { content: 'hook_control_error', error: 'hook_denied', state: { phase: 'afterToolCall' } },
    });
  });
});

describe('W2: secrets never leak', () => {
  it('W2: the resolved token reaches the receiver and appears nowhere in serialized hooks, logs (debug) or errors', async () => {
    const SECRET = 'sk_live_SUPERSECRET_42';
    const ENV_SECRET = 'env_SECRET_token_77';
    routes['/fail'] = { status: 500, body: `echo ${SECRET}` };
    routes['/ctl'] = { status: 500, body: SECRET };
    const { logger, text } = captureLogger();
    const env = {
      MY_TOKEN: SECRET,
      AGENT_HOOK_WEBHOOK_URL: at('/env?key=query-secret'),
      AGENT_HOOK_WEBHOOK_TOKEN: ENV_SECRET,
      AGENT_HOOK_WEBHOOK_EVENTS: 'onComplete',
    };
    const d = make({ env, logger, templateEnv: 'MY_TOKEN' });
    const auth = { headers: { authorization: 'Bearer ${MY_TOKEN}' }, allowedEnvVars: ['MY_TOKEN'] };
    d.register(OP, [
      { id: 'ok', type: 'onComplete', webhook: { url: at('/ok'), ...auth } },
      { id: 'fail', type: 'onComplete', webhook: { url: at('/fail?token=query-secret'), ...auth, fallback: 'none' } },
      { id: 'ctl', type: 'beforeToolCall', webhook: { url: at('/ctl'), ...auth, responseHandling: 'toolCall', onError: 'block' } },
    ] as AgentHook[]);
    const error = (await rejection(d.dispatch(OP, 'onComplete', { operationId: OP }))) as CriticalHookDeliveryError;
    expect(await d.evaluateToolCall(OP, toolContext({ operationId: OP }))).toMatchObject({ status: 'blocked', reason: 'hook_control_error' });

    expect(receiver.requests.find((r) => r.path === '/ok')!.headers.authorization).toBe(`Bearer ${SECRET}`);
    expect(receiver.requests.find((r) => r.path.startsWith('/env'))!.headers.authorization).toBe(`Bearer ${ENV_SECRET}`);
    const serialized = JSON.stringify(d.getSerializedHooks(OP));
    expect(serialized).toContain('${MY_TOKEN}');
    const haystacks = [serialized, text(), error.message, String(error.cause), JSON.stringify(error.failures), error.stack ?? ''];
    for (const hay of haystacks) {
      expect(hay).not.toContain(SECRET);
      expect(hay).not.toContain(ENV_SECRET);
    }
    // the URL (query included) is the caller's own config and is serialized as written; logs and errors never echo a query string
    for (const hay of haystacks.slice(1)) expect(hay).not.toContain('query-secret');
    expect(text().length).toBeGreaterThan(0);
  });
});

describe('D10: an event too deep to serialize, local mode', () => {
  it('D10: a webhook whose payload nests 10,000 deep fails as invalid_event (no raw RangeError); siblings and handlers still run; nothing sent for it', async () => {
    const log = captureLogger();
    const d = make({ logger: log.logger });
    let deep: unknown = 'leaf';
    for (let i = 0; i < 10_000; i += 1) deep = { a: deep };
    let handled = 0;
    d.register(OP, [
      { id: 'deep', type: 'onComplete', webhook: { url: at('/deep') } },
      { id: 'critical', type: 'onComplete', webhook: { url: at('/critical'), fallback: 'none' } },
      { id: 'projected', type: 'onComplete', webhook: { url: at('/projected'), eventFields: ['operationId', 'reason'] } },
      { id: 'handler', type: 'onComplete', handler: () => void handled++ },
    ]);
    const error = await rejection(d.dispatch(OP, 'onComplete', { operationId: OP, reason: 'done', nested: deep }));
    expect(error).toBeInstanceOf(CriticalHookDeliveryError);
    expect((error as CriticalHookDeliveryError).hookId).toBe('critical');
    expect(((error as CriticalHookDeliveryError).cause as WebhookDeliveryFailure).errorClass).toBe('invalid_event');
    // Only the hook whose payload leaves the deep field out is sent.
    expect(paths()).toEqual(['/projected']);
    expect(handled).toBe(1);
    const failures = log.lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.hookId === 'deep' || l.hookId === 'critical');
    expect(failures.map((l) => [l.hookId, l.errorClass, l.err])).toEqual([
      ['deep', 'invalid_event', 'EventValidationError'],
      ['critical', 'invalid_event', 'EventValidationError'],
    ]);
  });
});

describe('W1b: hookrelay owns webhook-* and the user agent', () => {
  it('W1b: a caller cannot set webhook-signature (or any webhook-*): refused at register, so no spoofed signature reaches a receiver', async () => {
    const d = make();
    for (const name of ['webhook-signature', 'Webhook-Id', 'webhook-timestamp']) {
      expect(() => d.register(OP, [{ id: 'spoof', type: 'onComplete', webhook: { url: at('/spoof'), headers: { [name]: 'v1,spoof' } } }])).toThrow(/forbidden/);
    }
    await d
      .dispatch(OP, 'onComplete', { operationId: OP }, [
        { id: 'spoof', type: 'onComplete', webhook: { url: at('/spoof'), headers: { 'webhook-signature': 'v1,spoof' } } },
      ])
      .catch(() => undefined);
    expect(receiver.requests).toHaveLength(0);
  });

  it("W1b: hookrelay's user agent is always sent; a caller's user-agent is dropped", async () => {
    const d = make();
    d.register(OP, [{ id: 'ua', type: 'onComplete', webhook: { url: at('/ua'), headers: { 'User-Agent': 'spoofed/9.9', 'x-tenant': 't1' } } }]);
    await d.dispatch(OP, 'onComplete', { operationId: OP });
    expect(paths()).toEqual(['/ua']);
    expect(receiver.requests[0]!.headers['user-agent']).toBe(userAgent());
    expect(receiver.requests[0]!.headers['x-tenant']).toBe('t1');
    expect(receiver.requests[0]!.headers['webhook-signature']).toBeUndefined(); // no secret configured, none sent
  });

  it('W1b: te, keep-alive, expect and a value with \\x01 / U+2028 / € are refused at register, not at send time', () => {
    const d = make();
    const bad: Record<string, string>[] = [
      { te: 'trailers' },
      { 'keep-alive': 'timeout=5' },
      { expect: '100-continue' },
      { 'x-a': 'a\x01b' },
      { 'x-a': 'a\u2028b' },
      { 'x-a': '€5' },
      { 'x-a': 'a\x7f' },
    ];
    for (const headers of bad) {
      expect(() => d.register(OP, [{ id: 'h', type: 'onComplete', webhook: { url: at('/h'), headers } }])).toThrow(HookConfigError);
    }
    expect(d.getSerializedHooks(OP)).toBeUndefined();
  });
});
