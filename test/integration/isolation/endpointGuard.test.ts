/**
 * endpoints: decision webhooks and the workers' endpoint breakers (docs/delivery.md, Endpoint isolation).
 * A control whose endpoint breaker is open — opened by the workers' attempts or by the decisions
 * themselves — fails at once with `circuit_open` and goes to its onError: block blocks, continue
 * lets later controls decide; never an allow of its own, never a request to the dead receiver.
 * Real Redis, a real receiver on 127.0.0.1.
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { HookDispatcher, type AgentHook } from '../../../src/entry/index.ts';
import { createEndpointGate } from '../../../src/isolation/endpointGate.ts';
import { createEndpointGuard, type ClosableEndpointGuard } from '../../../src/isolation/endpointGuard.ts';
import { endpointKeyPrefix } from '../../../src/isolation/endpointIsolation.ts';
import { createTestStore, type TestStore } from '../../support/db.ts';
import { startReceiver, type Receiver } from '../../support/receiver.ts';
import { deleteKeys, TEST_REDIS_URL } from '../../support/redisKeys.ts';
import { captureLogger, toolContext } from '../../unit/dispatch/helpers.ts';
import { disableEndpoint } from '../../../src/store/endpointsRepo.ts';
import { waitFor } from '../queue/harness.ts';

let receiver: Receiver;
let status = 500;
let redis: Redis;
let db: TestStore;
const queueName = `guard-${randomUUID().slice(0, 8)}`;
const env = { HOOKRELAY_QUEUE: queueName, HOOKRELAY_BREAKER_FAILURES: '3', HOOKRELAY_BREAKER_COOLDOWN_MS: '60000' };
let guard: ClosableEndpointGuard;
let d: HookDispatcher;

beforeAll(async () => {
  receiver = await startReceiver((req) => {
    if (req.path === '/allow') return { status: 200, body: '{"decision":"allow"}' };
    return { status, body: '{"decision":"allow"}' };
  });
  redis = new Redis(TEST_REDIS_URL);
  db = await createTestStore('guard');
});
afterEach(async () => {
  await d?.close();
  await guard?.close();
  await deleteKeys(`bull:${queueName}:ep*`, redis);
  receiver.requests.length = 0;
});
afterAll(async () => {
  await receiver.close();
  redis.disconnect();
  await db.cleanup();
});

let logs = captureLogger();

function dispatcher(path: string, onError: 'block' | 'continue', store = false): { op: string; key: string } {
  guard = createEndpointGuard({ redis, env, refreshMs: 50, ...(store ? { store: db.store } : {}) });
  logs = captureLogger();
  d = new HookDispatcher({ env: {}, allowedCidrs: '127.0.0.1/32', logger: logs.logger, endpointGuard: guard });
  const op = `op-${randomUUID().slice(0, 8)}`;
  const hooks: AgentHook[] = [
    { id: 'guarded', type: 'beforeToolCall', webhook: { url: `${receiver.url}${path}`, responseHandling: 'toolCall', onError } },
    { id: 'later', type: 'beforeToolCall', webhook: { url: `${receiver.url}/allow`, responseHandling: 'toolCall' } },
  ];
  d.register(op, hooks);
  return { op, key: `${receiver.url}${path}` };
}

const hits = (path: string) => receiver.requests.filter((r) => r.path === path).length;
const BLOCKED = { status: 'blocked', reason: 'hook_control_error' };

describe('endpoints: decision webhooks see the shared breaker', () => {
  it('endpoints: a breaker the workers opened → immediate control error → onError block blocks; nothing is sent to the endpoint', async () => {
    const { op, key } = dispatcher('/dead', 'block');
    const gate = createEndpointGate(redis, { keyPrefix: endpointKeyPrefix('bull', queueName), policy: { failureThreshold: 3, cooldownMs: 60_000 } });
    // What three failed worker attempts do.
    for (let i = 0; i < 3; i += 1) {
      const token = `w-${i}`;
      expect((await gate.admit({ key, token, leaseMs: 5_000, cap: 0, rate: 0 })).admitted).toBe(true);
      await gate.release(key, token, 'fail');
    }
    expect(guard.isOpen(key)).toBe(false); // first answer for an endpoint never asked about: closed
    await guard.refresh();
    expect(guard.isOpen(key)).toBe(true);
    const outcome = await d.evaluateToolCall(op, toolContext({ operationId: op }));
    expect(outcome).toMatchObject(BLOCKED);
    expect(hits('/dead')).toBe(0);
    expect(hits('/allow')).toBe(0);
  });

  it("endpoints: with onError 'continue' an open breaker is not an allow: the next control still decides", async () => {
    const { op, key } = dispatcher('/dead2', 'continue');
    const gate = createEndpointGate(redis, { keyPrefix: endpointKeyPrefix('bull', queueName), policy: { failureThreshold: 1, cooldownMs: 60_000 } });
    await gate.admit({ key, token: 't', leaseMs: 5_000, cap: 0, rate: 0 });
    await gate.release(key, 't', 'fail');
    guard.isOpen(key);
    await guard.refresh();
    expect(await d.evaluateToolCall(op, toolContext({ operationId: op }))).toEqual({ status: 'allow' });
    expect(hits('/dead2')).toBe(0);
    expect(hits('/allow')).toBe(1);
  });

  it("issue 25: an open breaker with onError 'continue' logs one warning per opening (\"allowed without asking\"); none for onError 'block'", async () => {
    const { op, key } = dispatcher('/warned', 'continue');
    const gate = createEndpointGate(redis, { keyPrefix: endpointKeyPrefix('bull', queueName), policy: { failureThreshold: 1, cooldownMs: 60_000 } });
    const open = async () => {
      await gate.admit({ key, token: 't', leaseMs: 5_000, cap: 0, rate: 0 });
      await gate.release(key, 't', 'fail');
      guard.isOpen(key);
      await guard.refresh();
      expect(guard.isOpen(key)).toBe(true);
    };
    const warnings = () =>
      logs.lines
        .map((l) => JSON.parse(l) as { level: number; msg: string; hookId?: string })
        .filter((l) => l.level === 40 && /allowed without asking/.test(l.msg));
    await open();
    for (let i = 0; i < 3; i += 1) expect(await d.evaluateToolCall(op, toolContext({ operationId: op }))).toEqual({ status: 'allow' });
    expect(warnings()).toHaveLength(1);
    expect(warnings()[0]).toMatchObject({ hookId: 'guarded' });
    // Closed (an operator's reset), then open again: a new opening, one more warning.
    await gate.reset(key);
    await guard.refresh();
    expect(guard.isOpen(key)).toBe(false);
    await open();
    for (let i = 0; i < 2; i += 1) await d.evaluateToolCall(op, toolContext({ operationId: op }));
    expect(warnings()).toHaveLength(2);
    expect(hits('/warned')).toBe(0);
  });

  it('endpoints: failing decisions alone open the breaker (3 consecutive 500s); the 4th decision is not sent', async () => {
    status = 500;
    const { op, key } = dispatcher('/flaky', 'block');
    for (let i = 0; i < 3; i += 1) expect(await d.evaluateToolCall(op, toolContext({ operationId: op }))).toMatchObject(BLOCKED);
    expect(hits('/flaky')).toBe(3);
    await waitFor(
      async () => {
        await guard.refresh();
        return guard.isOpen(key);
      },
      5_000,
      'the decision failures open the breaker',
    );
    expect(await d.evaluateToolCall(op, toolContext({ operationId: op }))).toMatchObject(BLOCKED);
    expect(hits('/flaky')).toBe(3);
  });

  it('endpoints: a disabled endpoint (guard given the store) fails its controls at once', async () => {
    status = 200;
    const { op, key } = dispatcher('/disabled', 'block', true);
    await disableEndpoint(db.store.db, key, 'operator', 'test');
    guard.isOpen(key);
    await guard.refresh();
    expect(await d.evaluateToolCall(op, toolContext({ operationId: op }))).toMatchObject(BLOCKED);
    expect(hits('/disabled')).toBe(0);
  });

  it('endpoints: a healthy endpoint is unaffected and its successes keep the breaker closed', async () => {
    status = 200;
    const { op, key } = dispatcher('/healthy', 'block');
    for (let i = 0; i < 5; i += 1) expect(await d.evaluateToolCall(op, toolContext({ operationId: op }))).toEqual({ status: 'allow' });
    await guard.refresh();
    expect(guard.isOpen(key)).toBe(false);
    expect(hits('/healthy')).toBe(5);
  });
});
