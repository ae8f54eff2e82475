/**
 * SEC-T2 (Q1a): an idempotency key is unique per (operation, hook, key). Reused in another
 * operation it never meets the first: no id, row or payload of A's is handed to B, and B's own
 * event is stored and sent. Reused in the same operation and hook for a different event or hook
 * config it is an IdempotencyConflictError: nothing stored, nothing of the earlier row returned.
 * Real Redis, Postgres, worker and 127.0.0.1 receivers.
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IdempotencyConflictError, isHookrelayError } from '../../../src/entry/index.ts';
import { rowsOf } from '../../../src/store/db.ts';
import { startReceiver, type Receiver } from '../../support/receiver.ts';
import { createStack, fetchHook, waitFor, type Stack } from './harness.ts';

let stack: Stack;
let a: Receiver;
let b: Receiver;

beforeAll(async () => {
  stack = await createStack('sect2');
  a = await startReceiver({ status: 200 });
  b = await startReceiver({ status: 200 });
  await stack.startWorker();
});

afterAll(async () => {
  await stack?.cleanup();
  await a?.close();
  await b?.close();
});

const countRows = async (operationId: string) =>
  rowsOf<{ n: number }>(await stack.db.store.db.execute(sql`select count(*)::int as n from deliveries where operation_id = ${operationId}`))[0]?.n;

async function conflictOf(call: Promise<unknown>): Promise<IdempotencyConflictError> {
  const error = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(IdempotencyConflictError);
  expect(isHookrelayError(error)).toBe(true);
  return error as IdempotencyConflictError;
}

describe('SEC-T2 idempotency keys are scoped to (operation, hook, key) (Q1a)', () => {
  it("SEC-T2: B reusing A's key and hook id in another operation gets its own delivery; A's row and payload never reach B", async () => {
    const first = await stack.producer.enqueue({
      operationId: 'sect2-op-a',
      type: 'onComplete',
      event: { secret: 'A-private-payload' },
      hooks: [fetchHook('audit', `${a.url}/a`)],
      idempotencyKey: 'req-42',
    });
    const second = await stack.producer.enqueue({
      operationId: 'sect2-op-b',
      type: 'onComplete',
      event: { mine: 'B-payload' },
      hooks: [fetchHook('audit', `${b.url}/b`)],
      idempotencyKey: 'req-42',
    });
    expect(second.deliveryIds).toHaveLength(1);
    expect(second.deliveryIds).not.toEqual(first.deliveryIds);
    const bRow = await stack.producer.getDelivery(second.deliveryIds[0]!);
    expect(bRow).toMatchObject({ operationId: 'sect2-op-b', hookId: 'audit' });
    await waitFor(() => a.requests.length >= 1 && b.requests.length >= 1, 10_000, 'both deliveries');
    expect(b.requests).toHaveLength(1);
    expect(b.requests[0]!.body).toContain('B-payload');
    expect(b.requests.some((r) => r.body.includes('A-private-payload'))).toBe(false);
    expect(a.requests.filter((r) => r.body.includes('A-private-payload'))).toHaveLength(1);
  });

  it("TEN-7 (N2, Q1a): another tenant reusing my operation id, hook id and key gets its own delivery; mine is never handed to it, and each tenant's repeat finds its own", async () => {
    // One operation id, hook id and key, named by two tenants (no operation record: nothing else to check against).
    const enqueueAs = (tenant: string, event: Record<string, unknown>, path: string) =>
      stack.producer.enqueue({ operationId: 'ten7-op', tenant, type: 'onComplete', event, hooks: [fetchHook('audit', path)], idempotencyKey: 'req-7' });
    const mine = await enqueueAs('tenant-b', { secret: 'B-private-payload' }, `${b.url}/ten7-b`);
    const theirs = await enqueueAs('tenant-a', { mine: 'A-payload' }, `${a.url}/ten7-a`);
    expect(theirs.deliveryIds).toHaveLength(1);
    expect(theirs.deliveryIds).not.toEqual(mine.deliveryIds);
    expect((await stack.producer.getDelivery(theirs.deliveryIds[0]!))?.tenant).toBe('tenant-a');
    const mineAgain = await enqueueAs('tenant-b', { secret: 'B-private-payload' }, `${b.url}/ten7-b`);
    expect(mineAgain.deliveryIds).toEqual(mine.deliveryIds);
    await waitFor(() => a.requests.some((r) => r.path === '/ten7-a') && b.requests.some((r) => r.path === '/ten7-b'), 10_000, "both tenants' deliveries");
    expect(a.requests.filter((r) => r.path === '/ten7-a').map((r) => r.body)).not.toContain('B-private-payload');
    expect(await countRows('ten7-op')).toBe(2);
  });

  it('SEC-T2: the same key, operation and hook with a different event is a conflict: nothing stored, nothing of the earlier row returned', async () => {
    const hooks = [fetchHook('audit', `${a.url}/c`)];
    const base = { operationId: 'sect2-op-c', type: 'onComplete' as const, hooks, idempotencyKey: 'req-7' };
    const first = await stack.producer.enqueue({ ...base, event: { n: 1, secret: 'first-event' } });
    const error = await conflictOf(stack.producer.enqueue({ ...base, event: { n: 2 } }));
    expect(error.code).toBe('HOOKRELAY_IDEMPOTENCY_CONFLICT');
    expect(error).toMatchObject({ operationId: 'sect2-op-c', hookId: 'audit', idempotencyKey: 'req-7' });
    expect(error.message).not.toContain('first-event');
    expect(error.message).not.toContain(first.deliveryIds[0]!);
    expect(Object.values(error).join(' ')).not.toContain(first.deliveryIds[0]!);
    expect(await countRows('sect2-op-c')).toBe(1);
    // The same event again is the idempotent repeat: the same id, nothing new.
    const again = await stack.producer.enqueue({ ...base, event: { n: 1, secret: 'first-event' } });
    expect(again.deliveryIds).toEqual(first.deliveryIds);
    expect(await countRows('sect2-op-c')).toBe(1);
  });

  it('SEC-T2: the same key and hook id with another hook config (another URL) is a conflict; the earlier delivery is untouched', async () => {
    const base = { operationId: 'sect2-op-d', type: 'onComplete' as const, event: { n: 1 }, idempotencyKey: 'req-8' };
    const first = await stack.producer.enqueue({ ...base, hooks: [fetchHook('audit', `${a.url}/d`)] });
    await conflictOf(stack.producer.enqueue({ ...base, hooks: [fetchHook('audit', `${b.url}/elsewhere`)] }));
    expect(await countRows('sect2-op-d')).toBe(1);
    await waitFor(() => a.requests.some((r) => r.path === '/d'), 10_000, 'the first delivery');
    expect(b.requests.some((r) => r.path === '/elsewhere')).toBe(false);
    // The receiver answers before the worker writes the outcome: wait for the row, not the request.
    await waitFor(async () => (await stack.producer.getDelivery(first.deliveryIds[0]!))?.status === 'delivered', 10_000, 'the first delivery recorded');
  });

  it('SEC-T2: a conflicting call never costs its group-committed batch-mates their events; a call of several hooks stores none of them', async () => {
    const hooks = [fetchHook('h1', `${a.url}/e1`), fetchHook('h2', `${a.url}/e2`)];
    await stack.producer.enqueue({ operationId: 'sect2-op-e', type: 'onComplete', event: { n: 1 }, hooks: [hooks[0]!], idempotencyKey: 'req-9' });
    const calls = [
      // h2 is new, h1 conflicts: the whole call stores nothing.
      stack.producer.enqueue({ operationId: 'sect2-op-e', type: 'onComplete', event: { n: 2 }, hooks, idempotencyKey: 'req-9' }),
      ...Array.from({ length: 20 }, (_, i) =>
        stack.producer.enqueue({ operationId: `sect2-mate-${i}`, type: 'onComplete', event: { i }, hooks: [hooks[0]!], idempotencyKey: 'req-9' }),
      ),
    ];
    const settled = await Promise.allSettled(calls);
    expect(settled[0]!.status).toBe('rejected');
    expect((settled[0] as PromiseRejectedResult).reason).toBeInstanceOf(IdempotencyConflictError);
    expect(settled.slice(1).every((s) => s.status === 'fulfilled')).toBe(true);
    expect(await countRows('sect2-op-e')).toBe(1);
    for (let i = 0; i < 20; i += 1) expect(await countRows(`sect2-mate-${i}`)).toBe(1);
  });

  it('SEC-T2: 40 concurrent calls with one key, two different events: one event is stored, the same-event calls share its id, the others conflict', async () => {
    const hooks = [fetchHook('audit', `${a.url}/f`)];
    const results = await Promise.allSettled(
      Array.from({ length: 40 }, (_, i) =>
        stack.producer.enqueue({ operationId: 'sect2-op-f', type: 'onComplete', event: { variant: i % 2 }, hooks, idempotencyKey: 'req-10' }),
      ),
    );
    expect(await countRows('sect2-op-f')).toBe(1);
    const ok = results.flatMap((r, i) => (r.status === 'fulfilled' ? [{ i, ids: r.value.deliveryIds }] : []));
    const failed = results.flatMap((r, i) => (r.status === 'rejected' ? [{ i, reason: r.reason as unknown }] : []));
    expect(ok.length + failed.length).toBe(40);
    expect(new Set(ok.map((o) => o.i % 2)).size).toBe(1); // only one event's calls succeeded
    expect(new Set(ok.map((o) => o.ids.join()))).toHaveProperty('size', 1);
    expect(failed.length).toBe(20);
    for (const f of failed) expect(f.reason).toBeInstanceOf(IdempotencyConflictError);
  });
});
