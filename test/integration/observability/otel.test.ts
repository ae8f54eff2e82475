/**
 * OTel: traces from dispatch to the receiver. An in-memory span exporter (the SDK is a dev
 * dependency only), a real queue-mode dispatcher and producer, a real in-process worker, real
 * Postgres and Redis, a real receiver on 127.0.0.1.
 */
import { randomBytes } from 'node:crypto';
import { context, ProxyTracer, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider, type ReadableSpan } from '@opentelemetry/sdk-trace';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { HookDispatcher } from '../../../src/dispatch/hookDispatcher.ts';
import { silentLogger } from '../../../src/observability/logger.ts';
import { activeTracer } from '../../../src/observability/tracing.ts';
import { createHookProducer } from '../../../src/queue/producer.ts';
import { openOperatorQueue } from '../../../src/admin/operatorQueue.ts';
import { replayBatch } from '../../../src/admin/replay.ts';
import type { HookProducer } from '../../../src/queue/types.ts';
import { listDeliveries } from '../../../src/store/deliveriesRepo.ts';
import { loadSettings } from '../../../src/config/settings.ts';
import { startDeliveryWorker, type RunningDeliveryWorker } from '../../../src/worker/startDeliveryWorker.ts';
import { createTestStore, type TestStore } from '../../support/db.ts';
import { startReceiver, type Receiver } from '../../support/receiver.ts';
import { TEST_REDIS_URL } from '../../support/redisKeys.ts';
import { createStack, fetchHook, waitFor } from '../queue/harness.ts';
import { startQStashServer } from '../../support/qstashServer.ts';

const SECRET = `otel-secret-${randomBytes(6).toString('hex')}`;

describe('OTel: spans from dispatch to the receiver', () => {
  let db: TestStore;
  let rx: Receiver;
  let producer: HookProducer;
  let dispatcher: HookDispatcher;
  let worker: RunningDeliveryWorker;
  let provider: TracerProvider;
  const exporter = new InMemorySpanExporter();
  const queueName = `otel-${randomBytes(4).toString('hex')}`;
  const env: NodeJS.ProcessEnv = {
    DATABASE_URL: '',
    REDIS_URL: TEST_REDIS_URL,
    HOOKRELAY_QUEUE: queueName,
    HOOKRELAY_ALLOWED_CIDRS: '127.0.0.0/8',
    HOOKRELAY_HTTP_PORT: '0',
    HOOKRELAY_RETRY_SCHEDULE: '0.05',
    HOOKRELAY_RECONCILE_INTERVAL_MS: '300',
    HOOKRELAY_SHUTDOWN_TIMEOUT_MS: '1000',
    HOOKRELAY_BREAKER_FAILURES: '100',
    HOOK_SECRET: SECRET,
    HOOKRELAY_TEMPLATE_ENV: 'HOOK_SECRET', // SEC-H2: templates are denied unless listed
  };
  const hookFor = (path: string) => ({
    id: `h-${path}`,
    type: 'onComplete' as const,
    webhook: { url: `${rx.url}/${path}?token=query-secret`, headers: { authorization: 'Bearer ${HOOK_SECRET}' }, allowedEnvVars: ['HOOK_SECRET'] },
  });
  const spans = (name?: string): ReadableSpan[] => exporter.getFinishedSpans().filter((s) => name === undefined || s.name === name);

  beforeAll(async () => {
    db = await createTestStore('otel');
    env.DATABASE_URL = db.url;
    rx = await startReceiver({ status: 200 });
    provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    trace.setGlobalTracerProvider(provider);
    worker = await startDeliveryWorker({ env, logger: silentLogger(), migrate: false });
    producer = createHookProducer({ store: db.store, redisUrl: TEST_REDIS_URL, queueName, env });
    dispatcher = new HookDispatcher({ mode: 'queue', producer, logger: silentLogger(), env });
  }, 30_000);
  beforeEach(() => exporter.reset());
  afterAll(async () => {
    await dispatcher?.close();
    await producer?.close();
    await worker?.stop();
    await rx?.close();
    await db?.cleanup();
    trace.disable();
    context.disable();
    await provider?.shutdown();
  });

  it('OTel: one queued event → dispatch → enqueue → deliver spans in one trace; the receiver’s traceparent carries that trace id', async () => {
    const op = `op-${randomBytes(3).toString('hex')}`;
    dispatcher.register(op, [hookFor('one')]);
    await dispatcher.dispatch(op, 'onComplete', { operationId: op, reason: 'done' });
    await waitFor(() => spans('hookrelay.deliver').length === 1, 15_000, 'the deliver span');
    const [dispatch] = spans('hookrelay.dispatch');
    const [enqueue] = spans('hookrelay.enqueue');
    const [deliver] = spans('hookrelay.deliver');
    expect(dispatch && enqueue && deliver).toBeTruthy();
    const traceId = dispatch!.spanContext().traceId;
    expect(enqueue!.spanContext().traceId).toBe(traceId);
    expect(deliver!.spanContext().traceId).toBe(traceId);
    expect(enqueue!.parentSpanContext?.spanId).toBe(dispatch!.spanContext().spanId);
    expect(deliver!.parentSpanContext?.spanId).toBe(enqueue!.spanContext().spanId);
    expect(dispatch!.attributes).toMatchObject({ 'hookrelay.operation_id': op, 'hookrelay.hook_type': 'onComplete' });
    const [row] = await listDeliveries(db.store.db, { operationId: op });
    expect(deliver!.attributes).toMatchObject({
      'hookrelay.delivery_id': row!.id,
      'hookrelay.attempt': 1,
      'hookrelay.transport': 'fetch',
      'hookrelay.outcome': 'delivered',
      'http.request.method': 'POST',
      'http.response.status_code': 200,
      'server.address': '127.0.0.1',
      'url.full': `${rx.url}/one`,
    });
    const req = rx.requests.find((r) => r.headers['webhook-id'] === row!.id)!;
    const tp = String(req.headers.traceparent);
    expect(tp).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/);
    expect(tp.split('-')[1]).toBe(traceId);
    expect(tp.split('-')[2]).toBe(deliver!.spanContext().spanId);
    // No payload, header value, query string or resolved secret in any attribute.
    const attrs = JSON.stringify(exporter.getFinishedSpans().map((s) => s.attributes));
    for (const leak of [SECRET, 'query-secret', 'Bearer', '"reason":"done"']) expect(attrs).not.toContain(leak);
  });

  it('OTel: a retry is a second attempt span in the same trace', async () => {
    const op = `op-${randomBytes(3).toString('hex')}`;
    let calls = 0;
    rx.setHandler(() => (++calls === 1 ? { status: 503 } : { status: 200 }));
    dispatcher.register(op, [hookFor('retry')]);
    await dispatcher.dispatch(op, 'onComplete', { operationId: op, reason: 'done' });
    await waitFor(() => spans('hookrelay.deliver').length === 2, 15_000, 'two attempt spans');
    rx.setHandler({ status: 200 });
    const [first, second] = spans('hookrelay.deliver').sort((a, b) => Number(a.attributes['hookrelay.attempt']) - Number(b.attributes['hookrelay.attempt']));
    expect(first!.spanContext().traceId).toBe(second!.spanContext().traceId);
    expect(first!.spanContext().traceId).toBe(spans('hookrelay.dispatch')[0]!.spanContext().traceId);
    expect(first!.attributes).toMatchObject({ 'hookrelay.attempt': 1, 'hookrelay.outcome': 'retrying', 'http.response.status_code': 503, 'error.type': '503' });
    expect(second!.attributes).toMatchObject({ 'hookrelay.attempt': 2, 'hookrelay.outcome': 'delivered' });
    expect(first!.status.code).toBe(2); // ERROR
    // The metrics say the same: the retry is an attempt, not a finished delivery.
    const metrics = await (await fetch(`http://127.0.0.1:${worker.httpPort}/metrics`)).text();
    expect(metrics).toMatch(/hookrelay_delivery_attempts_total\{outcome="retrying",transport="fetch"\} [1-9]/);
    expect(metrics).toMatch(/hookrelay_deliveries_total\{outcome="delivered",transport="fetch"\} [1-9]/);
    expect(metrics).not.toMatch(/hookrelay_deliveries_total\{outcome="retrying"/);
  });

  it('OTel: a replay starts a new trace linked to the original; its attempt continues the replay trace', async () => {
    const op = `op-${randomBytes(3).toString('hex')}`;
    rx.setHandler({ status: 500 });
    dispatcher.register(op, [hookFor('replay')]);
    await dispatcher.dispatch(op, 'onComplete', { operationId: op, reason: 'done' });
    await waitFor(async () => (await listDeliveries(db.store.db, { operationId: op, status: 'failed' })).length === 1, 15_000, 'a failed delivery');
    const original = spans('hookrelay.dispatch')[0]!.spanContext().traceId;
    rx.setHandler({ status: 200 });
    exporter.reset();
    const [row] = await listDeliveries(db.store.db, { operationId: op });
    const operator = openOperatorQueue(loadSettings(env));
    try {
      const results = await replayBatch(db.store.db, await operator.queue(), [row!.id], false);
      expect(results).toEqual([{ id: row!.id, result: 'replayed', generation: 1 }]);
    } finally {
      await operator.close();
    }
    await waitFor(() => spans('hookrelay.deliver').length === 1, 15_000, 'the replayed attempt span');
    const [replay] = spans('hookrelay.replay');
    const [deliver] = spans('hookrelay.deliver');
    expect(replay!.spanContext().traceId).not.toBe(original);
    expect(replay!.links.map((l) => l.context.traceId)).toEqual([original]);
    expect(deliver!.spanContext().traceId).toBe(replay!.spanContext().traceId);
    expect(deliver!.attributes).toMatchObject({ 'hookrelay.generation': 1, 'hookrelay.outcome': 'delivered' });
    const req = rx.requests.filter((r) => r.headers['webhook-id'] === row!.id).at(-1)!;
    expect(String(req.headers.traceparent).split('-')[1]).toBe(replay!.spanContext().traceId);
  });

  it('OTel: through QStash too — the published message forwards traceparent and the receiver joins the trace', async () => {
    const qstash = await startQStashServer({ retryBackoffMs: 10 });
    const stack = await createStack('otelq');
    try {
      await stack.startWorker({ QSTASH_URL: qstash.url, QSTASH_TOKEN: qstash.token, HOOKRELAY_ALLOWED_CIDRS: '127.0.0.0/8' });
      const { deliveryIds } = await stack.producer.enqueue({
        operationId: 'op-q',
        type: 'onComplete',
        event: {},
        hooks: [fetchHook('q', `${rx.url}/via-qstash`, { delivery: 'qstash' })],
      });
      await waitFor(() => rx.requests.some((r) => r.path === '/via-qstash'), 15_000, 'the QStash-forwarded delivery');
      const enqueue = spans('hookrelay.enqueue').find((sp) => sp.attributes['hookrelay.operation_id'] === 'op-q')!;
      const deliver = spans('hookrelay.deliver').find((sp) => sp.attributes['hookrelay.delivery_id'] === deliveryIds[0])!;
      expect(deliver.attributes).toMatchObject({ 'hookrelay.transport': 'qstash', 'hookrelay.outcome': 'accepted_by_qstash' });
      expect(deliver.spanContext().traceId).toBe(enqueue.spanContext().traceId);
      const req = rx.requests.find((r) => r.path === '/via-qstash')!;
      expect(String(req.headers.traceparent).split('-')[1]).toBe(enqueue.spanContext().traceId);
    } finally {
      await stack.cleanup();
      await qstash.close();
    }
  }, 30_000);

  it('OTel: a decision webhook call is a hookrelay.decision span with its outcome, and its request carries traceparent', async () => {
    rx.setHandler({ status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ decision: 'deny', reason: 'policy' }) });
    const local = new HookDispatcher({ logger: silentLogger(), env: { HOOKRELAY_ALLOWED_CIDRS: '127.0.0.0/8' } });
    local.register('op-d', [{ id: 'guard', type: 'beforeToolCall', webhook: { url: `${rx.url}/decide`, responseHandling: 'toolCall' } }]);
    const outcome = await local.evaluateToolCall('op-d', {
      toolCallId: 'c1',
      assistantMessageId: 'm',
      identifier: 'shell',
      apiName: 'exec',
      args: { cmd: 'ls' },
      callIndex: 0,
      stepIndex: 0,
      operationId: 'op-d',
      executor: 'server',
    });
    await local.close();
    expect(outcome.status).toBe('blocked');
    const [decision] = spans('hookrelay.decision');
    expect(decision!.attributes).toMatchObject({ 'hookrelay.hook_id': 'guard', 'hookrelay.outcome': 'deny', 'url.full': `${rx.url}/decide` });
    const req = rx.requests.filter((r) => r.path === '/decide').at(-1)!;
    expect(String(req.headers.traceparent).split('-')[1]).toBe(decision!.spanContext().traceId);
    rx.setHandler({ status: 200 });
  });
});

describe('OTel: without an SDK nothing is traced', () => {
  it('OTel: with no SDK registered, a queued event end to end starts no span at all (not even a no-op one)', async () => {
    expect(activeTracer()).toBeUndefined();
    const startSpan = vi.spyOn(ProxyTracer.prototype, 'startSpan');
    const startActive = vi.spyOn(ProxyTracer.prototype, 'startActiveSpan');
    const db = await createTestStore('otel_off');
    const rx = await startReceiver({ status: 200 });
    const queueName = `otel-off-${randomBytes(4).toString('hex')}`;
    const env = {
      DATABASE_URL: db.url,
      REDIS_URL: TEST_REDIS_URL,
      HOOKRELAY_QUEUE: queueName,
      HOOKRELAY_ALLOWED_CIDRS: '127.0.0.0/8',
      HOOKRELAY_HTTP_PORT: '0',
      HOOKRELAY_SHUTDOWN_TIMEOUT_MS: '1000',
    };
    const worker = await startDeliveryWorker({ env, logger: silentLogger(), migrate: false });
    const producer = createHookProducer({ store: db.store, redisUrl: TEST_REDIS_URL, queueName, env });
    const d = new HookDispatcher({ mode: 'queue', producer, logger: silentLogger(), env });
    try {
      d.register('op', [{ id: 'h', type: 'onComplete', webhook: { url: `${rx.url}/x` } }]);
      await d.dispatch('op', 'onComplete', { operationId: 'op', reason: 'done' });
      await waitFor(() => rx.requests.length === 1, 15_000, 'the delivery');
      expect(rx.requests[0]!.headers.traceparent).toBeUndefined();
      expect(startSpan).not.toHaveBeenCalled();
      expect(startActive).not.toHaveBeenCalled();
    } finally {
      startSpan.mockRestore();
      startActive.mockRestore();
      await d.close();
      await producer.close();
      await worker.stop();
      await rx.close();
      await db.cleanup();
    }
  }, 30_000);
});
