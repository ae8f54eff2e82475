/**
 * TEN (issue 46, N1–N4): tenants are a boundary. Tenant A of a multi-tenant server app
 * may name any URL in its own hooks, so it names tenant B's: through a real worker, a real
 * HookDispatcher with the endpoint guard, real receivers on 127.0.0.1 and the real Redis and
 * Postgres, A can neither open B's breaker (its 401s, its own decision controls' 401s, its own
 * 1 ms timeouts), nor fill B's slots; a 422 storm opens no breaker; every spelling of one URL is
 * held by one disable; an event of another queue stays with that queue.
 */
import { sql } from 'drizzle-orm';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { endpointKey, scopedEndpointKey } from '../../../src/contract/endpoint.ts';
import { HookDispatcher, type AgentHook } from '../../../src/entry/index.ts';
import { createHookProducer } from '../../../src/entry/queue.ts';
import { createOperationStore } from '../../../src/entry/store.ts';
import { createEndpointGate, type EndpointGate, type EndpointSnapshot } from '../../../src/isolation/endpointGate.ts';
import { createEndpointGuard, type ClosableEndpointGuard } from '../../../src/isolation/endpointGuard.ts';
import { endpointKeyPrefix } from '../../../src/isolation/endpointIsolation.ts';
import { rowsOf } from '../../../src/store/db.ts';
import { disableEndpoint, setEndpointLimits } from '../../../src/store/endpointsRepo.ts';
import { listDeliveries } from '../../../src/store/deliveriesRepo.ts';
import { startReceiver, type Receiver } from '../../support/receiver.ts';
import { TEST_REDIS_URL } from '../../support/redisKeys.ts';
import { captureLogger, toolContext } from '../../unit/dispatch/helpers.ts';
import { createStack, waitFor, type Stack } from '../queue/harness.ts';

const FAILURES = 3;
const BREAKER = { HOOKRELAY_BREAKER_FAILURES: String(FAILURES), HOOKRELAY_BREAKER_COOLDOWN_MS: '60000' };
const B_SECRET = 'Bearer tenant-b';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let stack: Stack;
let redis: Redis;
let gate: EndpointGate;

beforeAll(async () => {
  stack = await createStack('ten');
  redis = new Redis(TEST_REDIS_URL);
  gate = createEndpointGate(redis, { keyPrefix: endpointKeyPrefix(stack.prefix, stack.queueName), policy: { failureThreshold: FAILURES, cooldownMs: 60_000 } });
  await stack.startWorker({ ...BREAKER, HOOKRELAY_ENDPOINT_CONCURRENCY: '2' });
});

afterAll(async () => {
  await stack?.cleanup();
  redis?.disconnect();
});

/** Never seen, or seen only through successes: closed, no failure counted. */
function expectClosed(snapshot: EndpointSnapshot | undefined): void {
  if (snapshot === undefined) return;
  expect(snapshot.state).toBe('closed');
  expect(snapshot.consecutiveFailures).toBe(0);
  expect(snapshot.windowFailures).toBe(0);
}

/** A receiver for one describe block: started before its tests, closed after them. */
function receiverPerBlock(...args: Parameters<typeof startReceiver>): () => Receiver {
  let r: Receiver | undefined;
  beforeAll(async () => {
    r = await startReceiver(...args);
  });
  afterAll(async () => {
    await r?.close();
  });
  return () => r!;
}

describe('TEN-1 (N2, N3): tenant A cannot open tenant B’s breaker, by any of the three paths of measurement 1', () => {
  let b: Receiver;
  let policyUrl: string;
  let guard: ClosableEndpointGuard;
  let d: HookDispatcher;

  beforeAll(async () => {
    // B's policy receiver: B's own calls carry B's credential; anything else (A's) gets 401.
    b = await startReceiver((req) =>
      req.headers.authorization === B_SECRET ? { status: 200, body: '{"decision":"deny","reason":"B says no to rm /"}' } : { status: 401 },
    );
    policyUrl = `${b.url}/policy`;
    guard = createEndpointGuard({ redis, queueName: stack.queueName, queuePrefix: stack.prefix, env: BREAKER, refreshMs: 50 });
    // One server app, one dispatcher, two tenants' operations.
    d = new HookDispatcher({ env: {}, allowedCidrs: '127.0.0.1/32', logger: captureLogger().logger, endpointGuard: guard });
    for (const onError of ['continue', 'block'] as const) {
      const hooks: AgentHook[] = [
        {
          id: `b-policy-${onError}`,
          type: 'beforeToolCall',
          webhook: { url: policyUrl, responseHandling: 'toolCall', onError, headers: { authorization: B_SECRET } },
        },
      ];
      d.register(`ten1-b-${onError}`, hooks, { tenant: 'tenant-b' });
    }
  });

  afterAll(async () => {
    await d?.close();
    await guard?.close();
    await b?.close();
  });

  /** B's control for `rm /`, both onError values: B's policy is asked each time and its deny holds. */
  async function expectBAsked(): Promise<void> {
    guard.isOpen(scopedEndpointKey('tenant-b', endpointKey({ url: policyUrl })));
    await guard.refresh();
    expectClosed(await gate.snapshot(scopedEndpointKey('tenant-b', endpointKey({ url: policyUrl }))));
    for (const onError of ['continue', 'block'] as const) {
      const asked = b.requests.filter((r) => r.headers.authorization === B_SECRET).length;
      const outcome = await d.evaluateToolCall(`ten1-b-${onError}`, toolContext({ operationId: `ten1-b-${onError}`, args: { command: 'rm /' } }));
      expect(outcome, `onError ${onError}`).toMatchObject({ status: 'blocked', reason: 'B says no to rm /' });
      expect(b.requests.filter((r) => r.headers.authorization === B_SECRET).length, `B's policy asked (onError ${onError})`).toBe(asked + 1);
    }
  }

  it("TEN-1a (N3): B's receiver answering A's unauthenticated notifications with 401 leaves B's breaker closed; B's policy is asked (both onError values)", async () => {
    for (let i = 0; i < FAILURES + 3; i += 1)
      await stack.producer.enqueue({
        operationId: 'ten1a-a',
        tenant: 'tenant-a',
        type: 'onComplete',
        event: { i },
        hooks: [{ id: 'a-notify', type: 'onComplete', webhook: { url: policyUrl } }],
      });
    await waitFor(
      async () => (await listDeliveries(stack.db.store.db, { operationId: 'ten1a-a', status: 'failed' })).length === FAILURES + 3,
      20_000,
      "A's 401s",
    );
    const rows = await listDeliveries(stack.db.store.db, { operationId: 'ten1a-a' });
    expect(rows.every((r) => r.tenant === 'tenant-a' && r.lastHttpStatus === 401)).toBe(true);
    // N3: a 401 is an answer, not the endpoint's failure: not even A's own breaker counted it.
    expectClosed(await gate.snapshot(scopedEndpointKey('tenant-a', endpointKey({ url: policyUrl }))));
    expectClosed(await gate.snapshot(endpointKey({ url: policyUrl })));
    await expectBAsked();
  });

  it("TEN-1b (N2, N3): A's own decision controls at B's URL getting 401 leave B's breaker closed; B's policy is asked (both onError values)", async () => {
    d.register('ten1b-a', [{ id: 'a-control', type: 'beforeToolCall', webhook: { url: policyUrl, responseHandling: 'toolCall' } }], { tenant: 'tenant-a' });
    const before = b.requests.length;
    for (let i = 0; i < FAILURES + 3; i += 1) {
      const outcome = await d.evaluateToolCall('ten1b-a', toolContext({ operationId: 'ten1b-a' }));
      expect(outcome.status).toBe('allow'); // A's own onError 'continue'
      await sleep(20); // the guard records each outcome in the background
    }
    expect(b.requests.length - before).toBe(FAILURES + 3);
    await sleep(200);
    await expectBAsked();
  });

  it("TEN-1c (N3): A's own 1 ms timeout at B's URL (nothing needed from B) leaves B's breaker closed; B's policy is asked (both onError values)", async () => {
    d.register('ten1c-a', [{ id: 'a-impatient', type: 'beforeToolCall', webhook: { url: policyUrl, responseHandling: 'toolCall', timeout: 0.001 } }], {
      tenant: 'tenant-a',
    });
    for (let i = 0; i < FAILURES + 3; i += 1) {
      await d.evaluateToolCall('ten1c-a', toolContext({ operationId: 'ten1c-a' }));
      await sleep(20);
    }
    await sleep(200);
    // N3: a timeout shorter than the endpoint's floor is the caller's own, for its own tenant too.
    expectClosed(await gate.snapshot(scopedEndpointKey('tenant-a', endpointKey({ url: policyUrl }))));
    await expectBAsked();
  });

  it('TEN-1 (N1): a tenant is a bounded token, and an operation keeps the tenant it was registered under', () => {
    expect(() => d.register('ten1-bad', [], { tenant: 'a b' })).toThrow(/register: options.tenant must be 1–128 characters/);
    expect(() => d.register('ten1-bad', [], { tenant: 'x'.repeat(129) })).toThrow(expect.objectContaining({ name: 'TenantError' }));
    expect(() => d.register('ten1-b-continue', [], { tenant: 'tenant-a' })).toThrow(expect.objectContaining({ name: 'TenantMismatchError' }));
  });
});

describe('TEN-1d (N1): producer.enqueue refuses an operation stored for another tenant, storing nothing', () => {
  it("TEN-1d (N1): an operation stored for tenant-a, enqueued as tenant-b (plain, ordered, keyed, and beside another caller's call), throws TenantMismatchError and stores nothing of it", async () => {
    const ops = createOperationStore({ store: stack.db.store });
    await ops.createOperation({ operationId: 'ten1d-op', tenant: 'tenant-a' });
    const ordered = createHookProducer({
      store: stack.db.store,
      redisUrl: TEST_REDIS_URL,
      queueName: stack.queueName,
      queuePrefix: stack.prefix,
      env: {},
      ordering: 'operation',
    });
    const hooks = [{ id: 'h', type: 'onComplete' as const, webhook: { url: 'http://127.0.0.1:9/ten1d' } }];
    const mismatch = expect.objectContaining({ name: 'TenantMismatchError', operationId: 'ten1d-op' });
    const rowsOfOp = async (operationId: string) => listDeliveries(stack.db.store.db, { operationId });
    try {
      const asB = { operationId: 'ten1d-op', tenant: 'tenant-b', type: 'onComplete' as const, event: {}, hooks };
      // Plain (one INSERT), ordered (the numbering INSERT), keyed (the transaction): each refused in its statement.
      await expect(stack.producer.enqueue(asB)).rejects.toEqual(mismatch);
      await expect(ordered.enqueue(asB)).rejects.toEqual(mismatch);
      await expect(stack.producer.enqueue({ ...asB, idempotencyKey: 'k1' })).rejects.toThrow(
        /belongs to tenant "tenant-a"; it was used with tenant "tenant-b"/,
      );
      expect(await rowsOfOp('ten1d-op')).toHaveLength(0);
      // In one group commit with another caller's call: only the mismatched call is refused.
      const [bad, good] = await Promise.allSettled([
        stack.producer.enqueue(asB),
        stack.producer.enqueue({ operationId: 'ten1d-other', tenant: 'tenant-b', type: 'onComplete', event: {}, hooks }),
      ]);
      expect(bad).toMatchObject({ status: 'rejected', reason: mismatch });
      expect(good.status).toBe('fulfilled');
      expect(await rowsOfOp('ten1d-other')).toHaveLength(1);
      expect(await rowsOfOp('ten1d-op')).toHaveLength(0);
      // Its own tenant goes through.
      await stack.producer.enqueue({ ...asB, tenant: 'tenant-a' });
      expect((await rowsOfOp('ten1d-op')).map((row) => row.tenant)).toEqual(['tenant-a']);
    } finally {
      await ordered.close();
    }
  });
});

describe('TEN-2 (N2): tenant A filling an endpoint leaves tenant B’s deliveries to it flowing', () => {
  let r: Receiver;
  beforeAll(async () => {
    // One receiver both tenants name; A's deliveries hang there for a while, B's are answered at once.
    r = await startReceiver((req) => (req.body.includes('"who":"a"') ? { status: 200, delayMs: 3_000 } : { status: 200 }));
  });
  afterAll(async () => {
    await r?.close();
  });

  // Under N2's ceiling across tenants a tenant alone may use every idle slot, so what keeps B's
  // room here is A's own limit (2) under the endpoint's ceiling (4): A's hanging attempts hold A's
  // slots, never the receiver's last ones.
  it("TEN-2 (N2): with A's own limit of 2 under a ceiling of 4, A's 8 hanging deliveries hold A's slots only: B's 3 are delivered while A's are still in flight", async () => {
    const url = `${r.url}/shared`;
    await setEndpointLimits(stack.db.store.db, endpointKey({ url }), { concurrency: 4 });
    await setEndpointLimits(stack.db.store.db, { tenant: 'tenant-a', endpoint: endpointKey({ url }) }, { concurrency: 2 });
    await sleep(2_500); // the worker re-reads the endpoints table every 2 s
    for (let i = 0; i < 8; i += 1)
      await stack.producer.enqueue({
        operationId: 'ten2-a',
        tenant: 'tenant-a',
        type: 'onComplete',
        event: { who: 'a', i },
        hooks: [{ id: 'a', type: 'onComplete', webhook: { url, timeout: 20 } }],
      });
    await waitFor(() => r.requests.filter((q) => q.body.includes('"who":"a"')).length >= 2, 10_000, "A's first attempts");
    for (let i = 0; i < 3; i += 1)
      await stack.producer.enqueue({
        operationId: 'ten2-b',
        tenant: 'tenant-b',
        type: 'onComplete',
        event: { who: 'b', i },
        hooks: [{ id: 'b', type: 'onComplete', webhook: { url } }],
      });
    await waitFor(
      async () => (await listDeliveries(stack.db.store.db, { operationId: 'ten2-b', status: 'delivered' })).length === 3,
      15_000,
      "B's 3 deliveries",
    );
    // B did not wait for A's slots: not one of A's hanging deliveries had finished yet.
    expect(await listDeliveries(stack.db.store.db, { operationId: 'ten2-a', status: 'delivered' })).toHaveLength(0);
    const [aState, bState] = await Promise.all([
      gate.snapshot(scopedEndpointKey('tenant-a', endpointKey({ url }))),
      gate.snapshot(scopedEndpointKey('tenant-b', endpointKey({ url }))),
    ]);
    expect(aState?.inFlight).toBeGreaterThan(0);
    expect(bState?.state).toBe('closed');
    await waitFor(async () => (await listDeliveries(stack.db.store.db, { operationId: 'ten2-a', status: 'delivered' })).length === 8, 30_000, "A's 8");
  });
});

describe('TEN-2b (N2): a ceiling per canonical endpoint across tenants, shared fairly', () => {
  const CEILING = 4;
  const A_EVENTS = 80;
  const B_EVENTS = 20;
  let r: Receiver;
  let inFlight = 0;
  let most = 0;
  // Who each request came from, in arrival order.
  const arrivals: string[] = [];
  beforeAll(async () => {
    // A slow receiver that measures its own concurrency: requests received and not yet answered.
    r = await startReceiver(async (req) => {
      inFlight += 1;
      most = Math.max(most, inFlight);
      arrivals.push(req.body.includes('"who":"a"') ? 'a' : 'b');
      await sleep(250);
      inFlight -= 1;
      return { status: 200 };
    });
  });
  afterAll(async () => {
    await r?.close();
  });

  it(`TEN-2b (N2): with a ceiling of ${CEILING} at one receiver, two tenants' backlogs never put more than ${CEILING} requests on it at once, and B gets about its fair share while A's backlog is large`, async () => {
    const url = `${r.url}/ceiling`;
    // The ceiling is the endpoint's concurrency for every tenant (`endpoints limit <url> --concurrency 4`).
    await setEndpointLimits(stack.db.store.db, endpointKey({ url }), { concurrency: CEILING });
    await sleep(2_500); // the worker re-reads the endpoints table every 2 s
    for (let i = 0; i < A_EVENTS; i += 1)
      await stack.producer.enqueue({
        operationId: 'ten2b-a',
        tenant: 'tenant-a',
        type: 'onComplete',
        event: { who: 'a', i },
        hooks: [{ id: 'a', type: 'onComplete', webhook: { url } }],
      });
    // A alone may use every idle slot.
    await waitFor(() => most >= CEILING, 10_000, 'A filling the ceiling');
    const aBeforeB = arrivals.length;
    for (let i = 0; i < B_EVENTS; i += 1)
      await stack.producer.enqueue({
        operationId: 'ten2b-b',
        tenant: 'tenant-b',
        type: 'onComplete',
        event: { who: 'b', i },
        hooks: [{ id: 'b', type: 'onComplete', webhook: { url } }],
      });
    await waitFor(
      async () => (await listDeliveries(stack.db.store.db, { operationId: 'ten2b-b', status: 'delivered' })).length === B_EVENTS,
      60_000,
      "B's deliveries",
    );
    const firstB = arrivals.indexOf('b');
    const lastB = arrivals.lastIndexOf('b');
    const aByLastB = arrivals.slice(0, lastB).filter((who) => who === 'a').length;
    // A's backlog was still large the whole time B was served.
    expect(aByLastB, 'A requests before B was done').toBeLessThan(A_EVENTS - CEILING);
    // B's share of the receiver while both had work: fair is a half; allow for the hand-over from A's slots.
    const contended = arrivals.slice(firstB, lastB + 1);
    const bShare = contended.filter((who) => who === 'b').length / contended.length;
    expect(bShare, `B's share of ${contended.length} requests (A had ${aBeforeB} before B)`).toBeGreaterThanOrEqual(0.4);
    await waitFor(
      async () => (await listDeliveries(stack.db.store.db, { operationId: 'ten2b-a', status: 'delivered' })).length === A_EVENTS,
      60_000,
      "A's deliveries",
    );
    // Measured at the receiver: never more than the ceiling, both tenants together.
    expect(most).toBe(CEILING);
  });
});

describe('TEN-3 (N3): a 422 storm does not open a breaker', () => {
  const receiver = receiverPerBlock({ status: 422, body: '{"error":"unprocessable"}' });

  it('TEN-3 (N3): 8 deliveries answered 422 fail on their own; the breaker stays closed and a healthy event after them is delivered', async () => {
    const r = receiver();
    const url = `${r.url}/hook`;
    const hooks = [{ id: 'h', type: 'onComplete' as const, webhook: { url } }];
    for (let i = 0; i < 8; i += 1) await stack.producer.enqueue({ operationId: 'ten3-storm', type: 'onComplete', event: { i }, hooks });
    await waitFor(async () => (await listDeliveries(stack.db.store.db, { operationId: 'ten3-storm', status: 'failed' })).length === 8, 20_000, '8 failures');
    const storm = await listDeliveries(stack.db.store.db, { operationId: 'ten3-storm' });
    expect(storm.every((row) => row.lastHttpStatus === 422 && row.attemptCount === 1)).toBe(true);
    expectClosed(await gate.snapshot(endpointKey({ url })));

    r.setHandler({ status: 200 });
    await stack.producer.enqueue({ operationId: 'ten3-healthy', type: 'onComplete', event: {}, hooks });
    await waitFor(
      async () => (await listDeliveries(stack.db.store.db, { operationId: 'ten3-healthy', status: 'delivered' })).length === 1,
      15_000,
      'the healthy event',
    );
  });
});

describe('TEN-4 (N4): equivalent URLs are one endpoint: 8 variants are held by one disable', () => {
  const receiver = receiverPerBlock({ status: 200 });

  it('TEN-4 (N4): after disabling http://127.0.0.1:P/hook --hold, its 8 spellings are all held and the receiver gets nothing', async () => {
    const r = receiver();
    const base = `http://127.0.0.1:${r.port}`;
    await disableEndpoint(stack.db.store.db, endpointKey({ url: `${base}/hook` }), 'operator', 'TEN-4', true);
    await sleep(2_500); // the worker re-reads the endpoints table every 2 s
    const variants = [
      `${base}/hook/`,
      `${base}//hook`,
      `${base}/hook/.`,
      `${base}/%68ook`,
      `${base}/hook;x=1`,
      `${base}/HOOK`,
      `http://localhost:${r.port}/hook`,
      `http://[::ffff:7f00:1]:${r.port}/hook`,
    ];
    for (const [i, url] of variants.entries())
      await stack.producer.enqueue({ operationId: `ten4-${i}`, type: 'onComplete', event: {}, hooks: [{ id: 'h', type: 'onComplete', webhook: { url } }] });
    await waitFor(
      async () =>
        (await listDeliveries(stack.db.store.db, { status: 'held', endpoint: `${base}/hook` })).filter((row) => row.operationId.startsWith('ten4-')).length ===
        8,
      20_000,
      'all 8 variants held',
    );
    expect(r.requests).toHaveLength(0);
    const keys = rowsOf<{ endpoint_key: string }>(
      await stack.db.store.db.execute(sql`select distinct endpoint_key from deliveries where operation_id like 'ten4-%'`),
    );
    expect(keys).toEqual([{ endpoint_key: `${base}/hook` }]);
  });
});

describe('TEN-4b (N2): an operator disables an endpoint for one tenant or for all', () => {
  const receiver = receiverPerBlock({ status: 200 });

  it("TEN-4b (N2): disabled for tenant-a only, a's delivery is held and b's goes out; then disabled for every tenant, b's is held too", async () => {
    const r = receiver();
    const url = `${r.url}/scoped`;
    const hooks = [{ id: 'h', type: 'onComplete' as const, webhook: { url } }];
    await disableEndpoint(stack.db.store.db, { tenant: 'tenant-a', endpoint: endpointKey({ url }) }, 'operator', 'TEN-4b a only', true);
    await sleep(2_500); // the worker re-reads the endpoints table every 2 s
    await stack.producer.enqueue({ operationId: 'ten4b-a', tenant: 'tenant-a', type: 'onComplete', event: {}, hooks });
    await stack.producer.enqueue({ operationId: 'ten4b-b', tenant: 'tenant-b', type: 'onComplete', event: {}, hooks });
    await waitFor(async () => (await listDeliveries(stack.db.store.db, { operationId: 'ten4b-b', status: 'delivered' })).length === 1, 15_000, "b's delivery");
    await waitFor(async () => (await listDeliveries(stack.db.store.db, { operationId: 'ten4b-a', status: 'held' })).length === 1, 15_000, "a's held");
    expect(r.requests).toHaveLength(1);

    await disableEndpoint(stack.db.store.db, endpointKey({ url }), 'operator', 'TEN-4b every tenant', true);
    await sleep(2_500);
    await stack.producer.enqueue({ operationId: 'ten4b-b2', tenant: 'tenant-b', type: 'onComplete', event: {}, hooks });
    await waitFor(async () => (await listDeliveries(stack.db.store.db, { operationId: 'ten4b-b2', status: 'held' })).length === 1, 15_000, "b's second held");
    expect(r.requests).toHaveLength(1);
  });
});

describe('TEN-5 (queues): an event of another queue stays with that queue', () => {
  const receiver = receiverPerBlock({ status: 200 });

  it("TEN-5: an otherq event is never re-enqueued by the default queue's reconciler; otherq's own worker delivers it", async () => {
    const r = receiver();
    const otherq = `${stack.queueName}-otherq`;
    const producer = createHookProducer({ store: stack.db.store, redisUrl: TEST_REDIS_URL, queueName: otherq, queuePrefix: stack.prefix, env: {} });
    try {
      const { deliveryIds } = await producer.enqueue({
        operationId: 'ten5',
        type: 'onComplete',
        event: {},
        hooks: [{ id: 'h', type: 'onComplete', webhook: { url: `${r.url}/otherq` } }],
      });
      // The default queue's worker reconciles every 500 ms (grace 200 ms): a few passes.
      await sleep(3_000);
      expect(r.requests).toHaveLength(0);
      const [row] = await listDeliveries(stack.db.store.db, { operationId: 'ten5' });
      expect(row).toMatchObject({ id: deliveryIds[0], status: 'queued', queue: otherq });
    } finally {
      await producer.close();
    }
    const { startDeliveryService } = await import('../../../src/worker/service.ts');
    const { silentLogger } = await import('../../../src/observability/logger.ts');
    const worker = await startDeliveryService({
      settings: stack.settings({ HOOKRELAY_QUEUE: otherq }),
      store: stack.db.store,
      logger: silentLogger(),
      queuePrefix: stack.prefix,
      reconcileGraceMs: 200,
    });
    try {
      await waitFor(
        async () => (await listDeliveries(stack.db.store.db, { operationId: 'ten5', status: 'delivered' })).length === 1,
        15_000,
        'otherq delivers it',
      );
      expect(r.requests).toHaveLength(1);
    } finally {
      await worker.stop();
    }
  });
});

describe('TEN-6 (N2): ordered delivery is per (tenant, operation, hook)', () => {
  let r: Receiver;
  beforeAll(async () => {
    // A's receiver refuses for good (410: an answer, never the breaker's); B's takes everything.
    r = await startReceiver((req) => (req.body.includes('"who":"a"') ? { status: 410 } : { status: 200 }));
  });
  afterAll(async () => {
    await r?.close();
  });

  it("TEN-6 (N2): two tenants given one operation id and hook id each get their own order: A's failed 'block' delivery holds A's later ones only, B's 3 are numbered 1..3 and delivered", async () => {
    const ordered = createHookProducer({
      store: stack.db.store,
      redisUrl: TEST_REDIS_URL,
      queueName: stack.queueName,
      queuePrefix: stack.prefix,
      env: {},
      ordering: 'operation',
    });
    const hooks = [{ id: 'same-hook', type: 'afterStep' as const, webhook: { url: `${r.url}/ordered`, ordering: 'operation', onFailure: 'block' } as never }];
    type Row = { tenant: string; sequence: number; status: string; failure_reason: string | null };
    const rows = async (tenant: string): Promise<Row[]> =>
      rowsOf<Row>(
        await stack.db.store.db.execute(
          sql`select tenant, sequence, status, failure_reason from deliveries where operation_id = 'ten6-same-op' and tenant = ${tenant} order by sequence`,
        ),
      );
    try {
      for (let stepIndex = 0; stepIndex < 3; stepIndex += 1)
        await ordered.enqueue({ operationId: 'ten6-same-op', tenant: 'tenant-a', type: 'afterStep', event: { who: 'a', stepIndex }, hooks });
      await waitFor(async () => (await rows('tenant-a'))[0]?.status === 'failed', 20_000, "A's first delivery failed for good");
      for (let stepIndex = 0; stepIndex < 3; stepIndex += 1)
        await ordered.enqueue({ operationId: 'ten6-same-op', tenant: 'tenant-b', type: 'afterStep', event: { who: 'b', stepIndex }, hooks });
      await waitFor(async () => (await rows('tenant-b')).filter((row) => row.status === 'delivered').length === 3, 20_000, "B's 3 ordered deliveries");
      expect((await rows('tenant-b')).map((row) => Number(row.sequence))).toEqual([1, 2, 3]);
      // B's were delivered in B's order.
      expect(r.requests.filter((q) => q.body.includes('"who":"b"')).map((q) => q.body.match(/"stepIndex":(\d)/)?.[1])).toEqual(['0', '1', '2']);
      // A's later ones are still held back by A's own failed 'block' delivery, and say so.
      const a = await rows('tenant-a');
      expect(a.map((row) => Number(row.sequence))).toEqual([1, 2, 3]);
      expect(a.slice(1).every((row) => row.status !== 'delivered' && row.failure_reason === 'ordering_blocked')).toBe(true);
      expect(r.requests.filter((q) => q.body.includes('"who":"a"'))).toHaveLength(1);
    } finally {
      await ordered.close();
    }
  });
});
