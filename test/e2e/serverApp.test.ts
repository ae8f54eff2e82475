import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServerApp } from '../../examples/server-app.ts';
import { loadSettings } from '../../src/config/settings.ts';
import { silentLogger } from '../../src/observability/logger.ts';
import { startDeliveryService, type DeliveryService } from '../../src/worker/service.ts';
import { createTestStore, type TestStore } from '../support/db.ts';
import { startReceiver, type Receiver } from '../support/receiver.ts';
import { deleteKeys, queueKeys } from '../support/redisKeys.ts';

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

describe('examples/server-app.ts: a server app on a queue-mode dispatcher (D8, R1, Q1)', () => {
  let t: TestStore;
  let receiver: Receiver;
  let worker: DeliveryService;
  let app: Awaited<ReturnType<typeof startServerApp>>;
  const queueName = `example-${randomBytes(4).toString('hex')}`;
  let policy: 'allow' | 'deny' = 'allow';

  beforeAll(async () => {
    t = await createTestStore('example');
    receiver = await startReceiver((req) =>
      req.path === '/policy'
        ? {
            status: 200,
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify(policy === 'allow' ? { decision: 'allow' } : { decision: 'deny', reason: 'no shell today' }),
          }
        : { status: 204 },
    );
    worker = await startDeliveryService({
      settings: loadSettings({ REDIS_URL, HOOKRELAY_QUEUE: queueName, HOOKRELAY_ALLOWED_CIDRS: '127.0.0.1/32', HOOKRELAY_HTTP_PORT: '0', LOG_LEVEL: 'silent' }),
      store: t.store,
      logger: silentLogger(),
      http: false,
      env: {},
    });
    app = await startServerApp({
      port: 0,
      databaseUrl: t.url,
      redisUrl: REDIS_URL,
      queueName,
      notifyUrl: `${receiver.url}/notify`,
      policyUrl: `${receiver.url}/policy`,
      allowedCidrs: '127.0.0.1/32',
    });
  }, 60_000);

  afterAll(async () => {
    await app?.close();
    await worker?.stop();
    await receiver?.close();
    await deleteKeys(queueKeys(queueName));
    await t?.cleanup();
  }, 60_000);

  const waitForNotifications = async (operationId: string, n: number) => {
    const deadline = Date.now() + 20_000;
    for (;;) {
      const got = receiver.requests.filter((r) => r.path === '/notify' && JSON.parse(r.body).operationId === operationId);
      if (got.length >= n) return got;
      if (Date.now() > deadline) throw new Error(`only ${got.length} of ${n} notifications for ${operationId}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };

  it('asks the decision webhook before the tool call, and the worker delivers the enqueued events', async () => {
    policy = 'allow';
    const res = await fetch(`${app.url}/runs`, { method: 'POST', body: JSON.stringify({ tool: 'shell/exec', args: { cmd: 'ls' } }) });
    const out = (await res.json()) as { operationId: string; decision: string };
    expect(res.status).toBe(200);
    expect(out.decision).toBe('allow');
    const policyCall = receiver.requests.filter((r) => r.path === '/policy').at(-1)!;
    expect(JSON.parse(policyCall.body)).toMatchObject({ operationId: out.operationId, identifier: 'shell', apiName: 'exec', args: { cmd: 'ls' } });
    const notes = await waitForNotifications(out.operationId, 2);
    expect(notes.map((r) => JSON.parse(r.body).hookType).sort()).toEqual(['afterStep', 'onComplete']);
    for (const n of notes) expect(n.headers['webhook-id']).toMatch(/^dlv_/);
    const ledger = await t.store.pool!.query<{ status: string }>('select status from deliveries where operation_id = $1', [out.operationId]);
    expect(ledger.rows).toHaveLength(2);
  });

  it('a deny blocks the tool call with the receiver reason (R2, R5b)', async () => {
    policy = 'deny';
    const res = await fetch(`${app.url}/runs`, { method: 'POST', body: JSON.stringify({ tool: 'shell/exec', args: { cmd: 'rm' } }) });
    const out = (await res.json()) as { operationId: string; decision: string; toolResult: { content: string; error: string } };
    expect(out.decision).toBe('blocked');
    expect(out.toolResult).toMatchObject({ content: 'no shell today', error: 'hook_denied' });
    await waitForNotifications(out.operationId, 2);
  });
});
