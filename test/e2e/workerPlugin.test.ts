/**
 * `hookrelay worker --plugin <file>`: the worker process gets the application's email look-up
 * (B3 in the queue path), and a plugin it cannot use stops it at once with one line naming the file.
 */
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHookProducer } from '../../src/queue/producer.ts';
import type { HookProducer } from '../../src/queue/types.ts';
import { createTestStore, type TestStore } from '../support/db.ts';
import { spawnWorker, ROOT } from '../support/hookrelayProcess.ts';
import { startReceiver, type Receiver } from '../support/receiver.ts';
import { deleteKeys, queueKeys, TEST_REDIS_URL } from '../support/redisKeys.ts';
import { waitFor } from '../integration/queue/harness.ts';

const fixture = (name: string) => path.relative(ROOT, path.join(ROOT, 'test/e2e/fixtures', name));

describe('B3 worker: hookrelay worker --plugin', () => {
  let db: TestStore;
  let rx: Receiver;
  let producer: HookProducer;
  const queueName = `plugin-${randomBytes(4).toString('hex')}`;
  const env = (): Record<string, string> => ({
    DATABASE_URL: db.url,
    REDIS_URL: TEST_REDIS_URL,
    HOOKRELAY_QUEUE: queueName,
    HOOKRELAY_ALLOWED_CIDRS: '127.0.0.0/8',
    HOOKRELAY_HTTP_PORT: '0',
  });

  beforeAll(async () => {
    db = await createTestStore('e2e_plugin');
    rx = await startReceiver({ status: 204 });
    producer = createHookProducer({ store: db.store, redisUrl: TEST_REDIS_URL, queueName, env: {} });
  });
  afterAll(async () => {
    await producer.close();
    await rx.close();
    await deleteKeys(queueKeys(queueName));
    await db.cleanup();
  });

  it.each([
    ['emailPlugin.mjs', 'u-plugin', 'ada@plugin.example'],
    ['defaultExportPlugin.mjs', 'u-7', 'u-7@default.example'],
  ])(
    'B3 worker: --plugin %s gives the worker process its emailLookup; payloads carry userEmail',
    async (file, userId, email) => {
      const worker = spawnWorker(env(), ['--plugin', fixture(file)]);
      try {
        await worker.ready();
        const hook = { id: 'h', type: 'onComplete' as const, webhook: { url: `${rx.url}/${file}` } };
        const { deliveryIds } = await producer.enqueueMany([
          { operationId: 'op-p1', type: 'onComplete', event: { operationId: 'op-p1', userId }, hooks: [hook] },
          { operationId: 'op-p2', type: 'onComplete', event: { operationId: 'op-p2', userId: 'u-broken' }, hooks: [hook] },
        ]);
        const received = () => rx.requests.filter((r) => r.path === `/${file}`);
        await waitFor(() => received().length === 2, 20_000, 'both deliveries');
        const byId = new Map(received().map((r) => [r.headers['webhook-id'], JSON.parse(r.body) as Record<string, unknown>]));
        expect(byId.get(deliveryIds[0])).toMatchObject({ userId, userEmail: email });
        // emailPlugin throws for u-broken, the default-export one answers: either way the delivery went.
        expect(byId.get(deliveryIds[1])).toMatchObject({ userId: 'u-broken' });
        if (file === 'emailPlugin.mjs') expect(byId.get(deliveryIds[1])).not.toHaveProperty('userEmail');
      } finally {
        await worker.stop();
      }
    },
    60_000,
  );

  it.each([
    ['missing.mjs', /--plugin test\/e2e\/fixtures\/missing\.mjs: no such file/],
    ['noLookupPlugin.mjs', /--plugin test\/e2e\/fixtures\/noLookupPlugin\.mjs exports no emailLookup function/],
    ['throwingPlugin.mjs', /--plugin test\/e2e\/fixtures\/throwingPlugin\.mjs could not be loaded: Error: plugin failed at import/],
  ])(
    'B3 worker: an unusable --plugin (%s) stops the worker with exit 2 and one line naming the file',
    async (file, message) => {
      const worker = spawnWorker(env(), ['--plugin', fixture(file)]);
      const code = await worker.exited;
      expect(code).toBe(2);
      const lines = worker.output().trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(message);
    },
    30_000,
  );
});
