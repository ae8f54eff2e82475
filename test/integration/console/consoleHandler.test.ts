/**
 * SEC-H5: the console handler over a real HTTP server on 127.0.0.1, with real Postgres and Redis —
 * unknown asset names (prototype names, encodings, traversal), bad query values (400 with a
 * message, never 500), the Origin check against the public origin (not the Host header), and
 * server-side sessions (sign-out revokes; the cookie is a random id, never the token).
 */
import { createHmac, randomBytes } from 'node:crypto';
import http from 'node:http';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSettings } from '../../../src/config/settings.ts';
import { createConsole, type Console } from '../../../src/console/consoleHandler.ts';
import { startHttpServer, type RunningHttpServer } from '../../../src/observability/httpServer.ts';
import { silentLogger } from '../../../src/observability/logger.ts';
import { openOperatorQueue, type OperatorQueue } from '../../../src/admin/operatorQueue.ts';
import { createTestStore, type TestStore } from '../../support/db.ts';
import { insertDeliveries, newDeliveryId } from '../../../src/store/deliveriesRepo.ts';
import { sql } from 'drizzle-orm';
import { deleteKeys, listKeys, TEST_REDIS_URL } from '../../support/redisKeys.ts';

const TOKEN = `console-token-${randomBytes(12).toString('hex')}`;
const PUBLIC_ORIGIN = 'https://console.example.test';

type Reply = { status: number; headers: http.IncomingHttpHeaders; body: string };

/** One request exactly as written (no client-side path normalisation; Host and Origin as given). */
function request(port: number, path: string, opts: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, method: opts.method ?? 'GET', headers: opts.headers ?? {} }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end(opts.body);
  });
}

type Running = { port: number; origin: string; queue: string; app: Console; server: RunningHttpServer; operator: OperatorQueue };

describe('SEC-H5 console handler (real HTTP, Postgres, Redis)', () => {
  let db: TestStore;
  let plain: Running; // HOOKRELAY_CONSOLE_ORIGIN unset: the listening address
  let proxied: Running; // HOOKRELAY_CONSOLE_ORIGIN=https://console.example.test
  const bearer = { authorization: `Bearer ${TOKEN}` };

  const start = async (extra: Record<string, string>): Promise<Running> => {
    const queue = `console-h5-${randomBytes(4).toString('hex')}`;
    const settings = loadSettings({ DATABASE_URL: db.url, REDIS_URL: TEST_REDIS_URL, HOOKRELAY_QUEUE: queue, HOOKRELAY_CONSOLE_TOKEN: TOKEN, ...extra });
    const operator = openOperatorQueue(settings);
    let port: number | undefined;
    const app = createConsole({
      db: db.store.db,
      settings,
      operator,
      token: TOKEN,
      logger: silentLogger(),
      sampleQueue: false,
      listening: () => (port === undefined ? undefined : { host: '127.0.0.1', port }),
    });
    const server = await startHttpServer({ port: 0, host: '127.0.0.1', logger: silentLogger(), handlers: [app.handle] });
    port = server.port as number;
    return { port, origin: `http://127.0.0.1:${port}`, queue, app, server, operator };
  };
  const stop = async (r: Running | undefined) => {
    if (!r) return;
    await r.server.close();
    await r.app.close();
    await r.operator.close();
    await deleteKeys(`bull:${r.queue}:*`);
  };

  /** Signs in as a browser on `origin`; returns the cookie pair and the page's CSRF value. */
  const signIn = async (r: Running, origin = r.origin) => {
    const res = await request(r.port, '/console/login', {
      method: 'POST',
      headers: { origin, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: TOKEN }).toString(),
    });
    expect(res.status).toBe(303);
    const setCookie = String(res.headers['set-cookie']?.[0] ?? '');
    const cookie = setCookie.split(';')[0] as string;
    const page = await request(r.port, '/console/endpoints', { headers: { cookie } });
    expect(page.status).toBe(200);
    const csrf = /name="_csrf" value="([^"]+)"/.exec(page.body)?.[1] ?? '';
    expect(csrf).not.toBe('');
    return { cookie, setCookie, csrf };
  };
  const post = (r: Running, path: string, headers: Record<string, string>, form: Record<string, string>) =>
    request(r.port, path, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
      body: new URLSearchParams(form).toString(),
    });

  beforeAll(async () => {
    db = await createTestStore('console_h5');
    plain = await start({});
    proxied = await start({ HOOKRELAY_CONSOLE_ORIGIN: PUBLIC_ORIGIN });
  });
  afterAll(async () => {
    await stop(plain);
    await stop(proxied);
    await db?.cleanup();
  });

  it('SEC-H5 assets: unknown names — prototype names, encodings, traversal — are 404 before sign-in, never 500', async () => {
    expect((await request(plain.port, '/console/assets/console.js')).status).toBe(200);
    for (const name of [
      '__proto__',
      'constructor',
      'toString',
      'hasOwnProperty',
      'valueOf',
      '__defineGetter__',
      'isPrototypeOf',
      '%5F%5Fproto%5F%5F',
      '__proto__%00',
      'constructor/prototype',
      '..%2fpackage.json',
      '..%2f..%2fpackage.json',
      '%2e%2e%2fconsole%2fauth.ts',
      '..%5c..%5cpackage.json',
      'console.js%00.png',
      'CONSOLE.JS',
    ]) {
      const res = await request(plain.port, `/console/assets/${name}`);
      expect(res.status, name).toBe(404);
      expect(res.body, name).not.toContain('"name"'); // no file content (package.json) leaked
    }
    // Normalised dot segments leave /console/assets entirely: the server's own 404, still no 500.
    for (const p of ['/console/assets/%2e%2e/%2e%2e/package.json', '/console/assets/../../package.json'])
      expect((await request(plain.port, p)).status, p).toBe(404);
  });

  it('SEC-H5 query values: every bad value is 400 with a message, never 500', async () => {
    const cases: Array<[string, RegExp]> = [
      ['/console/deliveries?since=99999999999999d', /since/],
      ['/console/deliveries?until=99999999999999d', /until/],
      ['/console/deliveries?since=999999999d', /since/],
      ['/console/deliveries?since=not-a-time', /since/],
      ['/console/deliveries?since=2024-13-45', /since/],
      ['/console/deliveries?status=exploded', /status/],
      ['/console/deliveries?type=__proto__', /Event type/],
      ['/console/deliveries?operation=op%00x', /operation/],
      ['/console/deliveries?hook=%C2%85', /hook/],
      ['/console/deliveries?before=dlv_%00', /before/],
      [`/console/deliveries?operation=${'a'.repeat(2_000)}`, /too long/],
      ['/console/deliveries/%E0%A4%A', /malformed %-escape/],
      ['/console/deliveries/%ZZ', /malformed %-escape/],
      ['/console/deliveries/%ED%A0%80', /malformed %-escape/], // a lone surrogate's UTF-8
      ['/console/deliveries/dlv_%00', /control character/],
      ['/console/replay?since=99999999999999d', /since/],
      ['/console/replay?status=delivered', /replay/i],
      ['/console/api/overview?hours=abc', /hours/],
      ['/console/api/overview?hours=1e3', /hours/],
      ['/console/api/overview?hours=0', /hours/],
      ['/console/api/statuses?ids=a,%00', /ids/],
      ['/console/endpoints?done=%1B[31m', /done/],
    ];
    for (const [p, message] of cases) {
      const res = await request(plain.port, p, { headers: bearer });
      expect(res.status, p).toBe(400);
      expect(res.body, p).toMatch(message);
    }
    // A POST with a malformed %-escape in the id: 400, nothing replayed.
    const replay = await post(plain, '/console/deliveries/%ZZ/replay', bearer, {});
    expect(replay.status).toBe(400);
    expect(replay.body).toMatch(/malformed %-escape/);
    // A sign-in `next` that would break (or split) the Location header falls back to /console.
    for (const next of ['/console\r\nset-cookie: x=1', '/console/\u4e2d', '/console\u0000']) {
      const res = await post(plain, '/console/login', { origin: plain.origin }, { token: TOKEN, next });
      expect(res.status, JSON.stringify(next)).toBe(303);
      expect(res.headers.location).toBe('/console');
    }
    // Good values still answer.
    for (const p of ['/console/deliveries?since=2h&status=failed', '/console/api/overview?hours=24', '/console/deliveries/dlv_unknown'])
      expect((await request(plain.port, p, { headers: bearer })).status, p).toBeLessThan(500);
  });

  it('SEC-H5 origin: forms are judged against the public origin, not the Host header', async () => {
    // Default (HOOKRELAY_CONSOLE_ORIGIN unset): the listening address; a forged Host matching a foreign Origin is refused.
    const forged = await post(plain, '/console/login', { host: 'evil.example', origin: 'http://evil.example' }, { token: TOKEN });
    expect(forged.status).toBe(401);
    expect(forged.headers['set-cookie']).toBeUndefined();
    const local = await signIn(plain);
    expect(local.setCookie).not.toMatch(/Secure/); // http origin
    const hostSpoof = await post(
      plain,
      '/console/endpoints/disable',
      { cookie: local.cookie, host: 'evil.example', origin: 'http://evil.example' },
      { _csrf: local.csrf, key: 'x' },
    );
    expect(hostSpoof.status).toBe(403);

    // Configured: only that origin — not even the address the server listens on, whatever Host says.
    const direct = await post(proxied, '/console/login', { origin: proxied.origin }, { token: TOKEN });
    expect(direct.status).toBe(401);
    const remote = await signIn(proxied, PUBLIC_ORIGIN);
    expect(remote.setCookie).toMatch(/; Secure$/); // an https public origin makes the cookie Secure
    const wrongOrigin = await post(
      proxied,
      '/console/endpoints/disable',
      { cookie: remote.cookie, origin: proxied.origin, host: `127.0.0.1:${proxied.port}` },
      { _csrf: remote.csrf, key: 'x' },
    );
    expect(wrongOrigin.status).toBe(403);
    const rightOrigin = await post(proxied, '/console/logout', { cookie: remote.cookie, origin: PUBLIC_ORIGIN }, { _csrf: remote.csrf });
    expect(rightOrigin.status).toBe(303);
  });

  it('SEC-H5 sessions: a random id per sign-in (not the token, not token-derived); per-session CSRF; sign-out revokes server-side', async () => {
    const a = await signIn(plain);
    const b = await signIn(plain);
    const idOf = (cookie: string) => cookie.slice('hookrelay_console='.length);
    expect(idOf(a.cookie)).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(idOf(a.cookie)).not.toBe(idOf(b.cookie));
    expect(a.csrf).not.toBe(b.csrf);
    expect(a.setCookie).toMatch(/^hookrelay_console=[\w-]{43}; HttpOnly; SameSite=Strict; Path=\/console; Max-Age=43200$/);
    expect(a.setCookie).not.toContain(TOKEN);
    // Redis holds hashes only: neither the id nor the token appears in any console key or value.
    const keys = await listKeys(`bull:${plain.queue}:console:session:*`);
    expect(keys.length).toBeGreaterThanOrEqual(2);
    const redis = new Redis(TEST_REDIS_URL);
    const redisDump = (await Promise.all(keys.map(async (k) => `${k}=${await redis.get(k)}`))).join(' ');
    redis.disconnect();
    for (const secret of [idOf(a.cookie), idOf(b.cookie), TOKEN]) expect(redisDump).not.toContain(secret);

    // The cookie of the old format (HMAC of the token) is no session any more.
    const oldCookie = `hookrelay_console=${createHmac('sha256', TOKEN).update('hookrelay-console:session').digest('base64url')}`;
    expect((await request(plain.port, '/console', { headers: { cookie: oldCookie } })).status).toBe(401);
    // Another session's CSRF value does not pass.
    const crossed = await post(plain, '/console/endpoints/disable', { cookie: a.cookie, origin: plain.origin }, { _csrf: b.csrf, key: 'x' });
    expect(crossed.status).toBe(403);

    // Sign-out: 303, the cookie cleared, and the old cookie replayed afterwards → 401 (page and API).
    const out = await post(plain, '/console/logout', { cookie: a.cookie, origin: plain.origin }, { _csrf: a.csrf });
    expect(out.status).toBe(303);
    expect(String(out.headers['set-cookie']?.[0])).toMatch(/^hookrelay_console=; .*Max-Age=0/);
    expect((await request(plain.port, '/console/deliveries', { headers: { cookie: a.cookie } })).status).toBe(401);
    expect((await request(plain.port, '/console/api/counts', { headers: { cookie: a.cookie } })).status).toBe(401);
    expect((await post(plain, '/console/endpoints/disable', { cookie: a.cookie, origin: plain.origin }, { _csrf: a.csrf, key: 'x' })).status).toBe(401);
    // The other session is untouched.
    expect((await request(plain.port, '/console/deliveries', { headers: { cookie: b.cookie } })).status).toBe(200);
  });

  it('OD-9 ordering: the Skip action (POST with session, origin and CSRF) marks a failed delivery skipped; a delivered one is refused', async () => {
    const row = (status: string) => ({
      id: newDeliveryId(),
      operationId: 'od9',
      eventType: 'onComplete' as const,
      hookId: 'h',
      hook: { id: 'h', type: 'onComplete', webhook: { url: 'http://127.0.0.1:9/x', ordering: 'operation', onFailure: 'block' } },
      transport: 'fetch' as const,
      payload: {},
      endpointKey: 'http://127.0.0.1:9/x',
      occurredAt: new Date(),
      status,
    });
    const failed = row('failed');
    const delivered = row('delivered');
    await insertDeliveries(db.store.db, [failed, delivered]);
    await db.store.db.execute(sql`update deliveries set status = 'failed', sequence = 1 where id = ${failed.id}`);
    await db.store.db.execute(sql`update deliveries set status = 'delivered', sequence = 2 where id = ${delivered.id}`);
    const s = await signIn(plain);
    const page = await request(plain.port, `/console/deliveries/${failed.id}`, { headers: { cookie: s.cookie } });
    expect(page.body).toContain(`/console/deliveries/${failed.id}/skip`);
    // Without the CSRF value: refused, nothing changed.
    expect((await post(plain, `/console/deliveries/${failed.id}/skip`, { cookie: s.cookie, origin: plain.origin }, {})).status).toBe(403);
    const ok = await post(plain, `/console/deliveries/${failed.id}/skip`, { cookie: s.cookie, origin: plain.origin }, { _csrf: s.csrf });
    expect(ok.status).toBe(303);
    const refused = await post(plain, `/console/deliveries/${delivered.id}/skip`, { cookie: s.cookie, origin: plain.origin }, { _csrf: s.csrf });
    expect(refused.status).toBe(409);
    const statuses = await db.store.db.execute(sql`select id, status from deliveries where operation_id = 'od9' order by sequence`);
    expect((statuses as unknown as { rows: Array<{ status: string }> }).rows.map((r) => r.status)).toEqual(['skipped', 'delivered']);
  });
});
