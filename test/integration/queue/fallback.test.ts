import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getOperation } from '../../../src/store/operationsRepo.ts';
import { startReceiver, type Receiver } from '../../support/receiver.ts';
import { startQStashServer, type QStashServer } from '../../support/qstashServer.ts';
import { createStack, fetchHook, waitFor, type Stack } from './harness.ts';

describe('D7/Q4 fallback and critical deliveries in the worker', () => {
  let stack: Stack;
  let rx: Receiver;
  let qstash: QStashServer;
  const failedJobs: Array<{ id: string | undefined; error: string }> = [];
  const completedJobs: string[] = [];

  beforeAll(async () => {
    stack = await createStack('fallback');
    rx = await startReceiver((req) => ({ status: req.path.startsWith('/fail') ? 500 : 200 }));
    qstash = await startQStashServer();
    qstash.setDown(true);
    const service = await stack.startWorker({ QSTASH_URL: qstash.url, QSTASH_TOKEN: qstash.token });
    service.worker.on('failed', (job, err) => failedJobs.push({ id: job?.id, error: err.name }));
    service.worker.on('completed', (job) => completedJobs.push(job.id ?? ''));
  });
  afterAll(async () => {
    await stack.cleanup();
    await rx.close();
    await qstash.close();
  });

  const settle = (id: string) =>
    waitFor(async () => ['delivered', 'failed'].includes((await stack.producer.getDelivery(id))?.status ?? ''), 15_000, `settled ${id}`);
  const requestsTo = (path: string) => rx.requests.filter((r) => r.path === path).length;

  it('D7: QStash down → exactly one direct fetch per attempt', async () => {
    const publishesBefore = qstash.publishRequestCount();
    const ok = await stack.producer.enqueue({
      operationId: 'fb-ok',
      type: 'onComplete',
      event: {},
      hooks: [fetchHook('q', `${rx.url}/ok`, { delivery: 'qstash' })],
    });
    const bad = await stack.producer.enqueue({
      operationId: 'fb-bad',
      type: 'onComplete',
      event: {},
      hooks: [fetchHook('q', `${rx.url}/fail-fb`, { delivery: 'qstash' })],
    });
    await settle(ok.deliveryIds[0] as string);
    await settle(bad.deliveryIds[0] as string);
    await new Promise((r) => setTimeout(r, 200));
    expect(requestsTo('/ok')).toBe(1);
    const failed = await stack.producer.getDelivery(bad.deliveryIds[0] as string);
    expect(failed).toMatchObject({ status: 'failed', attemptCount: 3, lastErrorClass: 'http_error' });
    expect(requestsTo('/fail-fb')).toBe(3);
    expect(failed?.attempts.every((a) => a.transport === 'fetch')).toBe(true);
    // One publish per attempt (1 + 3), each followed by exactly one fetch.
    expect(qstash.publishRequestCount() - publishesBefore).toBe(4);
    expect(await stack.producer.getDelivery(ok.deliveryIds[0] as string)).toMatchObject({ status: 'delivered', attemptCount: 1 });
  });

  it("Q4: fallback 'none' → no fetch ever, retried per schedule, then failed as CriticalHookDeliveryError with the operation flagged", async () => {
    const { deliveryIds } = await stack.producer.enqueue({
      operationId: 'crit-op',
      type: 'onComplete',
      event: {},
      hooks: [fetchHook('signed-only', `${rx.url}/never`, { delivery: 'qstash', fallback: 'none' })],
    });
    const id = deliveryIds[0] as string;
    await settle(id);
    const d = await stack.producer.getDelivery(id);
    expect(d).toMatchObject({ status: 'failed', attemptCount: 3, lastErrorClass: 'CriticalHookDeliveryError' });
    expect(d?.attempts.map((a) => a.errorClass)).toEqual(['network_error', 'network_error', 'network_error']);
    expect(requestsTo('/never')).toBe(0);
    expect((await getOperation(stack.db.store.db, 'crit-op'))?.criticalDeliveryFailure).toBe(true);
    // Fatal for the job: it failed (never completed) with CriticalHookDeliveryError.
    await waitFor(() => failedJobs.some((f) => f.id === id));
    expect(failedJobs.find((f) => f.id === id)?.error).toBe('CriticalHookDeliveryError');
    expect(completedJobs).not.toContain(id);
  });

  it("Q4: a direct fetch with fallback 'none' that keeps failing is critical too; the metric counts it", async () => {
    const { deliveryIds } = await stack.producer.enqueue({
      operationId: 'crit-fetch',
      type: 'onComplete',
      event: {},
      hooks: [fetchHook('crit', `${rx.url}/fail-crit`, { fallback: 'none' })],
    });
    await settle(deliveryIds[0] as string);
    expect(await stack.producer.getDelivery(deliveryIds[0] as string)).toMatchObject({
      status: 'failed',
      attemptCount: 3,
      lastErrorClass: 'CriticalHookDeliveryError',
      lastHttpStatus: 500,
    });
    expect(requestsTo('/fail-crit')).toBe(3);
    // The ledger row is written first; the operation flag and the metric follow it.
    const metric = () => stack.worker().metrics.registry.getSingleMetricAsString('hookrelay_critical_failures_total');
    await waitFor(async () => /hookrelay_critical_failures_total 2/.test(await metric()), 5_000, 'the critical-failure metric');
    expect(await metric()).toMatch(/hookrelay_critical_failures_total 2/);
  });
});
