/**
 * OTel: `hookrelay worker` turns the OpenTelemetry SDK on from the standard variables and exports
 * its spans over OTLP/HTTP — here to a stand-in collector on 127.0.0.1 that records what it gets.
 * The receiver sees a traceparent whose trace id is the one the producer's enqueue span started.
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHookProducer } from '../../src/queue/producer.ts';
import { createTestStore, type TestStore } from '../support/db.ts';
import { spawnWorker } from '../support/hookrelayProcess.ts';
import { startReceiver, type Receiver } from '../support/receiver.ts';
import { TEST_REDIS_URL } from '../support/redisKeys.ts';
import { waitFor } from '../integration/queue/harness.ts';

describe('OTel: the worker process exports its spans when OTEL_* says so', () => {
  let db: TestStore;
  let rx: Receiver;
  let collector: http.Server;
  let collectorUrl: string;
  const exports: Array<{ path: string; bytes: number; type: string }> = [];

  beforeAll(async () => {
    db = await createTestStore('otel_worker');
    rx = await startReceiver({ status: 200 });
    collector = http.createServer((req, res) => {
      let bytes = 0;
      req.on('data', (d: Buffer) => (bytes += d.length));
      req.on('end', () => {
        exports.push({ path: req.url ?? '', bytes, type: String(req.headers['content-type']) });
        res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
      });
    });
    await new Promise<void>((r) => collector.listen(0, '127.0.0.1', r));
    collectorUrl = `http://127.0.0.1:${(collector.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await rx?.close();
    await new Promise<void>((r) => collector.close(() => r()));
    await db?.cleanup();
  });

  it('OTel: OTEL_EXPORTER_OTLP_ENDPOINT set → the worker’s deliver spans reach the collector; the receiver joins the producer’s trace', async () => {
    const queueName = `otel-w-${randomBytes(3).toString('hex')}`;
    const worker = spawnWorker({
      DATABASE_URL: db.url,
      REDIS_URL: TEST_REDIS_URL,
      HOOKRELAY_QUEUE: queueName,
      HOOKRELAY_HTTP_PORT: '0',
      HOOKRELAY_ALLOWED_CIDRS: '127.0.0.0/8',
      HOOKRELAY_SHUTDOWN_TIMEOUT_MS: '2000',
      OTEL_EXPORTER_OTLP_ENDPOINT: collectorUrl,
      OTEL_BSP_SCHEDULE_DELAY: '100',
    });
    // The producer side: an application with its own SDK (here in-memory), as a server app would have.
    const exporter = new InMemorySpanExporter();
    const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    trace.setGlobalTracerProvider(provider);
    const producer = createHookProducer({ store: db.store, redisUrl: TEST_REDIS_URL, queueName, env: {} });
    try {
      await worker.ready();
      expect(worker.output()).toContain('OpenTelemetry tracing on');
      const { deliveryIds } = await producer.enqueue({
        operationId: 'op',
        type: 'onComplete',
        event: {},
        hooks: [{ id: 'h', type: 'onComplete', webhook: { url: `${rx.url}/t` } }],
      });
      await waitFor(() => rx.requests.some((r) => r.headers['webhook-id'] === deliveryIds[0]), 15_000, 'the delivery');
      const enqueue = exporter.getFinishedSpans().find((s) => s.name === 'hookrelay.enqueue')!;
      const req = rx.requests.find((r) => r.headers['webhook-id'] === deliveryIds[0])!;
      expect(String(req.headers.traceparent).split('-')[1]).toBe(enqueue.spanContext().traceId);
      await waitFor(() => exports.some((e) => e.path === '/v1/traces' && e.bytes > 0), 15_000, 'an OTLP export');
      expect(exports.find((e) => e.path === '/v1/traces')!.type).toMatch(/protobuf|json/);
    } finally {
      await producer.close();
      trace.disable();
      context.disable();
      await provider.shutdown();
      expect(await worker.stop()).toBe(0);
    }
  }, 60_000);

  it('OTel: nothing asked, OTEL_TRACES_EXPORTER=none or OTEL_SDK_DISABLED=true → the SDK is not started', async () => {
    const { startOtelSdkFromEnv, otelRequested } = await import('../../src/worker/otelSdk.ts');
    const { silentLogger } = await import('../../src/observability/logger.ts');
    expect(await startOtelSdkFromEnv({}, silentLogger())).toBeUndefined();
    expect(await startOtelSdkFromEnv({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: collectorUrl }, silentLogger())).toBeUndefined();
    expect(await startOtelSdkFromEnv({ OTEL_SDK_DISABLED: 'true', OTEL_EXPORTER_OTLP_ENDPOINT: collectorUrl }, silentLogger())).toBeUndefined();
    expect(otelRequested({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: collectorUrl })).toBe(true);
    expect(otelRequested({ OTEL_TRACES_EXPORTER: 'console' })).toBe(true);
  });
});
