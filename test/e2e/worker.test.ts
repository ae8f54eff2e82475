import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { sql } from 'drizzle-orm';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHookProducer } from '../../src/queue/producer.ts';
import type { HookProducer } from '../../src/queue/types.ts';
import { createTestStore, type TestStore } from '../support/db.ts';
import { startReceiver, type Receiver } from '../support/receiver.ts';
import { TEST_REDIS_URL, waitFor } from '../integration/queue/harness.ts';
import { spawnWorker } from '../support/hookrelayProcess.ts';
import { deleteKeys, listKeys, queueKeys } from '../support/redisKeys.ts';

const SHUTDOWN_BOUND_MS = 5_000;

function workerEnv(db: TestStore, queue: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    DATABASE_URL: db.url,
    REDIS_URL: TEST_REDIS_URL,
    HOOKRELAY_QUEUE: queue,
    HOOKRELAY_HTTP_PORT: '0',
    HOOKRELAY_ALLOWED_CIDRS: '127.0.0.0/8',
    HOOKRELAY_RETRY_SCHEDULE: '0.05,0.1',
    HOOKRELAY_LOCK_DURATION_MS: '2000',
    HOOKRELAY_STALLED_INTERVAL_MS: '1000',
    HOOKRELAY_RECONCILE_INTERVAL_MS: '1000',
    HOOKRELAY_SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_BOUND_MS),
    ...extra,
  };
}

const deleteQueueKeys = (queue: string) => deleteKeys(queueKeys(queue));

describe('worker process (e2e)', () => {
  let db: TestStore;
  let rx: Receiver;
  let producer: HookProducer;
  let queue: string;

  beforeAll(async () => {
    db = await createTestStore('e2e_worker');
    rx = await startReceiver({ status: 200 });
    queue = `e2e-worker-${randomBytes(4).toString('hex')}`;
    producer = createHookProducer({ store: db.store, redisUrl: TEST_REDIS_URL, queueName: queue, env: { HOOKRELAY_TEMPLATE_ENV: 'HOOK_TOKEN' } });
  });
  afterAll(async () => {
    await producer.close();
    await rx.close();
    await deleteQueueKeys(queue);
    await db.cleanup();
  });

  it('Q9: SIGTERM under load → stops taking jobs, finishes in-flight ones, exits 0 within the bound; no delivery duplicated', async () => {
    rx.setHandler({ status: 200, delayMs: 300 });
    const N = 200;
    const { deliveryIds } = await producer.enqueueMany(
      Array.from({ length: N }, (_, i) => ({
        operationId: `op-sd-${i}`,
        type: 'onComplete' as const,
        event: { i },
        hooks: [{ id: 'sd', type: 'onComplete' as const, webhook: { url: `${rx.url}/sd` } }],
      })),
    );
    const first = spawnWorker(workerEnv(db, queue, { HOOKRELAY_CONCURRENCY: '16' }));
    await first.ready();
    await waitFor(() => rx.requests.length >= 20, 15_000, 'deliveries under way');
    const signalledAt = Date.now();
    first.kill('SIGTERM');
    const code = await first.exited;
    const took = Date.now() - signalledAt;
    expect(code).toBe(0);
    expect(took).toBeLessThan(SHUTDOWN_BOUND_MS + 2_000);
    const afterFirst = rx.requests.length;
    expect(afterFirst).toBeLessThan(N);

    rx.setHandler({ status: 200 });
    const second = spawnWorker(workerEnv(db, queue, { HOOKRELAY_CONCURRENCY: '16' }));
    try {
      await second.ready();
      await waitFor(
        async () => {
          const r = await db.store.db.execute(sql`select count(*)::int as n from deliveries where status = 'delivered'`);
          return (r as unknown as { rows: Array<{ n: number }> }).rows[0]?.n === N;
        },
        30_000,
        'all delivered',
      );
    } finally {
      second.kill('SIGTERM');
      expect(await second.exited).toBe(0);
    }
    const ids = rx.requests.map((r) => r.headers['webhook-id'] as string);
    expect(new Set(ids)).toEqual(new Set(deliveryIds));
    expect(ids.length).toBe(N); // no duplicate: in-flight jobs finished and were recorded before exit
    expect(first.output()).not.toMatch(/Missing lock|could not renew lock/i);
  }, 90_000);

  it('W2: templated tokens resolve only in the worker; no table in the schema and no Redis key holds the resolved token', async () => {
    const token = `tok_${randomBytes(16).toString('hex')}`;
    expect(process.env.HOOK_TOKEN).toBeUndefined();
    rx.setHandler((req) => ({ status: req.path === '/secret-fail' ? 500 : 200 }));
    const webhook = (path: string) => ({
      url: `${rx.url}${path}`,
      headers: { authorization: 'Bearer ${HOOK_TOKEN}', 'x-extra': 'k=${HOOK_TOKEN}' },
      allowedEnvVars: ['HOOK_TOKEN'],
    });
    const { deliveryIds } = await producer.enqueue({
      operationId: 'op-secret',
      type: 'onComplete',
      event: { note: 'secrets stay out of storage' },
      hooks: [
        { id: 'secret-ok', type: 'onComplete', webhook: webhook('/secret-ok') },
        { id: 'secret-fail', type: 'onComplete', webhook: webhook('/secret-fail') },
        { id: 'secret-q', type: 'onComplete', webhook: { ...webhook('/secret-q'), delivery: 'qstash' } },
      ],
    });
    // SEC-H2: templates are denied by default; this worker's operator lists HOOK_TOKEN.
    const worker = spawnWorker(workerEnv(db, queue, { HOOK_TOKEN: token, HOOKRELAY_TEMPLATE_ENV: 'HOOK_TOKEN', LOG_LEVEL: 'debug' }));
    try {
      await worker.ready();
      await waitFor(
        async () => {
          const states = await Promise.all(deliveryIds.map((id) => producer.getDelivery(id)));
          return states.every((d) => d?.status === 'delivered' || d?.status === 'failed');
        },
        20_000,
        'secret deliveries settled',
      );
    } finally {
      worker.kill('SIGTERM');
      await worker.exited;
    }
    const ok = rx.requests.find((r) => r.path === '/secret-ok');
    expect(ok?.headers.authorization).toBe(`Bearer ${token}`);
    // The QStash hook has no QStash configured: it fell back to one direct fetch with the token.
    expect(rx.requests.find((r) => r.path === '/secret-q')?.headers['x-extra']).toBe(`k=${token}`);

    // Every table of the schema, every column, as text.
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    let dump = '';
    try {
      const tables = await client.query<{ table_name: string }>('select table_name from information_schema.tables where table_schema = $1', [db.schema]);
      expect(tables.rows.length).toBeGreaterThan(3);
      for (const { table_name } of tables.rows) {
        const rows = await client.query(`select * from "${db.schema}"."${table_name}"`);
        dump += JSON.stringify(rows.rows);
      }
    } finally {
      await client.end();
    }
    expect(dump).toContain('${HOOK_TOKEN}');
    expect(dump).not.toContain(token);

    // Every Redis key of this queue, whatever its type.
    const redis = new Redis(TEST_REDIS_URL);
    try {
      let redisDump = '';
      for (const key of await listKeys(queueKeys(queue), redis)) {
        const type = await redis.type(key);
        const value =
          type === 'string'
            ? await redis.get(key)
            : type === 'hash'
              ? await redis.hgetall(key)
              : type === 'list'
                ? await redis.lrange(key, 0, -1)
                : type === 'set'
                  ? await redis.smembers(key)
                  : type === 'zset'
                    ? await redis.zrange(key, 0, -1)
                    : type === 'stream'
                      ? await redis.xrange(key, '-', '+')
                      : null;
        redisDump += JSON.stringify(value);
      }
      expect(redisDump).not.toContain(token);
    } finally {
      redis.disconnect();
    }
    // Nor the worker's own logs (W2).
    expect(worker.output()).not.toContain(token);
  }, 60_000);
});
