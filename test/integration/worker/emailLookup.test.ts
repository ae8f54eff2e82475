/**
 * B3/B4/B4a/B5 in the queue path: a real worker (`startDeliveryWorker`, the programmatic API)
 * delivering to a real receiver on 127.0.0.1, with the application's email look-up.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../../src/observability/logger.ts';
import { createHookProducer } from '../../../src/queue/producer.ts';
import type { HookProducer } from '../../../src/queue/types.ts';
import { startDeliveryWorker, type RunningDeliveryWorker } from '../../../src/worker/startDeliveryWorker.ts';
import { createTestStore, type TestStore } from '../../support/db.ts';
import { startReceiver, type Receiver } from '../../support/receiver.ts';
import { deleteKeys, queueKeys, TEST_REDIS_URL } from '../../support/redisKeys.ts';
import { waitFor } from '../queue/harness.ts';

type Lookup = (userId: string) => Promise<string | null | undefined>;

describe('B3 worker: userEmail in queue-mode deliveries', () => {
  let db: TestStore;
  let rx: Receiver;
  let producer: HookProducer;
  const queueName = `b3-worker-${randomBytes(4).toString('hex')}`;
  let running: RunningDeliveryWorker | undefined;
  let calls: string[] = [];

  const env = (extra: Record<string, string> = {}): NodeJS.ProcessEnv => ({
    DATABASE_URL: db.url,
    REDIS_URL: TEST_REDIS_URL,
    HOOKRELAY_QUEUE: queueName,
    HOOKRELAY_ALLOWED_CIDRS: '127.0.0.0/8',
    HOOKRELAY_HTTP_PORT: '0',
    HOOKRELAY_RETRY_SCHEDULE: '0.05',
    HOOKRELAY_RECONCILE_INTERVAL_MS: '300',
    HOOKRELAY_LOCK_DURATION_MS: '1000',
    HOOKRELAY_STALLED_INTERVAL_MS: '500',
    HOOKRELAY_SHUTDOWN_TIMEOUT_MS: '1000',
    ...extra,
  });
  const start = async (lookup: Lookup): Promise<RunningDeliveryWorker> => {
    running = await startDeliveryWorker({
      env: env(),
      logger: silentLogger(),
      migrate: false,
      emailLookup: async (userId) => {
        calls.push(userId);
        return lookup(userId);
      },
    });
    return running;
  };
  /** Enqueue onComplete events to one hook; resolves with each delivery's received JSON body. */
  const deliver = async (events: Record<string, unknown>[], webhook: Record<string, unknown> = {}): Promise<Record<string, unknown>[]> => {
    const path = `/b3-${randomBytes(4).toString('hex')}`;
    const { deliveryIds } = await producer.enqueueMany(
      events.map((event, i) => ({
        operationId: `op-${i}`,
        type: 'onComplete' as const,
        event: { operationId: `op-${i}`, reason: 'done', ...event },
        hooks: [{ id: 'h', type: 'onComplete' as const, webhook: { url: `${rx.url}${path}`, ...webhook } }],
      })),
    );
    const received = () => rx.requests.filter((r) => r.path === path);
    await waitFor(() => received().length >= events.length, 20_000, `${events.length} deliveries`);
    const byId = new Map(received().map((r) => [String(r.headers['webhook-id']), JSON.parse(r.body) as Record<string, unknown>]));
    return deliveryIds.map((id) => byId.get(id)!);
  };

  beforeAll(async () => {
    db = await createTestStore('b3_worker');
    rx = await startReceiver({ status: 204 });
    producer = createHookProducer({ store: db.store, redisUrl: TEST_REDIS_URL, queueName, env: {} });
  });
  afterEach(async () => {
    await running?.stop();
    running = undefined;
    calls = [];
  });
  afterAll(async () => {
    await producer.close();
    await rx.close();
    await deleteKeys(queueKeys(queueName));
    await db.cleanup();
  });

  it("B3 worker: the delivered payload carries the event user's email and replaces a caller-supplied one (B4a)", async () => {
    await start(async (id) => `${id}@mail.example`);
    const [payload] = await deliver([{ userId: 'u-1', userEmail: 'forged@evil.example' }]);
    expect(payload).toMatchObject({ userId: 'u-1', userEmail: 'u-1@mail.example', hookId: 'h', hookType: 'onComplete' });
    expect(calls).toEqual(['u-1']);
  }, 30_000);

  it('B3 worker: a look-up that throws, or finds no email, omits userEmail; the delivery still happens', async () => {
    await start(async (id) => {
      if (id === 'u-throws') throw new Error('directory down: postgres://secret@db');
      return id === 'u-none' ? null : `${id}@mail.example`;
    });
    const [threw, none, ok] = await deliver([{ userId: 'u-throws', userEmail: 'x@y' }, { userId: 'u-none' }, { userId: 'u-ok' }]);
    expect(threw).toMatchObject({ userId: 'u-throws' });
    expect(threw).not.toHaveProperty('userEmail');
    expect(none).toMatchObject({ userId: 'u-none' });
    expect(none).not.toHaveProperty('userEmail');
    expect(ok).toMatchObject({ userEmail: 'u-ok@mail.example' });
  }, 30_000);

  it('B3 worker / B4a: an invalid explicit id (null, "", a number in the body) means no look-up and no fallback to the event id', async () => {
    await start(async (id) => `${id}@mail.example`);
    const payloads = await Promise.all([
      deliver([{ userId: null }, { userId: '' }, { userId: 42 }]),
      deliver([{ userId: 'u-event' }], { body: { userId: null } }),
    ]);
    for (const p of payloads.flat()) expect(p).not.toHaveProperty('userEmail');
    expect(calls).toEqual([]);
  }, 30_000);

  it('B3 worker / B4a: a projection without userEmail makes no look-up; one naming it does (email-only uses the event id)', async () => {
    await start(async (id) => `${id}@mail.example`);
    const [without] = await deliver([{ userId: 'u-proj' }], { eventFields: ['operationId', 'userId'] });
    expect(without).toEqual(expect.not.objectContaining({ userEmail: expect.anything() }));
    expect(calls).toEqual([]);
    const [emailOnly] = await deliver([{ userId: 'u-proj' }], { eventFields: ['userEmail'] });
    expect(emailOnly).toMatchObject({ userEmail: 'u-proj@mail.example' });
    expect(emailOnly).not.toHaveProperty('userId');
  }, 30_000);

  it("B3 worker / B4: the worker's deliveries share one cache: 30 deliveries of 3 users → 3 look-ups", async () => {
    await start(async (id) => {
      await new Promise((r) => setTimeout(r, 50)); // in flight while the others ask
      return `${id}@mail.example`;
    });
    const users = ['u-a', 'u-b', 'u-c'];
    const payloads = await deliver(Array.from({ length: 30 }, (_, i) => ({ userId: users[i % 3] })));
    expect(payloads.map((p) => p.userEmail)).toEqual(Array.from({ length: 30 }, (_, i) => `${users[i % 3]}@mail.example`));
    expect([...calls].sort()).toEqual(users);
  }, 30_000);

  it('B3 worker / B5: a look-up still pending at the shutdown bound is abandoned (nothing sent without it); the next worker delivers with the email', async () => {
    const path = `/b5-${randomBytes(4).toString('hex')}`;
    await start(() => new Promise(() => undefined)); // never answers
    const { deliveryIds } = await producer.enqueue({
      operationId: 'op-b5',
      type: 'onComplete',
      event: { operationId: 'op-b5', userId: 'u-slow' },
      hooks: [{ id: 'h', type: 'onComplete', webhook: { url: `${rx.url}${path}`, timeout: 1 } }],
    });
    await waitFor(() => calls.includes('u-slow'), 10_000, 'the look-up to start');
    await running!.stop(); // resolves: the pending look-up does not hold the worker past its bound
    running = undefined;
    expect(rx.requests.filter((r) => r.path === path)).toHaveLength(0);
    // The abandoned attempt is recorded as cancelled (retryable), not left hanging until its lease expires.
    const abandoned = await producer.getDelivery(deliveryIds[0]!);
    expect(abandoned).toMatchObject({ status: 'retrying', lastErrorClass: 'cancelled', attemptCount: 1 });

    await start(async (id) => `${id}@mail.example`);
    await waitFor(() => rx.requests.some((r) => r.path === path), 20_000, 'the abandoned delivery to be retried');
    const sent = rx.requests.filter((r) => r.path === path);
    expect(sent.map((r) => r.headers['webhook-id'])).toEqual([deliveryIds[0]]);
    expect(JSON.parse(sent[0]!.body)).toMatchObject({ userId: 'u-slow', userEmail: 'u-slow@mail.example' });
  }, 40_000);
});
