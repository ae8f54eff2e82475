import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { redisAnswers } from '../../src/queue/redisConnection.ts';
import { startHookrelay } from '../support/hookrelayProcess.ts';

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
    const proc = startHookrelay(['start'], { DATABASE_URL: '', REDIS_URL: redisUrl, HOOKRELAY_DATA_DIR: dataDir, HOOKRELAY_HTTP_PORT: '0', LOG_LEVEL: 'info' });
    try {
      expect(await proc.waitForOutput(/"msg":"ready"/)).toBe(true);
      expect(proc.output()).toContain('started a private redis-server');
      expect(await redisAnswers(redisUrl)).toBe(true);
      expect(await proc.stop('SIGTERM')).toBe(0);
      const stopDeadline = Date.now() + 5_000;
      while ((await redisAnswers(redisUrl, 200)) && Date.now() < stopDeadline) await new Promise((r) => setTimeout(r, 100));
      expect(await redisAnswers(redisUrl, 300)).toBe(false);
    } finally {
      proc.kill();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);

  it('without redis-server on PATH it fails with one line saying how to get one', async () => {
    const port = await freePort();
    const emptyPath = mkdtempSync(path.join(tmpdir(), 'hookrelay-nopath-')); // nothing to run here
    const proc = startHookrelay(['start'], {
      PATH: emptyPath,
      DATABASE_URL: '',
      REDIS_URL: `redis://127.0.0.1:${port}`,
      HOOKRELAY_HTTP_PORT: '0',
      HOOKRELAY_DATA_DIR: mkdtempSync(path.join(tmpdir(), 'hookrelay-noredis-')),
    });
    try {
      expect(await proc.exited).toBe(2);
      const lines = proc.output().trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/No Redis answers at REDIS_URL.*Start one/);
    } finally {
      proc.kill();
    }
  }, 30_000);
});
