/**
 * The CLI finds the store a running `hookrelay start` serves (its discovery file
 * `store.json` in HOOKRELAY_DATA_DIR) and never creates one for a command that reads: in an
 * empty folder it says where it looked and what to set, exit 2, and leaves the folder empty.
 * The bin (compiled dist) as a process; real Redis; the embedded PGlite store.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHookProducer } from '../../src/queue/producer.ts';
import { ROOT, startHookrelay } from '../support/hookrelayProcess.ts';
import { deleteKeys, queueKeys, TEST_REDIS_URL } from '../support/redisKeys.ts';

const BIN = path.join(ROOT, 'bin/hookrelay.mjs');

type Run = { code: number | null; stdout: string; stderr: string };

/** The bin in `cwd` with exactly `env` (plus PATH/HOME): no DATABASE_URL leaks in from the test process. */
function cli(args: string[], cwd: string, env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', REDIS_URL: TEST_REDIS_URL, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d));
    child.stderr.on('data', (d: Buffer) => (stderr += d));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

const READ_COMMANDS = [
  ['deliveries', 'list'],
  ['deliveries', 'show', 'dlv_01J9Z3R6Y4V8Q2W7E5T1N0K3M8'],
  ['stats'],
  ['records', 'list'],
  ['endpoints', 'list'],
  ['endpoints', 'show', 'https://example.com/hook'],
  ['replay', '--status', 'failed', '--dry-run'],
];

describe('UX-3: the CLI finds the running store and never creates one silently', () => {
  let scratch: string;
  beforeAll(() => {
    scratch = mkdtempSync(path.join(tmpdir(), 'hookrelay-ux3-'));
  });
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  it('UX-3 a read command in an empty folder creates nothing, exits 2 and says where it looked and what to set', async () => {
    const empty = path.join(scratch, 'empty');
    mkdirSync(empty);
    for (const args of READ_COMMANDS) {
      const r = await cli(args, empty);
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(2);
      expect(r.stdout).toBe('');
      const line = r.stderr.trim();
      expect(line.split('\n')).toHaveLength(1);
      expect(line).toContain('no store found, none created');
      expect(line).toContain(path.join(empty, '.hookrelay', 'store.json'));
      expect(line).toContain(path.join(empty, '.hookrelay', 'pgdata'));
      expect(line).toContain('Set DATABASE_URL');
      expect(line).toContain('HOOKRELAY_DATA_DIR');
      // Nothing created: no .hookrelay, no pgdata (it used to be a new 39 MB store).
      expect(readdirSync(empty)).toEqual([]);
    }
    // HOOKRELAY_DATA_DIR pointing at a folder that does not exist: the same, and it stays absent.
    const missing = path.join(scratch, 'nowhere', 'data');
    const r = await cli(['stats', '--json'], empty, { HOOKRELAY_DATA_DIR: missing });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(path.join(missing, 'pgdata'));
    expect(existsSync(path.join(scratch, 'nowhere'))).toBe(false);
  }, 120_000);

  it('UX-3 a discovery file left by a start that is gone is named as stale; a tampered one is not believed', async () => {
    const dir = path.join(scratch, 'stale');
    mkdirSync(path.join(dir, '.hookrelay'), { recursive: true });
    // A pid that is not running: spawn and reap a short-lived process.
    const gone = spawn(process.execPath, ['-e', '0']);
    await new Promise((resolve) => gone.on('exit', resolve));
    const file = path.join(dir, '.hookrelay', 'store.json');
    writeFileSync(file, JSON.stringify({ databaseUrl: 'postgres://postgres@127.0.0.1:5999/postgres?sslmode=disable', pid: gone.pid }));
    const stale = await cli(['deliveries', 'list'], dir);
    expect(stale.code).toBe(2);
    expect(stale.stderr).toContain(`${file} is stale (process ${gone.pid} is gone)`);
    // Pointing elsewhere (a remote host, a password) with a live pid (this test's): never used.
    writeFileSync(file, JSON.stringify({ databaseUrl: 'postgres://evil:pw@203.0.113.9:5432/x', pid: process.pid }));
    const tampered = await cli(['deliveries', 'list'], dir);
    expect(tampered.code).toBe(2);
    expect(tampered.stderr).toContain(`${file} is stale (unreadable)`);
    expect(readdirSync(path.join(dir, '.hookrelay'))).toEqual(['store.json']);
  }, 60_000);

  it('UX-3 from another folder, HOOKRELAY_DATA_DIR finds the store a running `hookrelay start` serves (store.json: DATABASE_URL, socketDir, pid), and the file is removed on stop', async () => {
    const dataDir = path.join(scratch, 'app', '.hookrelay');
    const elsewhere = path.join(scratch, 'elsewhere');
    mkdirSync(elsewhere);
    const queue = `ux3-${randomBytes(4).toString('hex')}`;
    const start = startHookrelay(['start'], {
      DATABASE_URL: '',
      REDIS_URL: TEST_REDIS_URL,
      HOOKRELAY_QUEUE: queue,
      HOOKRELAY_DATA_DIR: dataDir,
      HOOKRELAY_HTTP_PORT: '0',
      LOG_LEVEL: 'info',
    });
    try {
      await start.ready(90_000);
      const info = JSON.parse(readFileSync(path.join(dataDir, 'store.json'), 'utf8')) as { databaseUrl: string; socketDir: string; pid: number };
      expect(info.pid).toBe(start.child.pid);
      // W7: a unix socket in the data dir's 0700 `run` folder (LEAK-2), not a loopback port.
      expect(info.socketDir).toBe(path.join(dataDir, 'run'));
      expect(info.databaseUrl).toBe(`postgres://postgres@${encodeURIComponent(info.socketDir)}/postgres?sslmode=disable`);
      const producer = createHookProducer({ databaseUrl: info.databaseUrl, redisUrl: TEST_REDIS_URL, queueName: queue, env: {} });
      let ids: string[];
      try {
        // To a port nothing listens on: it stays undelivered, in the ledger.
        ({ deliveryIds: ids } = await producer.enqueue({
          operationId: 'op-ux3',
          type: 'onComplete',
          event: { operationId: 'op-ux3', reason: 'done' },
          hooks: [{ id: 'done', type: 'onComplete', webhook: { url: 'https://example.invalid/hook' } }],
        }));
      } finally {
        await producer.close();
      }
      const list = await cli(['deliveries', 'list', '--json'], elsewhere, { HOOKRELAY_DATA_DIR: dataDir, HOOKRELAY_QUEUE: queue });
      expect(list.stderr).toBe('');
      expect(list.code).toBe(0);
      expect((JSON.parse(list.stdout) as { id: string }[]).map((d) => d.id)).toEqual(ids);
      expect(readdirSync(elsewhere)).toEqual([]);
      expect(await start.stop('SIGTERM')).toBe(0);
      expect(existsSync(path.join(dataDir, 'store.json'))).toBe(false);
      // Stopped, the folder is still there: a read command opens it directly (it exists), creating nothing new.
      const after = await cli(['deliveries', 'list', '--json'], elsewhere, { HOOKRELAY_DATA_DIR: dataDir });
      expect(after.code).toBe(0);
      expect((JSON.parse(after.stdout) as { id: string }[]).map((d) => d.id)).toEqual(ids);
    } finally {
      start.kill();
      await deleteKeys(queueKeys(queue));
    }
  }, 180_000);
});
