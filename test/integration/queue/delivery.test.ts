import { randomBytes } from 'node:crypto';
import { Receiver } from '@upstash/qstash';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EnqueueInput } from '../../../src/queue/types.ts';
import { startReceiver, type Receiver as HttpReceiver } from '../../support/receiver.ts';
import { startQStashServer, type QStashServer } from '../../support/qstashServer.ts';
import { createStack, fetchHook, waitFor, type Stack } from './harness.ts';

const EVENTS = 1_000;
const secret = () => `whsec_${randomBytes(32).toString('base64')}`;

function header(headers: Record<string, string | string[] | undefined>, name: string): string {
  const v = headers[name];
  return Array.isArray(v) ? (v[0] ?? '') : (v ?? '');
}

describe('durable delivery: fetch path', () => {
  let stack: Stack;
  let rx: HttpReceiver;
  const secrets = [secret(), secret()];

  beforeAll(async () => {
    stack = await createStack('deliver');
    rx = await startReceiver({ status: 204 });
  });
  afterAll(async () => {
    await stack.cleanup();
    await rx.close();
  });

  it('Q1/Q6: 1,000 events × 2 hooks are each delivered exactly once, webhook-id = delivery id, signatures verify', async () => {
    const worker = await stack.startWorker({ HOOKRELAY_SIGNING_SECRETS: secrets.join(' ') });
    const items: EnqueueInput[] = Array.from({ length: EVENTS }, (_, i) => ({
      operationId: `op-${i}`,
      type: 'onComplete',
      event: { reason: 'done', n: i },
      hooks: [fetchHook('a', `${rx.url}/a`), fetchHook('b', `${rx.url}/b`)],
    }));
    const { deliveryIds, perItem, queued } = await stack.producer.enqueueMany(items);
    expect(queued).toBe(true);
    expect(deliveryIds).toHaveLength(EVENTS * 2);
    expect(perItem[7]).toEqual([deliveryIds[14], deliveryIds[15]]);
    await waitFor(() => rx.requests.length >= EVENTS * 2, 60_000, 'all deliveries');
    await new Promise((r) => setTimeout(r, 300)); // a duplicate would show up here

    const seen = rx.requests.map((r) => header(r.headers, 'webhook-id'));
    expect(new Set(seen).size).toBe(EVENTS * 2);
    expect(seen.length).toBe(EVENTS * 2);
    expect(new Set(seen)).toEqual(new Set(deliveryIds));

    // Every signature verifies with the standardwebhooks library, under both secrets (rotation).
    for (const s of secrets) {
      const wh = new Webhook(s);
      for (const req of rx.requests) {
        const body = JSON.parse(req.body) as Record<string, unknown>;
        expect(body.deliveryId).toBe(header(req.headers, 'webhook-id'));
        expect(() =>
          wh.verify(req.body, {
            'webhook-id': header(req.headers, 'webhook-id'),
            'webhook-timestamp': header(req.headers, 'webhook-timestamp'),
            'webhook-signature': header(req.headers, 'webhook-signature'),
          }),
        ).not.toThrow();
      }
    }
    const sample = await stack.producer.getDelivery(deliveryIds[0] as string);
    expect(sample).toMatchObject({ status: 'delivered', attemptCount: 1, lastErrorClass: null });
    expect(sample?.attempts).toHaveLength(1);
    expect(sample?.deliveredAt).toBeInstanceOf(Date);
    // Q11: jobs are removed once done; the ledger is the record.
    const counts = await worker.queue.getJobCounts('completed', 'failed', 'waiting', 'active', 'delayed');
    expect(counts).toMatchObject({ completed: 0, failed: 0, waiting: 0, active: 0, delayed: 0 });
  }, 90_000);
});

describe('durable delivery: QStash path', () => {
  let stack: Stack;
  let rx: HttpReceiver;
  let qstash: QStashServer;
  const signing = secret();

  beforeAll(async () => {
    stack = await createStack('qstash');
    rx = await startReceiver({ status: 200 });
    qstash = await startQStashServer({ retryBackoffMs: 10 });
  });
  afterAll(async () => {
    await stack.cleanup();
    await rx.close();
    await qstash.close();
  });

  it('Q7: publishes with dedup id <deliveryId>-<generation>; deliveries carry webhook-* headers and verify with Receiver and standardwebhooks', async () => {
    const worker = await stack.startWorker({ QSTASH_URL: qstash.url, QSTASH_TOKEN: qstash.token, HOOKRELAY_SIGNING_SECRETS: signing });
    // SEC-H1: no query on a QStash destination (it would land in the API request's query).
    const hooks = [fetchHook('q', `${rx.url}/q`, { delivery: 'qstash' })];
    const { deliveryIds } = await stack.producer.enqueueMany(
      Array.from({ length: 20 }, (_, i) => ({ operationId: `op-${i}`, type: 'onComplete' as const, event: { n: i }, hooks })),
    );
    await waitFor(() => rx.requests.length >= 20, 20_000, 'qstash deliveries');

    const receiver = new Receiver({ currentSigningKey: qstash.currentSigningKey, nextSigningKey: qstash.nextSigningKey });
    const wh = new Webhook(signing);
    for (const req of rx.requests) {
      await expect(receiver.verify({ signature: header(req.headers, 'upstash-signature'), body: req.body, url: `${rx.url}${req.path}` })).resolves.toBe(true);
      const id = header(req.headers, 'webhook-id');
      expect(deliveryIds).toContain(id);
      expect(() =>
        wh.verify(req.body, {
          'webhook-id': id,
          'webhook-timestamp': header(req.headers, 'webhook-timestamp'),
          'webhook-signature': header(req.headers, 'webhook-signature'),
        }),
      ).not.toThrow();
    }
    expect(new Set(qstash.messages.map((m) => m.deduplicationId))).toEqual(new Set(deliveryIds.map((id) => `${id}-0`)));
    expect(qstash.messages.every((m) => m.maxRetries === 3)).toBe(true);
    // Without HOOKRELAY_PUBLIC_URL the ledger can only say QStash took it.
    await waitFor(async () => (await stack.producer.getDelivery(deliveryIds[19] as string))?.status === 'accepted_by_qstash');
    expect(await stack.producer.getDelivery(deliveryIds[0] as string)).toMatchObject({ status: 'accepted_by_qstash', attemptCount: 1, transport: 'qstash' });
    await worker.stop();
  });

  it('Q7: with HOOKRELAY_PUBLIC_URL, verified callbacks record delivered, failure callbacks record failed', async () => {
    const port = await freePort();
    const service = await stack.startWorker(
      {
        QSTASH_URL: qstash.url,
        QSTASH_TOKEN: qstash.token,
        QSTASH_CURRENT_SIGNING_KEY: qstash.currentSigningKey,
        QSTASH_NEXT_SIGNING_KEY: qstash.nextSigningKey,
        HOOKRELAY_PUBLIC_URL: `http://127.0.0.1:${port}`,
        HOOKRELAY_HTTP_PORT: String(port),
      },
      { qstashRetries: 1 },
    );
    expect(service.httpPort).toBe(port);
    rx.setHandler((req) => (req.path.startsWith('/bad') ? { status: 500 } : { status: 200 }));
    const ok = await stack.producer.enqueue({
      operationId: 'cb-ok',
      type: 'onComplete',
      event: {},
      hooks: [fetchHook('ok', `${rx.url}/good`, { delivery: 'qstash' })],
    });
    const bad = await stack.producer.enqueue({
      operationId: 'cb-bad',
      type: 'onComplete',
      event: {},
      hooks: [fetchHook('bad', `${rx.url}/bad`, { delivery: 'qstash', fallback: 'none' })],
    });
    await waitFor(async () => (await stack.producer.getDelivery(ok.deliveryIds[0] as string))?.status === 'delivered', 15_000, 'callback delivered');
    await waitFor(async () => (await stack.producer.getDelivery(bad.deliveryIds[0] as string))?.status === 'failed', 15_000, 'failure callback');
    const failed = await stack.producer.getDelivery(bad.deliveryIds[0] as string);
    expect(failed?.lastErrorClass).toBe('CriticalHookDeliveryError');
    expect(failed?.lastHttpStatus).toBe(500);
    expect(failed?.attempts.some((a) => a.transport === 'qstash' && a.outcome === 'failed')).toBe(true);
    const { getOperation } = await import('../../../src/store/operationsRepo.ts');
    expect((await getOperation(stack.db.store.db, 'cb-bad'))?.criticalDeliveryFailure).toBe(true);

    // A forged callback changes nothing.
    const forged = await fetch(`http://127.0.0.1:${port}/qstash/callback?deliveryId=${ok.deliveryIds[0]}&generation=0`, {
      method: 'POST',
      headers: { 'upstash-signature': 'forged' },
      body: JSON.stringify({ status: 500, sourceMessageId: 'm' }),
    });
    expect(forged.status).toBe(401);
    expect((await stack.producer.getDelivery(ok.deliveryIds[0] as string))?.status).toBe('delivered');
  });
});

async function freePort(): Promise<number> {
  const net = await import('node:net');
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}
