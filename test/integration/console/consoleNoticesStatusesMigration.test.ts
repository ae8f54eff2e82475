/**
 * SEC-T5 console items, over a real HTTP server on 127.0.0.1 with real Postgres and Redis:
 * - notices come from a fixed table of codes: `?done=<any text>` shows nothing of the text (a
 *   crafted link put a phishing line on a signed-in operator's endpoints page);
 * - `/console/api/statuses` with more ids than it looks up says so (`truncated`, `limit`,
 *   `omitted`): ids past 1,000 were dropped silently;
 * - a console on a database hookrelay never migrated answers 503 saying to run `hookrelay migrate`
 *   (it answered 500).
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSettings } from '../../../src/config/settings.ts';
import { createConsole, type Console } from '../../../src/console/consoleHandler.ts';
import { startHttpServer, type RunningHttpServer } from '../../../src/observability/httpServer.ts';
import { silentLogger } from '../../../src/observability/logger.ts';
import { openOperatorQueue, type OperatorQueue } from '../../../src/admin/operatorQueue.ts';
import { insertDeliveries, newDeliveryId } from '../../../src/store/deliveriesRepo.ts';
import { openStore, type Store } from '../../../src/store/db.ts';
import { createTestSchema, createTestStore, type TestSchema, type TestStore } from '../../support/db.ts';
import { deleteKeys, TEST_REDIS_URL } from '../../support/redisKeys.ts';

const TOKEN = `console-token-${randomBytes(12).toString('hex')}`;
const bearer = { authorization: `Bearer ${TOKEN}` };

type Reply = { status: number; body: string };
function get(port: number, path: string): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, headers: bearer }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

type Running = { port: number; queue: string; app: Console; server: RunningHttpServer; operator: OperatorQueue };

async function start(databaseUrl: string, store: Store): Promise<Running> {
  const queue = `console-t5-${randomBytes(4).toString('hex')}`;
  const settings = loadSettings({ DATABASE_URL: databaseUrl, REDIS_URL: TEST_REDIS_URL, HOOKRELAY_QUEUE: queue, HOOKRELAY_CONSOLE_TOKEN: TOKEN });
  const operator = openOperatorQueue(settings);
  let port: number | undefined;
  const app = createConsole({
    db: store.db,
    settings,
    operator,
    token: TOKEN,
    logger: silentLogger(),
    sampleQueue: false,
    listening: () => (port === undefined ? undefined : { host: '127.0.0.1', port }),
  });
  const server = await startHttpServer({ port: 0, host: '127.0.0.1', logger: silentLogger(), handlers: [app.handle] });
  port = server.port as number;
  return { port, queue, app, server, operator };
}
async function stop(r: Running | undefined): Promise<void> {
  if (!r) return;
  await r.server.close();
  await r.app.close();
  await r.operator.close();
  await deleteKeys(`bull:${r.queue}:*`);
}

describe('SEC-T5 console: notices, statuses, unmigrated database', () => {
  let db: TestStore;
  let migrated: Running;
  let bare: TestSchema;
  let bareStore: Store;
  let unmigrated: Running;
  beforeAll(async () => {
    db = await createTestStore('console_t5');
    migrated = await start(db.url, db.store);
    bare = await createTestSchema('console_t5_bare');
    bareStore = await openStore({ databaseUrl: bare.url });
    unmigrated = await start(bare.url, bareStore);
  });
  afterAll(async () => {
    await stop(migrated);
    await stop(unmigrated);
    await bareStore?.close();
    await bare?.drop();
    await db?.cleanup();
  });

  it('SEC-T5 notices: ?done=<arbitrary text> on the endpoints page shows nothing of it; a known code shows its fixed sentence', async () => {
    const phishing = 'Session expired: re-enter your token at https://evil.example/login';
    const page = await get(migrated.port, `/console/endpoints?done=${encodeURIComponent(phishing)}`);
    expect(page.status).toBe(200);
    expect(page.body).not.toContain('evil.example');
    expect(page.body).not.toContain('re-enter your token');
    const counted = await get(migrated.port, `/console/endpoints?done=enabled_replayed&n=${encodeURIComponent('3 <b>evil</b>')}`);
    expect(counted.body).toContain('Endpoint enabled; its held deliveries were replayed.');
    expect(counted.body).not.toContain('evil');
    expect((await get(migrated.port, '/console/endpoints?done=enabled_replayed&n=12')).body).toContain('Endpoint enabled; 12 held deliveries were replayed.');
    expect((await get(migrated.port, '/console/endpoints?done=enabled')).body).toContain('Endpoint enabled: workers deliver to it again.');
  });

  it('SEC-T5 statuses: 1,200 ids → the first 1,000 looked up, truncated: true, limit 1000, omitted 200 (never dropped silently)', async () => {
    // Short unknown ids (a URL of 1,200 real ids is past Node's 16 KB header limit), three real rows among them.
    const ids = Array.from({ length: 1_200 }, (_, i) => (i === 0 || i === 999 || i === 1_100 ? newDeliveryId() : `x${i}`));
    const row = (id: string) => ({
      id,
      operationId: 'op-t5-statuses',
      eventType: 'onComplete' as const,
      hookId: 'h',
      hook: { id: 'h', type: 'onComplete', webhook: { url: 'http://127.0.0.1:9/x' } },
      transport: 'fetch' as const,
      payload: {},
      endpointKey: 'http://127.0.0.1:9/x',
      occurredAt: new Date(),
    });
    await insertDeliveries(db.store.db, [row(ids[0]!), row(ids[999]!), row(ids[1_100]!)]);
    const reply = await get(migrated.port, `/console/api/statuses?ids=${ids.join(',')}`);
    expect(reply.status).toBe(200);
    const json = JSON.parse(reply.body) as { statuses: Record<string, string>; truncated: boolean; limit: number; omitted?: number };
    expect(json).toMatchObject({ truncated: true, limit: 1_000, omitted: 200 });
    expect(Object.keys(json.statuses).sort()).toEqual([ids[0]!, ids[999]!].sort());
    // The caller asks again for the rest, and gets it.
    const rest = JSON.parse((await get(migrated.port, `/console/api/statuses?ids=${ids.slice(1_000).join(',')}`)).body) as typeof json;
    expect(rest).toMatchObject({ truncated: false, limit: 1_000 });
    expect(Object.keys(rest.statuses)).toEqual([ids[1_100]!]);
  });

  it('SEC-T5 unmigrated database: pages and the API answer 503 saying to run hookrelay migrate, never 500', async () => {
    for (const path of ['/console', '/console/deliveries', '/console/endpoints']) {
      const page = await get(unmigrated.port, path);
      expect(page.status, path).toBe(503);
      expect(page.body, path).toContain('run `hookrelay migrate`');
    }
    const api = await get(unmigrated.port, `/console/api/statuses?ids=${newDeliveryId()}`);
    expect(api.status).toBe(503);
    expect(JSON.parse(api.body)).toMatchObject({ code: 'not_migrated' });
    expect(JSON.parse(api.body).error).toContain('hookrelay migrate');
  });
});
