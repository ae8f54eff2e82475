import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createHookProducer } from '../../src/queue/producer.ts';
import { startReceiver } from '../support/receiver.ts';
import { startHookrelay } from '../support/hookrelayProcess.ts';
import { deleteKeys, queueKeys } from '../support/redisKeys.ts';

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

describe('quickstart: `hookrelay start` delivers events end to end on the embedded store', () => {
  it('Q1: a producer connected through the start process socket enqueues; the worker delivers; the ledger says delivered', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'hookrelay-embedded-'));
    const queueName = `embedded-${randomBytes(4).toString('hex')}`;
    const receiver = await startReceiver({ status: 204 });
    const proc = startHookrelay(['start'], {
      DATABASE_URL: '',
      REDIS_URL,
      HOOKRELAY_QUEUE: queueName,
      HOOKRELAY_DATA_DIR: dataDir,
      HOOKRELAY_HTTP_PORT: '0',
      HOOKRELAY_ALLOWED_CIDRS: '127.0.0.1/32',
      LOG_LEVEL: 'info',
    });
    try {
      expect(await proc.waitForOutput(/"msg":"ready"/)).toBe(true);
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
      expect(await proc.stop('SIGTERM')).toBe(0);
    } finally {
      proc.kill();
      await receiver.close();
      await deleteKeys(queueKeys(queueName));
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 90_000);
});
