import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { redisAnswers } from '../../src/queue/redisConnection.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');

const freePort = () =>
  new Promise<number>((resolve) => {
    const srv = net.createServer().listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });

describe('quickstart: npm start with no Redis answering', () => {
  it('starts a private redis-server under HOOKRELAY_DATA_DIR, reaches "ready", and stops it on SIGTERM', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'hookrelay-redis-'));
    const port = await freePort();
    const redisUrl = `redis://127.0.0.1:${port}`;
    expect(await redisAnswers(redisUrl, 300)).toBe(false);
    const child = spawn(process.execPath, ['bin/hookrelay.mjs', 'start'], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: '', REDIS_URL: redisUrl, HOOKRELAY_DATA_DIR: dataDir, HOOKRELAY_HTTP_PORT: '0', LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d));
    child.stderr.on('data', (d: Buffer) => (output += d));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      const deadline = Date.now() + 45_000;
      while (!/"msg":"ready"/.test(output) && Date.now() < deadline && child.exitCode === null) await new Promise((r) => setTimeout(r, 100));
      expect(output).toContain('started a private redis-server');
      expect(output).toMatch(/"msg":"ready"/);
      expect(await redisAnswers(redisUrl)).toBe(true);
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      const stopDeadline = Date.now() + 5_000;
      while ((await redisAnswers(redisUrl, 200)) && Date.now() < stopDeadline) await new Promise((r) => setTimeout(r, 100));
      expect(await redisAnswers(redisUrl, 300)).toBe(false);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);

  it('without redis-server on PATH it fails with one line saying how to get one', async () => {
    const port = await freePort();
    const emptyPath = mkdtempSync(path.join(tmpdir(), 'hookrelay-nopath-')); // nothing to run here
    const child = spawn(process.execPath, ['bin/hookrelay.mjs', 'start'], {
      cwd: ROOT,
      env: { ...process.env, PATH: emptyPath, DATABASE_URL: '', REDIS_URL: `redis://127.0.0.1:${port}`, HOOKRELAY_HTTP_PORT: '0', HOOKRELAY_DATA_DIR: mkdtempSync(path.join(tmpdir(), 'hookrelay-noredis-')) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d));
    try {
      const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
      expect(code).toBe(2);
      expect(stderr.trim().split('\n')).toHaveLength(1);
      expect(stderr).toMatch(/No Redis answers at REDIS_URL.*Start one/);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  }, 30_000);
});
