/**
 * SEC-T1 (SEC-H6): an endpoint key is named by the hook's own URL. Caller B labels its hooks with
 * caller A's URL (`webhook.endpoint`), sends them to its own receiver answering 500, through a real
 * worker on the real Redis and Postgres: A's breaker, limit and rate state stay untouched, A's
 * deliveries all arrive, and A's decision control behind createEndpointGuard is still asked.
 * (Before, B's failures opened A's breaker: A's deliveries got no request and its policy was skipped.)
 */
import { sql } from 'drizzle-orm';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { endpointKey } from '../../../src/contract/endpoint.ts';
import { HookDispatcher, type AgentHook } from '../../../src/entry/index.ts';
import { createEndpointGate, type EndpointGate } from '../../../src/isolation/endpointGate.ts';
import { createEndpointGuard, type ClosableEndpointGuard } from '../../../src/isolation/endpointGuard.ts';
import { endpointKeyPrefix } from '../../../src/isolation/endpointIsolation.ts';
import { rowsOf } from '../../../src/store/db.ts';
import { listDeliveries } from '../../../src/store/deliveriesRepo.ts';
import { startReceiver, type Receiver } from '../../support/receiver.ts';
import { TEST_REDIS_URL } from '../../support/redisKeys.ts';
import { captureLogger, toolContext } from '../../unit/dispatch/helpers.ts';
import { createStack, waitFor, type Stack } from '../queue/harness.ts';

const BREAKER = { HOOKRELAY_BREAKER_FAILURES: '3', HOOKRELAY_BREAKER_COOLDOWN_MS: '60000' };

let stack: Stack;
let a: Receiver;
let b: Receiver;
let redis: Redis;
let gate: EndpointGate;

beforeAll(async () => {
  stack = await createStack('sect1');
  a = await startReceiver((req) => (req.path === '/policy' ? { status: 200, body: '{"decision":"deny","reason":"A says no"}' } : { status: 200 }));
  b = await startReceiver({ status: 500 });
  redis = new Redis(TEST_REDIS_URL);
  gate = createEndpointGate(redis, { keyPrefix: endpointKeyPrefix(stack.prefix, stack.queueName), policy: { failureThreshold: 3, cooldownMs: 60_000 } });
  await stack.startWorker(BREAKER);
});

afterAll(async () => {
  await stack?.cleanup();
  await a?.close();
  await b?.close();
  redis?.disconnect();
});

/** B's hooks: its own receiver, labelled with a key of A's. */
const bHooks = (endpoint: string) => [{ id: 'b-complete', type: 'onComplete' as const, webhook: { url: `${b.url}/b`, endpoint, rateLimit: 0.5 } }];

async function sendBFailures(op: string, endpoint: string): Promise<void> {
  for (let i = 0; i < 6; i += 1) await stack.producer.enqueue({ operationId: op, type: 'onComplete', event: { i }, hooks: bHooks(endpoint) });
  // B's own breaker opens after 3 failed attempts: the worker did see B's 500s.
  const bKey = endpointKey({ url: `${b.url}/b`, endpoint });
  await waitFor(async () => (await gate.snapshot(bKey))?.state === 'open', 20_000, "B's own breaker to open");
}

function expectUntouched(snapshot: Awaited<ReturnType<EndpointGate['snapshot']>>): void {
  // Never seen, or seen only through A's own successes.
  if (snapshot === undefined) return;
  expect(snapshot.state).toBe('closed');
  expect(snapshot.consecutiveFailures).toBe(0);
  expect(snapshot.windowFailures).toBe(0);
  expect(snapshot.lastFailureAt).toBeNull();
}

describe('SEC-T1 endpoint key of another origin: a hook can only ever slow or fail itself (SEC-H6)', () => {
  it("SEC-T1: B's 500s labelled with A's URL leave A's breaker, limit and rate untouched; A's 5 deliveries all arrive", async () => {
    const aUrl = `${a.url}/a`;
    const aKey = endpointKey({ url: aUrl });
    await sendBFailures('sect1-b-op', aUrl);
    expect(b.requests.length).toBeGreaterThanOrEqual(3);
    expectUntouched(await gate.snapshot(aKey));

    for (let i = 0; i < 5; i += 1) {
      await stack.producer.enqueue({
        operationId: 'sect1-a-op',
        type: 'onComplete',
        event: { i },
        hooks: [{ id: 'a-complete', type: 'onComplete', webhook: { url: aUrl } }],
      });
    }
    await waitFor(
      async () => (await listDeliveries(stack.db.store.db, { operationId: 'sect1-a-op', status: 'delivered' })).length === 5,
      20_000,
      "A's 5 deliveries",
    );
    expect(a.requests.filter((r) => r.path === '/a')).toHaveLength(5);
    const after = await gate.snapshot(aKey);
    expectUntouched(after);
    // B's deliveries are keyed under B's own origin and never under A's.
    const bKeys = rowsOf<{ endpoint_key: string; n: number }>(
      await stack.db.store.db.execute(sql`select endpoint_key, count(*)::int as n from deliveries where operation_id = 'sect1-b-op' group by endpoint_key`),
    );
    expect(bKeys).toEqual([{ endpoint_key: `${b.url}#${aUrl}`, n: 6 }]);
  });

  it("SEC-T1: B's 500s labelled with A's policy URL leave A's decision control alone: A's policy is asked and its deny holds", async () => {
    const policyUrl = `${a.url}/policy`;
    await sendBFailures('sect1-b-policy', policyUrl);
    expectUntouched(await gate.snapshot(endpointKey({ url: policyUrl })));

    const guard: ClosableEndpointGuard = createEndpointGuard({ redis, queueName: stack.queueName, queuePrefix: stack.prefix, env: BREAKER, refreshMs: 50 });
    const d = new HookDispatcher({ env: {}, allowedCidrs: '127.0.0.1/32', logger: captureLogger().logger, endpointGuard: guard });
    try {
      const hooks: AgentHook[] = [{ id: 'a-policy', type: 'beforeToolCall', webhook: { url: policyUrl, responseHandling: 'toolCall', onError: 'continue' } }];
      d.register('sect1-a-tools', hooks);
      guard.isOpen(endpointKey({ url: policyUrl })); // asked about once, so the refresh reads it
      await guard.refresh();
      const before = a.requests.filter((r) => r.path === '/policy').length;
      const outcome = await d.evaluateToolCall('sect1-a-tools', toolContext({ operationId: 'sect1-a-tools' }));
      expect(outcome).toMatchObject({ status: 'blocked', reason: 'A says no' });
      expect(a.requests.filter((r) => r.path === '/policy').length).toBe(before + 1);
    } finally {
      await d.close();
      await guard.close();
    }
  });

  it('SEC-T1: a label scopes under its own origin: two hooks of one origin may share one breaker, another origin never joins it', async () => {
    const shared = endpointKey({ url: `${b.url}/one`, endpoint: 'shared' });
    expect(endpointKey({ url: `${b.url}/two?x=1`, endpoint: 'shared' })).toBe(shared);
    expect(endpointKey({ url: `${a.url}/one`, endpoint: 'shared' })).not.toBe(shared);
    expect(shared).toBe(`${b.url}#shared`);
  });
});
