import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// The package entry's HookDispatcher: it supplies queue mode's default (lazily loaded) producer.
import { HookDispatcher } from '../../../src/entry/index.ts';
import { silentLogger } from '../../../src/observability/logger.ts';
import { createTestStore, type TestStore } from '../../support/db.ts';
import { TEST_REDIS_URL } from './harness.ts';
import { deleteKeys, queueKeys } from '../../support/redisKeys.ts';

describe('D8: queue mode without an explicit producer', () => {
  let t: TestStore;
  const queueName = `default-producer-${randomBytes(4).toString('hex')}`;
  beforeAll(async () => {
    t = await createTestStore('defprod');
  });
  afterAll(async () => {
    await deleteKeys(queueKeys(queueName));
    await t.cleanup();
  });

  it('D8: builds its producer from the environment it was given, records the delivery (ledger + job), and closes it', async () => {
    const d = new HookDispatcher({
      mode: 'queue',
      env: { DATABASE_URL: t.url, REDIS_URL: TEST_REDIS_URL, HOOKRELAY_QUEUE: queueName },
      logger: silentLogger(),
    });
    d.register('op-default', [{ id: 'done', type: 'onComplete', webhook: { url: 'https://hooks.example.com/done' } }]);
    await d.dispatch('op-default', 'onComplete', { operationId: 'op-default', reason: 'done' });
    const rows = await t.store.pool!.query<{ id: string; hook_id: string; status: string }>(
      'select id, hook_id, status from deliveries where operation_id = $1',
      ['op-default'],
    );
    expect(rows.rows).toHaveLength(1);
    expect(rows.rows[0]).toMatchObject({ hook_id: 'done', status: 'queued' });
    const redis = new Redis(TEST_REDIS_URL);
    expect(await redis.exists(`bull:${queueName}:${rows.rows[0]!.id}`)).toBe(1);
    redis.disconnect();
    await d.close();
  });
});
