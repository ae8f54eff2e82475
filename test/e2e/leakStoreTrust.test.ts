/**
 * LEAK-2 (W7): the embedded store trusts only its owner. A `store.json` someone else planted
 * (another user's file, a link, a file others may write, naming another user's process or a
 * socket folder others may enter) makes the CLI and the console refuse, say why and stop: nothing
 * it names is connected to, so no password reaches the planted port (a listener on 127.0.0.1
 * records every byte it gets and asks for a cleartext password, as a thief would). `hookrelay
 * start` writes `store.json` 0600 and its folders 0700 and serves the store where only its owner
 * can connect: local user `nobody` (runuser) can neither connect nor read the ledger's files.
 * The bin (compiled dist) as a process; real Redis; the embedded PGlite store.
 */
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHookProducer } from '../../src/queue/producer.ts';
import { ROOT, runCli, startHookrelay } from '../support/hookrelayProcess.ts';
import { deleteKeys, queueKeys, TEST_REDIS_URL } from '../support/redisKeys.ts';

const NOBODY = 65_534;
const CANARY = `pgpass-canary-${randomBytes(8).toString('hex')}`;
/** `runuser` exists and the machine has a `nobody` user (uid 65534): the other-user cases can run. */
const otherUser = spawnSync('runuser', ['-u', 'nobody', '--', 'true']).status === 0 && process.getuid?.() === 0;
if (!otherUser) console.warn('LEAK-2: the other-user cases are skipped: they need root, `runuser` and a `nobody` user (uid 65534)');

/** PGPASSWORD set, as many shells have it: it must never reach an address a planted file names. */
const cli = (args: string[], dataDir: string, extra: Record<string, string> = {}) =>
  runCli(args, { REDIS_URL: TEST_REDIS_URL, HOOKRELAY_DATA_DIR: dataDir, PGPASSWORD: CANARY, ...extra });

/** A thief on 127.0.0.1: answers any startup with "send your password in clear text" and keeps every byte. */
async function startThief(): Promise<{ port: number; received: () => Buffer; close: () => Promise<void> }> {
  const chunks: Buffer[] = [];
  const server = net.createServer((socket) => {
    socket.on('data', (d: Buffer) => {
      chunks.push(d);
      // AuthenticationCleartextPassword: 'R', length 8, code 3.
      socket.write(Buffer.from([0x52, 0, 0, 0, 8, 0, 0, 0, 3]));
    });
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  return { port, received: () => Buffer.concat(chunks), close: () => new Promise((resolve) => server.close(() => resolve())) };
}

describe('LEAK-2 (W7): a planted store.json is refused and no password reaches the address it names', () => {
  let scratch: string;
  let thief: Awaited<ReturnType<typeof startThief>>;
  let stranger: ReturnType<typeof spawn> | undefined;

  beforeAll(async () => {
    scratch = mkdtempSync(path.join(tmpdir(), 'hookrelay-leak2-'));
    thief = await startThief();
  });
  afterAll(async () => {
    stranger?.kill('SIGKILL');
    await thief?.close();
    rmSync(scratch, { recursive: true, force: true });
  });

  /** A data dir whose store.json is `content`, prepared by `plant` (chown, chmod, link). */
  function planted(name: string, content: Record<string, unknown>, plant: (file: string, dir: string) => void = () => undefined): string {
    const dir = path.join(scratch, name, '.hookrelay');
    mkdirSync(dir, { recursive: true });
    const file = path.join(dir, 'store.json');
    writeFileSync(file, JSON.stringify(content));
    plant(file, dir);
    return dir;
  }

  /** What an old or a forged file says: the thief's port, as a loopback URL. */
  const pointingAtThief = () => ({ databaseUrl: `postgres://postgres@127.0.0.1:${thief.port}/postgres?sslmode=disable`, port: thief.port });

  async function expectRefused(dataDir: string, reason: RegExp): Promise<void> {
    const before = thief.received().length;
    for (const args of [
      ['deliveries', 'list'],
      ['stats', '--json'],
    ]) {
      const r = await cli(args, dataDir);
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toContain(path.join(dataDir, 'store.json'));
      expect(r.stderr).toMatch(reason);
    }
    const consoleRun = await cli(['console', '--port', '59999', '--host', '127.0.0.1'], dataDir, { HOOKRELAY_CONSOLE_TOKEN: randomBytes(16).toString('hex') });
    expect(consoleRun.code, consoleRun.stderr).toBe(2);
    expect(consoleRun.stderr).toMatch(reason);
    expect(thief.received().length, 'bytes the planted address received').toBe(before);
    expect(thief.received().toString('latin1')).not.toContain(CANARY);
  }

  it.skipIf(!otherUser)(
    'LEAK-2 (W7): a store.json owned by another user (pid 1, the thief’s port) is refused, naming the owner',
    async () => {
      const dir = planted('others', { ...pointingAtThief(), pid: 1 }, (file) => chownSync(file, NOBODY, NOBODY));
      await expectRefused(dir, /is owned by uid 65534, not by you/);
    },
    60_000,
  );

  it('LEAK-2 (W7): a symbolic link named store.json is refused, even to a file of ours', async () => {
    const target = path.join(scratch, 'elsewhere.json');
    writeFileSync(target, JSON.stringify({ ...pointingAtThief(), pid: process.pid, socketDir: scratch }), { mode: 0o600 });
    const dir = planted('linked', {}, (file) => {
      rmSync(file);
      symlinkSync(target, file);
    });
    await expectRefused(dir, /is a symbolic link/);
  }, 60_000);

  it('LEAK-2 (W7): a store.json others may write is refused', async () => {
    const dir = planted('writable', { ...pointingAtThief(), pid: process.pid, socketDir: scratch }, (file) => chmodSync(file, 0o666));
    await expectRefused(dir, /is writable by other users \(mode 0666\)/);
  }, 60_000);

  it.skipIf(!otherUser)(
    'LEAK-2 (W7): a store.json naming another user’s live process is refused (alive is not ours)',
    async () => {
      stranger = spawn('sleep', ['60'], { uid: NOBODY, gid: NOBODY, stdio: 'ignore' });
      await new Promise((resolve) => stranger?.once('spawn', resolve));
      const dir = planted('stranger', { ...pointingAtThief(), pid: stranger.pid, socketDir: scratch });
      await expectRefused(dir, new RegExp(`names process ${stranger.pid}, which belongs to uid 65534`));
    },
    60_000,
  );

  it('LEAK-2 (W7): a store.json naming a socket folder others may enter is refused', async () => {
    const open = path.join(scratch, 'open-socket-dir');
    mkdirSync(open, { mode: 0o755 });
    chmodSync(open, 0o755);
    const dir = planted('openfolder', { ...pointingAtThief(), pid: process.pid, socketDir: open });
    await expectRefused(dir, /names the socket folder .* which is open to other users \(mode 0755/);
  }, 60_000);

  it.skipIf(!otherUser)(
    'LEAK-2 (W7): with no store.json, a data folder another user owns is not opened either',
    async () => {
      const dir = path.join(scratch, 'foreign', '.hookrelay');
      mkdirSync(path.join(dir, 'pgdata'), { recursive: true });
      writeFileSync(path.join(dir, 'pgdata', 'PG_VERSION'), '17\n');
      chownSync(dir, NOBODY, NOBODY);
      chmodSync(dir, 0o777);
      const r = await cli(['deliveries', 'list'], dir);
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toMatch(/is owned by uid 65534, not by you .*a folder of yours/);
    },
    60_000,
  );

  it('LEAK-2 (W7): an old-style file naming a loopback port is never connected to (pid 1, our own file)', async () => {
    const dir = planted('oldstyle', { ...pointingAtThief(), pid: 1 });
    const before = thief.received().length;
    const r = await cli(['deliveries', 'list'], dir);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('store.json');
    expect(thief.received().length).toBe(before);
  }, 60_000);
});

describe.skipIf(!otherUser)('LEAK-2 (W7): the served store is its owner’s alone', () => {
  let scratch: string;
  const queue = `leak2-${randomBytes(4).toString('hex')}`;
  beforeAll(() => {
    scratch = mkdtempSync(path.join(tmpdir(), 'hookrelay-leak2-served-'));
    // Open to everyone, as a home or project folder often is: only what hookrelay sets protects the store.
    chmodSync(scratch, 0o755);
  });
  afterAll(async () => {
    await deleteKeys(queueKeys(queue));
    rmSync(scratch, { recursive: true, force: true });
  });

  it('LEAK-2 (W7): store.json is 0600, the data folders 0700; user nobody cannot connect to the served store or read its files; its owner can', async () => {
    const dataDir = path.join(scratch, '.hookrelay');
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
      const mode = (p: string) => statSync(p).mode & 0o777;
      expect(mode(path.join(dataDir, 'store.json'))).toBe(0o600);
      expect(mode(dataDir)).toBe(0o700);
      expect(mode(path.join(dataDir, 'pgdata'))).toBe(0o700);
      const info = JSON.parse(readFileSync(path.join(dataDir, 'store.json'), 'utf8')) as { databaseUrl: string; socketDir: string };
      expect(mode(info.socketDir)).toBe(0o700);

      // Something in the ledger to read.
      const producer = createHookProducer({ databaseUrl: info.databaseUrl, redisUrl: TEST_REDIS_URL, queueName: queue, env: {} });
      try {
        await producer.enqueue({
          operationId: 'op-leak2',
          type: 'onComplete',
          event: { operationId: 'op-leak2', reason: 'done' },
          hooks: [{ id: 'h', type: 'onComplete', webhook: { url: 'https://example.invalid/hook' } }],
        });
      } finally {
        await producer.close();
      }

      // Another local user, with the URL in hand (as if it had been printed to a shared log).
      const script = `const pg = require(${JSON.stringify(path.join(ROOT, 'node_modules/pg'))});
        const c = new pg.Client({ connectionString: process.argv[1], connectionTimeoutMillis: 5000 });
        c.connect().then(() => c.query('select operation_id from deliveries')).then((r) => { console.log('READ', JSON.stringify(r.rows)); process.exit(0); },
          (e) => { console.log('REFUSED', e.code || e.message); process.exit(3); });`;
      const other = spawnSync('runuser', ['-u', 'nobody', '--', process.execPath, '-e', script, info.databaseUrl], { encoding: 'utf8', timeout: 20_000 });
      expect(other.stdout).not.toContain('READ');
      expect(other.stdout).toMatch(/REFUSED (EACCES|ENOENT|ECONNREFUSED)/);
      const ls = spawnSync('runuser', ['-u', 'nobody', '--', 'ls', path.join(dataDir, 'pgdata')], { encoding: 'utf8' });
      expect(ls.status).not.toBe(0);
      expect(ls.stderr).toMatch(/Permission denied/);
      const cat = spawnSync('runuser', ['-u', 'nobody', '--', 'cat', path.join(dataDir, 'store.json')], { encoding: 'utf8' });
      expect(cat.status).not.toBe(0);

      // Its owner (this test's user) reads it through the same file: the CLI finds it.
      const list = await cli(['deliveries', 'list', '--json'], dataDir, { HOOKRELAY_QUEUE: queue });
      expect(list.stderr).toBe('');
      expect((JSON.parse(list.stdout) as { operationId: string }[]).map((d) => d.operationId)).toEqual(['op-leak2']);
      expect(await start.stop('SIGTERM')).toBe(0);
    } finally {
      start.kill();
    }
  }, 180_000);
});
