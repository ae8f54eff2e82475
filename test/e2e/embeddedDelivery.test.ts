import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { createHookProducer } from '../../src/queue/producer.ts';
import { startReceiver } from '../support/receiver.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

describe('quickstart: `hookrelay start` delivers events end to end on the embedded store', () => {
  it('Q1/§13: a producer connected through the start process socket enqueues; the worker delivers; the ledger says delivered', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'hookrelay-embedded-'));
    const queueName = `embedded-${randomBytes(4).toString('hex')}`;
    const receiver = await startReceiver({ status: 204 });
    const child = spawn(process.execPath, ['bin/hookrelay.mjs', 'start'], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: '', REDIS_URL, HOOKRELAY_QUEUE: queueName, HOOKRELAY_DATA_DIR: dataDir, HOOKRELAY_HTTP_PORT: '0', HOOKRELAY_ALLOWED_CIDRS: '127.0.0.1/32', LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d));
    child.stderr.on('data', (d: Buffer) => (output += d));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      const deadline = Date.now() + 45_000;
      while (!/"msg":"ready"/.test(output) && Date.now() < deadline && child.exitCode === null) await new Promise((r) => setTimeout(r, 100));
      expect(output).toMatch(/"msg":"ready"/);
      const { databaseUrl } = JSON.parse(readFileSync(path.join(dataDir, 'store.json'), 'utf8')) as { databaseUrl: string };
      const producer = createHookProducer({ databaseUrl, redisUrl: REDIS_URL, queueName, env: {} });
      try {
        const { deliveryIds, queued } = await producer.enqueue({
          operationId: 'op-embedded',
          type: 'onComplete',
          event: { operationId: 'op-embedded', reason: 'done' },
          hooks: [{ id: 'done', type: 'onComplete', webhook: { url: `${receiver.url}/done` } }],
        });
        expect(queued).toBe(true);
        const until = Date.now() + 20_000;
        while ((await producer.getDelivery(deliveryIds[0]!))?.status !== 'delivered' && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
        expect((await producer.getDelivery(deliveryIds[0]!))?.status).toBe('delivered');
        expect(receiver.requests.map((r) => r.headers['webhook-id'])).toEqual(deliveryIds);
      } finally {
        await producer.close();
      }
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
      await receiver.close();
      const redis = new Redis(REDIS_URL);
      const keys = await redis.keys(`bull:${queueName}:*`);
      if (keys.length) await redis.del(...keys);
      redis.disconnect();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 90_000);
});
