import net from 'node:net';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventValidationError, HookConfigError, PayloadTooLargeError } from '../../../src/contract/errors.ts';
import { MAX_EVENT_DEPTH } from '../../../src/contract/events.ts';
import { createHookProducer } from '../../../src/queue/producer.ts';
import { startReceiver, type Receiver } from '../../support/receiver.ts';
import { createStack, fetchHook, waitFor, type Stack } from './harness.ts';

async function countRows(stack: Stack): Promise<number> {
  const result = await stack.db.store.db.execute(sql`select count(*)::int as n from deliveries`);
  return (result as unknown as { rows: Array<{ n: number }> }).rows[0]?.n ?? -1;
}

/** A TCP port with nothing listening on it. */
async function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

describe('producer', () => {
  let stack: Stack;
  let rx: Receiver;

  beforeAll(async () => {
    stack = await createStack('producer');
    rx = await startReceiver({ status: 200 });
  });
  afterAll(async () => {
    await stack.cleanup();
    await rx.close();
  });

  it('Q1: ids are dlv_<ULID>; controls and non-matching hooks are skipped; hook order is kept', async () => {
    const { deliveryIds, queued } = await stack.producer.enqueue({
      operationId: 'op-match',
      type: 'afterToolCall',
      event: { identifier: 'search', apiName: 'web' },
      hooks: [
        { id: 'h-any', type: 'afterToolCall', webhook: { url: `${rx.url}/x` } },
        { id: 'h-control', type: 'afterToolCall', webhook: { url: `${rx.url}/c`, responseHandling: 'toolCall' } },
        { id: 'h-other-type', type: 'onComplete', webhook: { url: `${rx.url}/o` } },
        { id: 'h-no-match', type: 'afterToolCall', matcher: '^files/', webhook: { url: `${rx.url}/n` } },
        { id: 'h-match', type: 'afterToolCall', matcher: '^search/', webhook: { url: `${rx.url}/m` } },
      ],
    });
    expect(queued).toBe(true);
    expect(deliveryIds).toHaveLength(2);
    for (const id of deliveryIds) expect(id).toMatch(/^dlv_[0-9A-HJKMNP-TV-Z]{26}$/);
    const [a, b] = await Promise.all(deliveryIds.map((id) => stack.producer.getDelivery(id)));
    expect(a).toMatchObject({ hookId: 'h-any', status: 'queued', attemptCount: 0, eventType: 'afterToolCall', operationId: 'op-match' });
    expect(b?.hookId).toBe('h-match');
  });

  it('D4b: a corrupt serialized hook throws and nothing is stored', async () => {
    const before = await countRows(stack);
    await expect(
      stack.producer.enqueue({
        operationId: 'op-corrupt',
        type: 'onComplete',
        event: {},
        hooks: [fetchHook('fine', `${rx.url}/f`), { id: 'broken', type: 'onComplete', webhook: { url: 'ftp://nope', extra: 1 } } as never],
      }),
    ).rejects.toBeInstanceOf(HookConfigError);
    expect(await countRows(stack)).toBe(before);
  });

  it('Q8: an event over the payload cap is refused with size and cap, nothing stored', async () => {
    const producer = createHookProducer({
      store: stack.db.store,
      redisUrl: 'redis://127.0.0.1:6379',
      queueName: stack.queueName,
      queuePrefix: stack.prefix,
      maxPayloadBytes: 1_000,
      env: {},
    });
    try {
      const before = await countRows(stack);
      const attempt = producer.enqueue({
        operationId: 'op-big',
        type: 'onComplete',
        event: { blob: 'x'.repeat(2_000) },
        hooks: [fetchHook('h', `${rx.url}/big`)],
      });
      await expect(attempt).rejects.toBeInstanceOf(PayloadTooLargeError);
      await expect(attempt).rejects.toThrow(/2\d{3} bytes, over the cap of 1000 bytes/);
      expect(await countRows(stack)).toBe(before);
    } finally {
      await producer.close();
    }
    // The default cap is 262,144 bytes (HOOKRELAY_MAX_PAYLOAD_BYTES).
    await expect(
      stack.producer.enqueue({ operationId: 'op-big2', type: 'onComplete', event: { blob: 'x'.repeat(262_144) }, hooks: [fetchHook('h', `${rx.url}/big`)] }),
    ).rejects.toThrow(/over the cap of 262144 bytes/);
  });

  it('D10: an event nested 10,000 deep (or cyclic, or holding a BigInt) is a typed EventValidationError, not a RangeError; nothing stored', async () => {
    let deep: unknown = 'leaf';
    for (let i = 0; i < 10_000; i += 1) deep = { a: deep };
    const cyclic: Record<string, unknown> = { operationId: 'op-deep' }; // its own operation: another id is refused first (SEC-T5)
    cyclic.self = cyclic;
    const before = await countRows(stack);
    for (const event of [{ nested: deep }, cyclic, { n: 10n }]) {
      const attempt = stack.producer.enqueue({ operationId: 'op-deep', type: 'onComplete', event, hooks: [fetchHook('h', `${rx.url}/deep`)] });
      await expect(attempt).rejects.toBeInstanceOf(EventValidationError);
      await expect(attempt).rejects.toThrow(/^enqueue: event /);
    }
    expect(await countRows(stack)).toBe(before);
    // The bound itself: MAX_EVENT_DEPTH levels are stored, one more is refused.
    const nest = (levels: number) => {
      let v: Record<string, unknown> = {};
      for (let i = 1; i < levels; i += 1) v = { a: v };
      return v;
    };
    await expect(
      stack.producer.enqueue({
        operationId: 'op-deep',
        type: 'onComplete',
        event: { ...nest(MAX_EVENT_DEPTH + 1) },
        hooks: [fetchHook('h', `${rx.url}/deep`)],
      }),
    ).rejects.toThrow(new RegExp(`more than ${MAX_EVENT_DEPTH} levels`));
    const ok = await stack.producer.enqueue({
      operationId: 'op-deep',
      type: 'onComplete',
      event: nest(MAX_EVENT_DEPTH),
      hooks: [fetchHook('h', `${rx.url}/deep`)],
    });
    expect(ok.deliveryIds).toHaveLength(1);
  });

  it('Q1a: 100 concurrent enqueues with one idempotency key → one set of ids, one delivery each', async () => {
    const worker = await stack.startWorker();
    const hooks = [fetchHook('k1', `${rx.url}/idem-1`), fetchHook('k2', `${rx.url}/idem-2`)];
    const results = await Promise.all(
      Array.from({ length: 100 }, () =>
        stack.producer.enqueue({ operationId: 'op-idem', type: 'onComplete', event: { n: 1 }, hooks, idempotencyKey: 'evt-42' }),
      ),
    );
    const first = results[0]?.deliveryIds;
    expect(first).toHaveLength(2);
    for (const r of results) expect(r.deliveryIds).toEqual(first);
    await waitFor(() => rx.requests.filter((r) => r.path.startsWith('/idem-')).length >= 2);
    await new Promise((r) => setTimeout(r, 500));
    expect(rx.requests.filter((r) => r.path === '/idem-1')).toHaveLength(1);
    expect(rx.requests.filter((r) => r.path === '/idem-2')).toHaveLength(1);
    const rows = await stack.db.store.db.execute(sql`select count(*)::int as n from deliveries where idempotency_key = 'evt-42'`);
    expect((rows as unknown as { rows: Array<{ n: number }> }).rows[0]?.n).toBe(2);
    // Later, too: the key has no expiry.
    const again = await stack.producer.enqueue({ operationId: 'op-idem', type: 'onComplete', event: { n: 1 }, hooks, idempotencyKey: 'evt-42' });
    expect(again.deliveryIds).toEqual(first);
    await worker.stop();
  });

  it('Q2: Redis unreachable at enqueue → ids returned with queued:false, row committed; a worker reconciler delivers it', async () => {
    const deadRedis = `redis://127.0.0.1:${await closedPort()}`;
    const producer = createHookProducer({
      store: stack.db.store,
      redisUrl: deadRedis,
      queueName: stack.queueName,
      queuePrefix: stack.prefix,
      queueTimeoutMs: 500,
      env: {},
    });
    let id: string;
    try {
      const started = Date.now();
      const result = await producer.enqueue({
        operationId: 'op-noredis',
        type: 'onComplete',
        event: { lost: false },
        hooks: [fetchHook('r', `${rx.url}/reconciled`)],
      });
      expect(Date.now() - started).toBeLessThan(3_000);
      expect(result.queued).toBe(false);
      expect(result.deliveryIds).toHaveLength(1);
      id = result.deliveryIds[0] as string;
      expect(await producer.getDelivery(id)).toMatchObject({ status: 'queued' });
    } finally {
      await producer.close();
    }
    const worker = await stack.startWorker({}, { reconcileGraceMs: 100 });
    await waitFor(() => rx.requests.some((r) => r.path === '/reconciled'), 10_000, 'reconciled delivery');
    await waitFor(async () => (await stack.producer.getDelivery(id))?.status === 'delivered');
    expect(rx.requests.find((r) => r.path === '/reconciled')?.headers['webhook-id']).toBe(id);
    expect(await worker.metrics.registry.getSingleMetricAsString('hookrelay_reconciled_total')).toMatch(/hookrelay_reconciled_total [1-9]/);
    await worker.stop();
  });

  it('Q1/Q11: a delivered row is never delivered again, even if its job is re-added', async () => {
    const worker = await stack.startWorker();
    const { deliveryIds } = await stack.producer.enqueue({ operationId: 'op-once', type: 'onComplete', event: {}, hooks: [fetchHook('o', `${rx.url}/once`)] });
    const id = deliveryIds[0] as string;
    await waitFor(async () => (await stack.producer.getDelivery(id))?.status === 'delivered');
    await worker.queue.add('deliver', { deliveryId: id, generation: 0 }, { jobId: id, removeOnComplete: true });
    await new Promise((r) => setTimeout(r, 500));
    expect(rx.requests.filter((r) => r.path === '/once')).toHaveLength(1);
    expect((await stack.producer.getDelivery(id))?.attemptCount).toBe(1);
    await worker.stop();
  });
});
