/**
 * Q4 critical flags that tell the truth, through a real in-process worker: a critical
 * (`fallback: 'none'`) QStash delivery whose outcome no callback reports (no HOOKRELAY_PUBLIC_URL)
 * is flagged at its deadline like a failed one, with the reason; `--critical` lists both states;
 * a replay that delivers every critical delivery of an operation clears its flag. The QStash is
 * the local server speaking the @upstash/qstash protocol; Redis, Postgres and receivers are real.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HookDispatcher } from '../../../src/dispatch/hookDispatcher.ts';
import { silentLogger } from '../../../src/observability/logger.ts';
import { replayDeliveries } from '../../../src/admin/replay.ts';
import { listDeliveries } from '../../../src/store/deliveriesRepo.ts';
import { getOperation } from '../../../src/store/operationsRepo.ts';
import type { DeliveryService } from '../../../src/worker/service.ts';
import { startQStashServer, type QStashServer } from '../../support/qstashServer.ts';
import { startReceiver, type Receiver } from '../../support/receiver.ts';
import { createStack, fetchHook, waitFor, type Stack } from './harness.ts';

let stack: Stack;
let qstash: QStashServer;
let rx: Receiver;
let worker: DeliveryService;

const status = async (id: string) => (await stack.producer.getDelivery(id))?.status;
const flagged = async (op: string) => (await getOperation(stack.db.store.db, op))?.criticalDeliveryFailure;
/** Time passing, without waiting for it: the deadline the worker stored is moved into the past. */
const passDeadline = (id: string) => stack.db.store.pool!.query(`UPDATE deliveries SET deadline_at = now() - interval '1 second' WHERE id = $1`, [id]);
const criticalFailures = async () => (await worker.metrics.criticalFailures.get()).values.reduce((n, v) => n + v.value, 0);

beforeAll(async () => {
  stack = await createStack('critflag');
  qstash = await startQStashServer({ retryBackoffMs: 10 });
  rx = await startReceiver({ status: 200 });
  // No HOOKRELAY_PUBLIC_URL: QStash sends no callbacks, the ledger can only say QStash took it.
  worker = await stack.startWorker({ QSTASH_URL: qstash.url, QSTASH_TOKEN: qstash.token });
});

afterAll(async () => {
  await stack?.cleanup();
  await qstash?.close();
  await rx?.close();
});

describe('LH-Q2 Q4: critical flags that tell the truth', () => {
  it('LH-Q2 Q4: a critical QStash delivery with no callbacks is flagged at its deadline (outcome unknown), counted, and listed by --critical beside a failed one', async () => {
    const d = new HookDispatcher({ mode: 'queue', producer: stack.producer, env: {}, allowedCidrs: '127.0.0.1/32', logger: silentLogger() });
    try {
      d.register('op-unknown', [
        fetchHook('critical-qstash', `${rx.url}/q`, { delivery: 'qstash', fallback: 'none' }),
        fetchHook('plain-qstash', `${rx.url}/p`, { delivery: 'qstash' }),
      ]);
      await d.dispatch('op-unknown', 'onComplete', { operationId: 'op-unknown', reason: 'done' });
    } finally {
      await d.close();
    }
    const rows = await listDeliveries(stack.db.store.db, { operationId: 'op-unknown' });
    const critical = rows.find((r) => r.hookId === 'critical-qstash')!;
    const plain = rows.find((r) => r.hookId === 'plain-qstash')!;
    await waitFor(
      async () => (await status(critical.id)) === 'accepted_by_qstash' && (await status(plain.id)) === 'accepted_by_qstash',
      15_000,
      'QStash accepted both',
    );
    await waitFor(() => rx.requests.length >= 2, 15_000, 'QStash delivered both');
    const before = await criticalFailures();

    // Before its deadline nothing is claimed: QStash may still be trying.
    await worker.reconciler.runOnce();
    expect(await flagged('op-unknown')).not.toBe(true);
    expect((await stack.producer.getDelivery(critical.id))?.lastErrorClass).toBeNull();

    await passDeadline(critical.id);
    await passDeadline(plain.id);
    await worker.reconciler.runOnce();
    const marked = (await stack.producer.getDelivery(critical.id))!;
    expect(marked).toMatchObject({ status: 'accepted_by_qstash', lastErrorClass: 'CriticalHookDeliveryError', failureReason: 'qstash_outcome_unknown' });
    expect(await flagged('op-unknown')).toBe(true);
    expect(await criticalFailures()).toBe(before + 1);
    // A non-critical row says only what is known.
    expect(await stack.producer.getDelivery(plain.id)).toMatchObject({ status: 'accepted_by_qstash', lastErrorClass: null, failureReason: null });
    // A second pass marks nothing again (the row left the sweep's index).
    await worker.reconciler.runOnce();
    expect(await criticalFailures()).toBe(before + 1);

    // A critical fetch delivery that failed for good: the other state --critical lists.
    const failedOne = await stack.producer.enqueue({
      operationId: 'op-failed',
      type: 'onComplete',
      event: {},
      hooks: [fetchHook('critical-fetch', 'http://127.0.0.1:1/dead', { fallback: 'none' })],
    });
    await waitFor(async () => (await status(failedOne.deliveryIds[0]!)) === 'failed', 15_000, 'critical fetch failed');
    const listed = await listDeliveries(stack.db.store.db, { critical: true });
    const byId = new Map(listed.map((r) => [r.id, r]));
    expect(byId.get(critical.id)).toMatchObject({ status: 'accepted_by_qstash', failureReason: 'qstash_outcome_unknown' });
    expect(byId.get(failedOne.deliveryIds[0]!)).toMatchObject({ status: 'failed', lastErrorClass: 'CriticalHookDeliveryError' });
    expect(byId.has(plain.id)).toBe(false);
  });

  it('LH-Q2 Q4: a replay that delivers every critical delivery of an operation clears its flag; one still failing keeps it', async () => {
    rx.setHandler((req) => (req.path.startsWith('/down') ? { status: 500 } : { status: 200 }));
    const enqueued = await stack.producer.enqueue({
      operationId: 'op-replay',
      type: 'onComplete',
      event: {},
      hooks: [fetchHook('first', `${rx.url}/down/1`, { fallback: 'none' }), fetchHook('second', `${rx.url}/down/2`, { fallback: 'none' })],
    });
    const [first, second] = enqueued.deliveryIds as [string, string];
    await waitFor(async () => (await status(first)) === 'failed' && (await status(second)) === 'failed', 15_000, 'both critical deliveries failed');
    expect(await flagged('op-replay')).toBe(true);

    rx.setHandler({ status: 200 });
    await replayDeliveries(stack.db.store.db, worker.queue, [first], { includeAccepted: false });
    await waitFor(async () => (await status(first)) === 'delivered', 15_000, 'first replayed');
    expect(await flagged('op-replay')).toBe(true); // `second` has still not been delivered

    await replayDeliveries(stack.db.store.db, worker.queue, [second], { includeAccepted: false });
    await waitFor(async () => (await status(second)) === 'delivered', 15_000, 'second replayed');
    await waitFor(async () => (await flagged('op-replay')) === false, 5_000, 'flag cleared');
    expect((await listDeliveries(stack.db.store.db, { critical: true, operationId: 'op-replay' })).length).toBe(0);
  });
});
