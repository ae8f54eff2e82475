/**
 * FAULT-console-stop (Q9, Q13): `hookrelay console` as an operator runs it, its Redis reached
 * through a TCP proxy on 127.0.0.1 (the shared server is never touched). With Redis cut, SIGTERM
 * ends it within its close bound (each of its four close steps at most 2 s), exit 0, and its last
 * line is the `stopped:` line saying what could not be closed in time.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestStore, type TestStore } from '../support/db.ts';
import { startHookrelay } from '../support/hookrelayProcess.ts';
import { deleteKeys, TEST_REDIS_URL } from '../support/redisKeys.ts';
import { startTcpProxy, type TcpProxy } from '../support/tcpProxy.ts';

/** Four close steps of at most 2 s each (docs/delivery.md, graceful shutdown). */
const BOUND_MS = 8_000;
/** Process exit and signal delivery on a loaded machine. */
const SLACK_MS = 4_000;

describe('FAULT-console-stop: hookrelay console stops with Redis away (Q9, Q13)', () => {
  let db: TestStore;
  let proxy: TcpProxy;
  const queue = `fault-console-stop-${randomBytes(3).toString('hex')}`;

  beforeAll(async () => {
    db = await createTestStore('fault_console_stop');
    proxy = await startTcpProxy(Number(new URL(TEST_REDIS_URL).port || 6379));
  });
  afterAll(async () => {
    await proxy?.close();
    await deleteKeys(`bull:${queue}:*`);
    await db?.cleanup();
  });

  it('FAULT-console-stop: Redis cut, SIGTERM → exit 0 within the close bound, the stopped line last (Q9, Q13)', async () => {
    const token = `tok-${randomBytes(12).toString('hex')}`;
    const port = 20_000 + Math.floor(Math.random() * 20_000);
    const child = startHookrelay(
      ['console', '--port', String(port)],
      { DATABASE_URL: db.url, REDIS_URL: proxy.url(TEST_REDIS_URL), HOOKRELAY_QUEUE: queue, HOOKRELAY_CONSOLE_TOKEN: token, LOG_LEVEL: 'info' },
      { inheritEnv: false },
    );
    try {
      expect(await child.waitForOutput(/hookrelay console on http/, 20_000), child.output()).toBe(true);
      const auth = { authorization: `Bearer ${token}` };
      // The overview reads Redis (queue counts, breakers): the console holds a Redis connection now.
      expect((await fetch(`http://127.0.0.1:${port}/console`, { headers: auth })).status).toBe(200);
      expect(proxy.open()).toBeGreaterThan(0);

      await proxy.cut();
      // Pages still answer with Redis away (its figures unknown), from Postgres.
      expect((await fetch(`http://127.0.0.1:${port}/console/deliveries`, { headers: auth, signal: AbortSignal.timeout(10_000) })).status).toBe(200);

      const signalledAt = Date.now();
      const code = await child.stop('SIGTERM');
      expect(Date.now() - signalledAt, child.output()).toBeLessThan(BOUND_MS + SLACK_MS);
      expect(code, child.output()).toBe(0);
      const last = child.output().trim().split('\n').at(-1) ?? '';
      expect(last, child.output()).toMatch(/"msg":"stopped: console closed/);
    } finally {
      child.kill();
      await proxy.restore();
    }
  }, 30_000);
});
