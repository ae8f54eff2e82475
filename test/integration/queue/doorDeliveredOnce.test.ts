/**
 * DOOR-3 (F3): a delivery whose ledger row is final is never sent again. Reproduction 3 of issue
 * 48: the producer's Redis goes away (a TCP proxy cut; the worker keeps its own connection), the
 * enqueues answer `queued: false`, the worker's reconciler delivers every row; when the producer's
 * Redis comes back no add it had kept runs. And a job whose row is already delivered (a late
 * add, a replayed command) is acknowledged without a request. Checked at the receiver, by
 * `webhook-id`. Real Redis, Postgres and HTTP receiver.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHookProducer } from '../../../src/queue/producer.ts';
import { addDeliveryJobs } from '../../../src/queue/jobs.ts';
import type { HookProducer } from '../../../src/queue/types.ts';
import { startReceiver, type Receiver } from '../../support/receiver.ts';
import { startTcpProxy, type TcpProxy } from '../../support/tcpProxy.ts';
import { createStack, fetchHook, TEST_REDIS_URL, waitFor, type Stack } from './harness.ts';

const EVENTS = 20;

/** How many requests each webhook-id got. */
function sendsById(receiver: Receiver): Map<string, number> {
  const sends = new Map<string, number>();
  for (const r of receiver.requests) {
    const id = String(r.headers['webhook-id']);
    sends.set(id, (sends.get(id) ?? 0) + 1);
  }
  return sends;
}

describe('DOOR-3 (F3): never sent again once delivered', () => {
  let stack: Stack;
  let receiver: Receiver;
  let proxy: TcpProxy;
  let producer: HookProducer | undefined;
  beforeAll(async () => {
    stack = await createStack('door3');
    receiver = await startReceiver({ status: 204 });
    proxy = await startTcpProxy(Number(new URL(TEST_REDIS_URL).port || 6379));
    await stack.startWorker({}, { reconcileGraceMs: 200 });
  });
  afterAll(async () => {
    await producer?.close();
    await proxy.close();
    await stack.cleanup();
    await receiver.close();
  });

  it('DOOR-3 (F3): reproduction 3 — 20 enqueues during a producer-side Redis outage, delivered by the reconciler, are each sent once after the producer reconnects', async () => {
    producer = createHookProducer({
      store: stack.db.store,
      redisUrl: proxy.url(TEST_REDIS_URL),
      queueName: stack.queueName,
      queuePrefix: stack.prefix,
      queueTimeoutMs: 300,
      env: {},
    });
    const hook = fetchHook('once', `${receiver.url}/once`);
    const first = await producer.enqueue({ operationId: 'op-door3-0', type: 'onComplete', event: {}, hooks: [hook] });
    expect(first.queued).toBe(true); // connected once, then the outage
    await proxy.cut();
    const results = await Promise.all(
      Array.from({ length: EVENTS }, (_, i) => producer!.enqueue({ operationId: `op-door3-${i + 1}`, type: 'onComplete', event: { i }, hooks: [hook] })),
    );
    expect(results.map((r) => r.queued)).toEqual(Array(EVENTS).fill(false));
    const ids = [...first.deliveryIds, ...results.flatMap((r) => r.deliveryIds)];
    // The worker's reconciler adds the missing jobs; every row is delivered while the producer is still cut off.
    await waitFor(() => ids.every((id) => sendsById(receiver).has(id)), 30_000, 'every delivery sent by the reconciler');
    await proxy.restore();
    // The producer is connected again: its next enqueue adds its job at once.
    await waitFor(
      async () => (await producer!.enqueue({ operationId: 'op-door3-after', type: 'onComplete', event: {}, hooks: [hook] })).queued,
      15_000,
      'the producer to reach Redis again',
    );
    // Anything the client had kept would have been sent on reconnect and processed by now.
    await new Promise((r) => setTimeout(r, 2_000));
    const sends = sendsById(receiver);
    expect(ids.filter((id) => sends.get(id) !== 1)).toEqual([]);
    for (const id of ids) expect((await stack.producer.getDelivery(id))?.attempts).toHaveLength(1);
  }, 90_000);

  it('DOOR-3 (F3): a job added after its row was delivered (a late add carrying the attempt data) is acknowledged without a request', async () => {
    const hook = fetchHook('late', `${receiver.url}/late`);
    const { deliveryIds } = await stack.producer.enqueue({ operationId: 'op-door3-late', type: 'onComplete', event: { late: true }, hooks: [hook] });
    const id = deliveryIds[0]!;
    await waitFor(async () => (await stack.producer.getDelivery(id))?.status === 'delivered', 15_000, 'the first delivery');
    const body = receiver.requests.find((r) => r.headers['webhook-id'] === id)!.body;
    // The job the producer would have added, arriving late (after completion removed the first one).
    await addDeliveryJobs(stack.worker().queue, [
      {
        deliveryId: id,
        generation: 0,
        attempt: { operationId: 'op-door3-late', hook: JSON.stringify(hook), body, attemptCount: 0, generationAttemptCount: 0 },
      },
    ]);
    await waitFor(async () => (await stack.worker().queue.getJob(id)) === undefined, 15_000, 'the late job to be processed');
    expect(receiver.requests.filter((r) => r.headers['webhook-id'] === id)).toHaveLength(1);
    expect((await stack.producer.getDelivery(id))?.attempts).toHaveLength(1);
  }, 30_000);
});
