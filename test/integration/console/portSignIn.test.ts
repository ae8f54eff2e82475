/**
 * Issue 51 (PORT-3): token guesses at the console are throttled per client address and logged
 * once per burst, with the address and never the token. The console over a real HTTP server on
 * 127.0.0.1 with real Postgres and Redis, and its real default throttle (5 free attempts a minute,
 * then turns 1 s, 2 s, 4 s … apart; an attempt whose turn is more than 5 s away is refused
 * unchecked). Sign-in forms and bearer tokens are throttled apart.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSettings } from '../../../src/config/settings.ts';
import { createConsole, type Console } from '../../../src/console/consoleHandler.ts';
import { startHttpServer, type RunningHttpServer } from '../../../src/observability/httpServer.ts';
import { createLogger } from '../../../src/observability/logger.ts';
import { openOperatorQueue, type OperatorQueue } from '../../../src/admin/operatorQueue.ts';
import { createTestStore, type TestStore } from '../../support/db.ts';
import { deleteKeys, TEST_REDIS_URL } from '../../support/redisKeys.ts';

const TOKEN = `console-token-${randomBytes(12).toString('hex')}`;
const WRONG = `wrong-guess-${randomBytes(12).toString('hex')}`;

describe('PORT-3 console sign-in and bearer guesses are throttled and logged (real HTTP, Postgres, Redis)', () => {
  let db: TestStore;
  let app: Console;
  let server: RunningHttpServer;
  let operator: OperatorQueue;
  let base: string;
  const lines: string[] = [];
  const queue = `port3-${randomBytes(4).toString('hex')}`;

  beforeAll(async () => {
    db = await createTestStore('port3');
    const settings = loadSettings({ DATABASE_URL: db.url, REDIS_URL: TEST_REDIS_URL, HOOKRELAY_QUEUE: queue, HOOKRELAY_CONSOLE_TOKEN: TOKEN });
    operator = openOperatorQueue(settings);
    const logger = createLogger({ level: 'info', destination: { write: (line: string) => lines.push(line) } });
    let port: number | undefined;
    app = createConsole({
      db: db.store.db,
      settings,
      operator,
      token: TOKEN,
      logger,
      sampleQueue: false,
      listening: () => (port === undefined ? undefined : { host: '127.0.0.1', port }),
    });
    server = await startHttpServer({ port: 0, host: '127.0.0.1', logger, handlers: [app.handle] });
    port = server.port as number;
    base = `http://127.0.0.1:${port}`;
  });
  afterAll(async () => {
    await server?.close();
    await app?.close();
    await operator?.close();
    await deleteKeys(`bull:${queue}:*`);
    await db?.cleanup();
  });

  const signIn = async (token: string) => {
    const res = await fetch(`${base}/console/login`, {
      method: 'POST',
      headers: { origin: base, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token }),
      redirect: 'manual',
    });
    return { status: res.status, retryAfter: res.headers.get('retry-after'), cookie: res.headers.get('set-cookie') };
  };
  const logged = () => lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.via !== undefined);

  it('PORT-3 (SEC-H8, SEC-H5): the 6th wrong sign-in within a minute waits its turn, later ones are refused unchecked (even the right token), and the burst is logged once with the address, never the token', async () => {
    for (let i = 0; i < 4; i++) expect((await signIn(WRONG)).status, `attempt ${i + 1}`).toBe(401);
    // The 6th's turn comes 1 s after the 5th was admitted: measured from the 5th's start, so a slow machine only adds to it.
    const fifthStarted = performance.now();
    expect((await signIn(WRONG)).status).toBe(401);
    const sixth = await signIn(WRONG);
    expect(sixth.status).toBe(401);
    expect(performance.now() - fifthStarted, 'the 6th waits for its turn (1 s after the 5th)').toBeGreaterThanOrEqual(990);

    // Three more at once: the first gets the next turn (2 s away); the others' turns are further than 5 s: refused unchecked.
    const wrongs = Promise.all([signIn(WRONG), signIn(WRONG), signIn(WRONG)]);
    await new Promise((r) => setTimeout(r, 150));
    // Then the right token, from the same address: its turn is further still, so it is not even checked.
    const right = await signIn(TOKEN);
    expect(right.status).toBe(429);
    expect(right.cookie).toBeNull();
    expect(Number(right.retryAfter)).toBeGreaterThan(5);
    const answered = await wrongs;
    expect(answered.map((r) => r.status).sort()).toEqual([401, 429, 429]);

    // Bearer guesses are throttled apart: the right bearer still reads the console from the same address.
    expect((await fetch(`${base}/console/api/counts`, { headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(200);

    const signInLines = logged().filter((l) => l.via === 'signin');
    // One line for the first wrong token and one for the first refusal: the rest are counted into the minute's summary.
    expect(signInLines.length).toBeGreaterThanOrEqual(2);
    expect(signInLines.length).toBeLessThanOrEqual(3);
    for (const l of signInLines) expect(l.address).toMatch(/127\.0\.0\.1/);
    expect(signInLines.some((l) => String(l.msg).includes('too many wrong tokens'))).toBe(true);
    expect(lines.join('\n')).not.toContain(WRONG);
    expect(lines.join('\n')).not.toContain(TOKEN);
  }, 20_000);

  it('PORT-3 (SEC-H8): wrong bearer tokens are throttled the same way; the 6th within a minute waits, and each burst is one line', async () => {
    const before = logged().filter((l) => l.via === 'bearer').length;
    const bearer = async (token: string) => {
      const res = await fetch(`${base}/console/api/counts`, { headers: { authorization: `Bearer ${token}` } });
      return { status: res.status };
    };
    for (let i = 0; i < 4; i++) expect((await bearer(WRONG)).status).toBe(401);
    const fifthStarted = performance.now();
    expect((await bearer(WRONG)).status).toBe(401);
    expect((await bearer(WRONG)).status).toBe(401);
    expect(performance.now() - fifthStarted, 'the 6th waits for its turn (1 s after the 5th)').toBeGreaterThanOrEqual(990);
    const bearerLines = logged().filter((l) => l.via === 'bearer');
    expect(bearerLines.length - before).toBe(1);
    expect(lines.join('\n')).not.toContain(WRONG);
  }, 20_000);
});
