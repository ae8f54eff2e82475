/**
 * SEC-H3 (issue 24) through the real worker process: a receiver answering 2xx with `ok\u0000`
 * among 50 batch-mates. Before, the bad attempt could not be written, the whole batched UPDATE
 * failed (batch-mates delivered twice) and the reconciler re-sent it forever. Now its excerpt is
 * stored sanitised (U+FFFD), every delivery reaches the receiver exactly once, and nothing is
 * re-sent after reconciler passes.
 */
import { randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHookProducer } from '../../src/queue/producer.ts';
import type { HookProducer } from '../../src/queue/types.ts';
import { createTestStore, type TestStore } from '../support/db.ts';
import { startReceiver, type Receiver } from '../support/receiver.ts';
import { TEST_REDIS_URL, waitFor } from '../integration/queue/harness.ts';
import { spawnWorker } from '../support/hookrelayProcess.ts';
import { deleteKeys, queueKeys } from '../support/redisKeys.ts';

const RECONCILE_INTERVAL_MS = 500;
/** The worker's reconciler leaves rows alone for this long after their last update (its default grace). */
const RECONCILE_GRACE_MS = 5_000;

describe('SEC-H3 worker process: a 2xx body Postgres cannot store', () => {
  let db: TestStore;
  let rx: Receiver;
  let producer: HookProducer;
  let queue: string;

  beforeAll(async () => {
    db = await createTestStore('e2e_sech3');
    rx = await startReceiver((req) => ({ status: 200, body: req.path === '/bad' ? 'ok\u0000' : 'ok' }));
    queue = `e2e-sech3-${randomBytes(4).toString('hex')}`;
    producer = createHookProducer({ store: db.store, redisUrl: TEST_REDIS_URL, queueName: queue, env: {} });
  });
  afterAll(async () => {
    await producer.close();
    await rx.close();
    await deleteKeys(queueKeys(queue));
    await db.cleanup();
  });

  it('SEC-H3 `ok\\u0000` receiver with 50 batch-mates: each of the 51 delivered exactly once, the bad one stored with a sanitised excerpt, never re-sent', async () => {
    const items = Array.from({ length: 51 }, (_, i) => ({
      operationId: `op-sech3-${i}`,
      type: 'onComplete' as const,
      event: { i },
      hooks: [{ id: i === 25 ? 'bad' : 'mate', type: 'onComplete' as const, webhook: { url: `${rx.url}/${i === 25 ? 'bad' : 'mate'}` } }],
    }));
    // All 51 rows and jobs exist before the worker starts: their outcomes land in shared batches.
    const { deliveryIds, perItem } = await producer.enqueueMany(items);
    expect(deliveryIds).toHaveLength(51);
    const badId = perItem[25]?.[0] as string;

    const worker = spawnWorker({
      DATABASE_URL: db.url,
      REDIS_URL: TEST_REDIS_URL,
      HOOKRELAY_QUEUE: queue,
      HOOKRELAY_HTTP_PORT: '0',
      HOOKRELAY_ALLOWED_CIDRS: '127.0.0.0/8',
      HOOKRELAY_RETRY_SCHEDULE: '0.05,0.1',
      HOOKRELAY_CONCURRENCY: '64',
      HOOKRELAY_RECONCILE_INTERVAL_MS: String(RECONCILE_INTERVAL_MS),
      HOOKRELAY_SHUTDOWN_TIMEOUT_MS: '5000',
    });
    try {
      await worker.ready();
      const settled = async () => {
        const r = await db.store.db.execute(sql`select count(*)::int as n from deliveries where status in ('delivered', 'failed')`);
        return (r as unknown as { rows: Array<{ n: number }> }).rows[0]?.n === 51;
      };
      await waitFor(settled, 30_000, 'all 51 settled');
      // Past the reconciler's grace and several of its passes: a row left due would be re-sent now.
      const quietUntil = Date.now() + RECONCILE_GRACE_MS + 4 * RECONCILE_INTERVAL_MS;
      await waitFor(() => Date.now() > quietUntil, RECONCILE_GRACE_MS + 10 * RECONCILE_INTERVAL_MS, 'reconciler passes');
    } finally {
      worker.kill('SIGTERM');
      await worker.exited;
    }

    const receipts = new Map<string, number>();
    for (const r of rx.requests) {
      const id = String(r.headers['webhook-id']);
      receipts.set(id, (receipts.get(id) ?? 0) + 1);
    }
    expect(new Set(receipts.keys())).toEqual(new Set(deliveryIds));
    expect([...receipts.values()].every((n) => n === 1)).toBe(true);
    expect(rx.requests).toHaveLength(51);

    const bad = await producer.getDelivery(badId);
    expect(bad?.status).toBe('delivered');
    expect(bad?.attemptCount).toBe(1);
    expect(bad?.attempts[0]?.responseExcerpt).toBe('ok\uFFFD');
    for (const id of deliveryIds) expect((await producer.getDelivery(id))?.status).toBe('delivered');
    expect(worker.output()).not.toMatch(/Failed query|params:/);
  }, 90_000);
});
