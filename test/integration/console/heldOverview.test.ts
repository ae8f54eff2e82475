/**
 * The console's overview counts held deliveries as undelivered (as `hookrelay stats` does): with
 * only held rows its "Oldest undelivered" is their age, not "none". Real Postgres, Redis, HTTP.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSettings } from '../../../src/config/settings.ts';
import { createConsole, type Console } from '../../../src/console/consoleHandler.ts';
import { startHttpServer, type RunningHttpServer } from '../../../src/observability/httpServer.ts';
import { silentLogger } from '../../../src/observability/logger.ts';
import { openOperatorQueue, type OperatorQueue } from '../../../src/admin/operatorQueue.ts';
import { createHookProducer } from '../../../src/queue/producer.ts';
import { createTestStore, type TestStore } from '../../support/db.ts';
import { deleteKeys, queueKeys, TEST_REDIS_URL } from '../../support/redisKeys.ts';

const TOKEN = `held-token-${randomBytes(12).toString('hex')}`;

describe('UX-4 console overview: held deliveries are undelivered', () => {
  let db: TestStore;
  let app: Console;
  let server: RunningHttpServer;
  let operator: OperatorQueue;
  const queue = `ux4-overview-${randomBytes(4).toString('hex')}`;
  const get = (p: string) => fetch(`http://127.0.0.1:${server.port}${p}`, { headers: { authorization: `Bearer ${TOKEN}` } });

  beforeAll(async () => {
    db = await createTestStore('ux4_overview');
    const settings = loadSettings({ DATABASE_URL: db.url, REDIS_URL: TEST_REDIS_URL, HOOKRELAY_QUEUE: queue, HOOKRELAY_CONSOLE_TOKEN: TOKEN });
    operator = openOperatorQueue(settings);
    app = createConsole({ db: db.store.db, settings, operator, token: TOKEN, logger: silentLogger(), sampleQueue: false, listening: () => undefined });
    server = await startHttpServer({ port: 0, host: '127.0.0.1', logger: silentLogger(), handlers: [app.handle] });
    const producer = createHookProducer({ store: db.store, redisUrl: TEST_REDIS_URL, queueName: queue, env: {} });
    await producer.enqueue({
      operationId: 'op-held',
      type: 'onComplete',
      event: { operationId: 'op-held', reason: 'done' },
      hooks: [{ id: 'h', type: 'onComplete', webhook: { url: 'https://example.com/hook' } }],
    });
    await producer.close();
    // As a worker leaves a delivery to a disabled endpoint: held, created two minutes ago.
    await db.store.pool!.query("update deliveries set status = 'held', created_at = now() - interval '2 minutes'");
  });
  afterAll(async () => {
    await server?.close();
    await app?.close();
    await operator?.close();
    await deleteKeys(queueKeys(queue));
    await db?.cleanup();
  });

  it('UX-4 with only held deliveries the overview and /api/counts give their age, not none', async () => {
    const counts = (await (await get('/console/api/counts')).json()) as { counts: Record<string, number>; oldestUndeliveredAgeMs: number | null };
    expect(counts.counts).toEqual({ held: 1 });
    expect(counts.oldestUndeliveredAgeMs).toBeGreaterThanOrEqual(110_000);
    const page = await (await get('/console')).text();
    const oldest = /data-live="oldest">([^<]*)</.exec(page)?.[1];
    expect(oldest).toBeDefined();
    expect(oldest).not.toBe('none');
  });
});
