/**
 * FAULT-console-postgres (Q13): the console handler over real HTTP, its Postgres reached through a
 * TCP proxy on 127.0.0.1 (the shared server is never touched). Cut: every page answers 503
 * "Database unreachable" without a stack or the driver's text, the JSON API answers 503 with
 * code database_unreachable; restored: 200 again, without restarting anything.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSettings } from '../../../src/config/settings.ts';
import { createConsole, type Console } from '../../../src/console/consoleHandler.ts';
import { startHttpServer, type RunningHttpServer } from '../../../src/observability/httpServer.ts';
import { silentLogger } from '../../../src/observability/logger.ts';
import { openOperatorQueue, type OperatorQueue } from '../../../src/admin/operatorQueue.ts';
import { openStore, type Store } from '../../../src/store/db.ts';
import { createTestStore, type TestStore } from '../../support/db.ts';
import { deleteKeys, TEST_REDIS_URL } from '../../support/redisKeys.ts';
import { startTcpProxy, type TcpProxy } from '../../support/tcpProxy.ts';
import { waitFor } from '../queue/harness.ts';

const TOKEN = `console-token-${randomBytes(12).toString('hex')}`;
const PAGES = ['/console', '/console/deliveries', '/console/endpoints'];
const APIS = ['/console/api/counts', '/console/api/overview'];

describe('FAULT-console-postgres: the console with Postgres away (Q13)', () => {
  let db: TestStore;
  let proxy: TcpProxy;
  let store: Store;
  let operator: OperatorQueue;
  let app: Console;
  let server: RunningHttpServer;
  const queue = `fault-console-${randomBytes(3).toString('hex')}`;

  beforeAll(async () => {
    db = await createTestStore('fault_console');
    proxy = await startTcpProxy(Number(new URL(db.url).port || 5432));
    store = await openStore({ databaseUrl: proxy.url(db.url) });
    const settings = loadSettings({ DATABASE_URL: proxy.url(db.url), REDIS_URL: TEST_REDIS_URL, HOOKRELAY_QUEUE: queue, HOOKRELAY_CONSOLE_TOKEN: TOKEN });
    operator = openOperatorQueue(settings);
    app = createConsole({ db: store.db, settings, operator, token: TOKEN, logger: silentLogger(), sampleQueue: false, listening: () => undefined });
    server = await startHttpServer({ port: 0, host: '127.0.0.1', logger: silentLogger(), handlers: [app.handle] });
  });
  afterAll(async () => {
    await server?.close();
    await app?.close();
    await operator?.close();
    await store?.close().catch(() => undefined);
    await proxy?.close();
    await deleteKeys(`bull:${queue}:*`);
    await db?.cleanup();
  });

  const get = async (path: string) => {
    const res = await fetch(`http://127.0.0.1:${server.port}${path}`, { headers: { authorization: `Bearer ${TOKEN}` } });
    return { status: res.status, type: res.headers.get('content-type') ?? '', body: await res.text() };
  };

  it('FAULT-console-postgres: cut → pages 503 "Database unreachable" (no stack, no driver text), API JSON 503 database_unreachable; restore → 200 (Q13)', async () => {
    for (const p of [...PAGES, ...APIS]) expect((await get(p)).status, p).toBe(200);

    await proxy.cut();
    for (const p of PAGES) {
      const r = await get(p);
      expect(r.status, p).toBe(503);
      expect(r.type, p).toMatch(/text\/html/);
      expect(r.body, p).toContain('Database unreachable');
      expect(r.body, p).toContain('DATABASE_URL');
      // Never the driver's error or a stack frame.
      expect(r.body, p).not.toMatch(/ECONNREFUSED|\n\s+at |node_modules|\.ts:\d+/);
    }
    for (const p of APIS) {
      const r = await get(p);
      expect(r.status, p).toBe(503);
      expect(r.type, p).toMatch(/application\/json/);
      const body = JSON.parse(r.body) as { error: string; code: string };
      expect(body.code, p).toBe('database_unreachable');
      expect(body.error, p).toMatch(/unreachable/);
      expect(r.body, p).not.toMatch(/ECONNREFUSED|\n\s+at /);
    }

    await proxy.restore();
    // The pool reconnects on the next request: no restart.
    await waitFor(async () => (await get('/console/deliveries')).status === 200, 10_000, 'the console answers again');
    for (const p of [...PAGES, ...APIS]) expect((await get(p)).status, p).toBe(200);
  }, 30_000);
});
