/** console: `hookrelay console` as an operator runs it — the real bin, real Postgres and Redis. */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestStore, type TestStore } from '../support/db.ts';
import { ROOT } from '../support/hookrelayProcess.ts';
import { TEST_REDIS_URL } from '../support/redisKeys.ts';

const BIN = path.join(ROOT, 'bin/hookrelay.mjs');

describe('console: hookrelay console', () => {
  let t: TestStore;
  beforeAll(async () => {
    t = await createTestStore('console_cmd');
  });
  afterAll(async () => {
    await t.cleanup();
  });

  const env = (extra: Record<string, string>) => ({
    PATH: process.env.PATH ?? '',
    DATABASE_URL: t.url,
    REDIS_URL: TEST_REDIS_URL,
    HOOKRELAY_QUEUE: `cc-${randomBytes(3).toString('hex')}`,
    ...extra,
  });

  it('console: without HOOKRELAY_CONSOLE_TOKEN it refuses to start (exit 2, says what to set); a short token is a settings error', async () => {
    for (const [extra, pattern] of [
      [{}, /set HOOKRELAY_CONSOLE_TOKEN/],
      [{ HOOKRELAY_CONSOLE_TOKEN: 'short' }, /HOOKRELAY_CONSOLE_TOKEN/],
    ] as const) {
      const child = spawn(process.execPath, [BIN, 'console', '--port', '18799'], { env: env(extra) });
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => (stderr += d));
      const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
      expect(code).toBe(2);
      expect(stderr).toMatch(pattern);
      expect(stderr).not.toContain('short'); // a secret's value is never printed
    }
  });

  it('console: with a token it serves /console on 127.0.0.1 (401 without the token, 200 with it) and stops on SIGTERM', async () => {
    const token = `tok-${randomBytes(12).toString('hex')}`;
    const port = 20_000 + Math.floor(Math.random() * 20_000);
    const child = spawn(process.execPath, [BIN, 'console', '--port', String(port)], { env: env({ HOOKRELAY_CONSOLE_TOKEN: token, LOG_LEVEL: 'warn' }) });
    let stdout = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d));
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    for (let i = 0; i < 100 && !stdout.includes('/console'); i++) await new Promise((r) => setTimeout(r, 100));
    expect(stdout).toContain(`http://127.0.0.1:${port}/console`);
    expect((await fetch(`http://127.0.0.1:${port}/console`)).status).toBe(401);
    const ok = await fetch(`http://127.0.0.1:${port}/console/deliveries`, { headers: { authorization: `Bearer ${token}` } });
    expect(ok.status).toBe(200);
    expect(await ok.text()).toContain('No deliveries match.');
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  }, 30_000);
});
