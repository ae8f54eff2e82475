/**
 * SEC-H1 (issue 24): QStash destination traversal, at every entry and in the worker, against the
 * local QStash stand-in (test/support/qstashServer.ts) and the real `@upstash/qstash` client.
 * Before the fix, `https://93.184.216.34/x/../../../../../../v2/keys/rotate` passed the SSRF check
 * and the SDK sent `POST /v2/keys/rotate` with the operator's QSTASH_TOKEN.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { HookConfigError } from '../../../src/contract/errors.ts';
import { WebhookConfigSchema } from '../../../src/contract/webhook.ts';
import { createOperationStore } from '../../../src/operations/operationStore.ts';
import { deliverNotification } from '../../../src/notify/deliver.ts';
import { FetchTransport } from '../../../src/send/fetchTransport.ts';
import { createQStashPublisher } from '../../../src/notify/qstashTransport.ts';
import { HookDispatcher } from '../../../src/dispatch/hookDispatcher.ts';
import { silentLogger } from '../../../src/observability/logger.ts';
import { addDeliveryJobs } from '../../../src/queue/jobs.ts';
import { insertDeliveries, newDeliveryId } from '../../../src/store/deliveriesRepo.ts';
import { startQStashServer, type QStashServer } from '../../support/qstashServer.ts';
import { startReceiver, type Receiver } from '../../support/receiver.ts';
import { captureLogger } from '../../unit/dispatch/helpers.ts';
import { createStack, waitFor, type Stack } from './harness.ts';

const PUBLIC = 'https://93.184.216.34';
/** The reproductions of the issue: API routes reached through the destination. */
const REPRODUCTIONS = [
  `${PUBLIC}/x/../../../../../../v2/keys/rotate`,
  `${PUBLIC}/x/%2e%2e/%2e%2e/%2e%2e/%2e%2e/v2/keys/rotate`,
  `${PUBLIC}/x/%2E%2e/.%2E/%252e%252e/v2/keys/rotate`,
  `${PUBLIC}/x/../../../v2/topics/victims/endpoints`,
  `${PUBLIC}/x/../../../v2/publish/http://169.254.169.254/latest/meta-data/`,
  `${PUBLIC}/x?qstash_token=attacker`,
];

describe('SEC-H1 QStash destinations at every entry and in the worker', () => {
  let stack: Stack;
  let qstash: QStashServer;
  let rx: Receiver;

  beforeAll(async () => {
    stack = await createStack('sech1');
    qstash = await startQStashServer({ retryBackoffMs: 10 });
    rx = await startReceiver({ status: 200 });
  });
  afterAll(async () => {
    await stack.cleanup();
    await qstash.close();
    await rx.close();
  });
  beforeEach(() => {
    rx.requests.length = 0;
  });

  const hook = (url: string, extra: Record<string, unknown> = {}) => ({
    id: 'steal',
    type: 'onComplete' as const,
    webhook: { url, delivery: 'qstash' as const, ...extra },
  });

  async function refusal(run: () => unknown): Promise<HookConfigError> {
    try {
      await run();
    } catch (error) {
      expect(error).toBeInstanceOf(HookConfigError);
      return error as HookConfigError;
    }
    throw new Error('expected a HookConfigError');
  }

  it.each(REPRODUCTIONS)(
    'SEC-H1 QStash destination: refused at register, createOperation, producer.enqueue and queue-mode dispatch, nothing stored (%s)',
    async (url) => {
      const ops = createOperationStore({ store: stack.db.store });
      const local = new HookDispatcher({ mode: 'local', env: {}, logger: silentLogger() });
      const queued = new HookDispatcher({ mode: 'queue', producer: stack.producer, env: {}, logger: silentLogger() });
      try {
        const errors = [
          await refusal(() => local.register('op-h1-register', [hook(url)])),
          await refusal(() => queued.register('op-h1-queue', [hook(url)])),
          await refusal(() => ops.createOperation({ operationId: 'op-h1-create', hooks: [hook(url)] })),
          await refusal(() => stack.producer.enqueue({ operationId: 'op-h1-enqueue', type: 'onComplete', event: {}, hooks: [hook(url)] })),
          await refusal(() => stack.producer.enqueueMany([{ operationId: 'op-h1-many', type: 'onComplete', event: {}, hooks: [hook(url)] }])),
        ];
        for (const error of errors) {
          expect(error.issues.map((i) => i.path)).toEqual(['webhook.url']);
          expect(error.message).toMatch(/qstash destination/);
        }
      } finally {
        await queued.close();
      }
      const stored = await stack.db.store.pool!.query<{ n: number }>(`select count(*)::int as n from deliveries where operation_id like 'op-h1-%'`);
      expect(stored.rows[0]!.n).toBe(0);
      expect(qstash.requests).toHaveLength(0);
    },
  );

  it('SEC-H1 QStash destination: job data injected past the producer is re-checked by the worker: a permanent failure with a reason, no request to QStash', async () => {
    const log = captureLogger();
    const worker = await stack.startWorker({ QSTASH_URL: qstash.url, QSTASH_TOKEN: qstash.token }, { logger: log.logger });
    const ids: string[] = [];
    for (const [i, url] of REPRODUCTIONS.entries()) {
      // fallback 'none': the old code, once QStash refused the request, must not fetch a public address either.
      const forged = {
        id: 'steal',
        type: 'onComplete',
        webhook: { ...WebhookConfigSchema.parse({ url: 'https://example.com/' }), url, delivery: 'qstash', fallback: 'none' },
      };
      const id = newDeliveryId();
      ids.push(id);
      const operationId = `op-h1-job-${i}`;
      await insertDeliveries(stack.db.store.db, [
        { id, operationId, eventType: 'onComplete', hookId: forged.id, hook: forged, transport: 'qstash', payload: { operationId }, occurredAt: new Date() },
      ]);
      await addDeliveryJobs(worker.queue, [
        {
          deliveryId: id,
          generation: 0,
          attempt: { operationId, hook: JSON.stringify(forged), body: JSON.stringify({ operationId }), attemptCount: 0, generationAttemptCount: 0 },
        },
      ]);
    }
    await waitFor(async () => {
      const done = await Promise.all(ids.map((id) => stack.producer.getDelivery(id)));
      return done.every((d) => d?.status === 'failed');
    }, 15_000);
    for (const id of ids) {
      const row = (await stack.producer.getDelivery(id))!;
      expect(row.attemptCount).toBe(1);
      expect(row.attempts[0]).toMatchObject({ errorClass: 'configuration', outcome: 'failed' });
    }
    expect(qstash.requests).toHaveLength(0);
    expect(qstash.publishRequestCount()).toBe(0);
    expect(rx.requests).toHaveLength(0);
    // The reason is logged by rule and field, never the URL.
    expect(log.text()).toMatch(/webhook\.url: a qstash destination must not/);
    expect(log.text()).not.toContain('v2/keys');
    await worker.stop();
  });

  it('SEC-H1 QStash destination: a ledger row read back by the worker (reconciler/replay path) is re-checked too; fallback fetch never runs', async () => {
    const worker = await stack.startWorker({ QSTASH_URL: qstash.url, QSTASH_TOKEN: qstash.token });
    const url = `${rx.url}/x/%2e%2e/%2e%2e/v2/keys/rotate`;
    const forged = { id: 'row', type: 'onComplete', webhook: { ...WebhookConfigSchema.parse({ url: `${rx.url}/ok` }), url, delivery: 'qstash' } };
    const id = newDeliveryId();
    await insertDeliveries(stack.db.store.db, [
      {
        id,
        operationId: 'op-h1-row',
        eventType: 'onComplete',
        hookId: 'row',
        hook: forged,
        transport: 'qstash',
        payload: { operationId: 'op-h1-row' },
        occurredAt: new Date(),
      },
    ]);
    await addDeliveryJobs(worker.queue, [{ deliveryId: id, generation: 0 }]);
    await waitFor(async () => (await stack.producer.getDelivery(id))?.status === 'failed', 15_000);
    expect((await stack.producer.getDelivery(id))?.lastErrorClass).toBe('configuration');
    expect(qstash.requests).toHaveLength(0);
    expect(rx.requests).toHaveLength(0);
    await worker.stop();
  });

  it('SEC-H1 QStash destination: deliverNotification re-checks a config that skipped the schema (no publish, no fallback), and the publisher refuses on its own', async () => {
    const transport = new FetchTransport({ allowedCidrs: '127.0.0.0/8' });
    const publisher = createQStashPublisher({ url: qstash.url, token: qstash.token });
    try {
      for (const url of [...REPRODUCTIONS, `${rx.url}/x/../../v2/keys/rotate`, `${rx.url}/x#frag`, `${rx.url}/x%2f..%2f..%2fv2%2fkeys`]) {
        const webhook = { ...WebhookConfigSchema.parse({ url: `${rx.url}/ok` }), url, delivery: 'qstash' as const };
        const result = await deliverNotification({
          webhook,
          hookId: 'raw',
          payload: '{}',
          deliveryId: 'dlv_01J9Z8Y7X6W5V4T3S2R1Q0P9N8',
          generation: 0,
          env: {},
          signingSecrets: [],
          qstash: publisher,
          fetchTransport: transport,
          logger: silentLogger(),
        });
        expect(result).toMatchObject({ ok: false, errorClass: 'configuration', permanent: true, transport: 'qstash', fellBack: false });
        expect(result.ok ? '' : result.detail).toMatch(/qstash destination/);
        // The publisher itself (given the raw destination) refuses before any request.
        expect(await publisher.publish({ destination: url, body: '{}', headers: {}, timeoutMs: 1000, deduplicationId: 'd-1' })).toEqual({
          ok: false,
          errorClass: 'configuration',
        });
      }
      expect(qstash.requests).toHaveLength(0);
      expect(rx.requests).toHaveLength(0);

      // An ordinary destination is published in its canonical form, on exactly /v2/publish/<destination>.
      const ok = await publisher.publish({ destination: `${rx.url}/in/a b`, body: '{}', headers: {}, timeoutMs: 1000, deduplicationId: 'd-ok' });
      expect(ok.ok).toBe(true);
      expect(qstash.requests.map((r) => r.path)).toEqual([`/v2/publish/${rx.url}/in/a%20b`]);
    } finally {
      await transport.close();
    }
  });
});
