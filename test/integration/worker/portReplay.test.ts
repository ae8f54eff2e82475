/**
 * Issue 51 (PORT-2): a QStash callback is accepted once. A worker service with callbacks on
 * (HOOKRELAY_PUBLIC_URL and both signing keys) over real Redis and Postgres; callbacks signed with
 * its real keys the way QStash signs them (test/support/qstashServer.ts's signQStashJwt: HS256,
 * `jti`, 5-minute `exp`, body hash). A replay of an accepted callback changes no row and is
 * counted; its token id is remembered under the queue's prefix for the token's lifetime only.
 */
import { randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getDeliveryRow, insertDeliveries, newDeliveryId } from '../../../src/store/deliveriesRepo.ts';
import { freePort } from '../../support/loopbackHttp.ts';
import { signQStashJwt } from '../../support/qstashServer.ts';
import { TEST_REDIS_URL } from '../../support/redisKeys.ts';
import { createStack, type Stack } from '../queue/harness.ts';

const CURRENT = `sig_${randomBytes(12).toString('hex')}`;
const NEXT = `sig_${randomBytes(12).toString('hex')}`;

/** A QStash callback body for one attempt of the source message. */
function callbackBody(status: number, retried: number): string {
  return JSON.stringify({
    status,
    header: { 'Content-Type': ['text/plain'] },
    body: Buffer.from(`receiver said ${status}`).toString('base64'),
    retried,
    maxRetries: 3,
    sourceMessageId: 'msg_port2',
    url: 'http://127.0.0.1:9/hook',
    method: 'POST',
    sourceHeader: {},
    sourceBody: Buffer.from('{"a":1}').toString('base64'),
  });
}

describe('PORT-2 QStash callbacks are accepted once (worker service, real Redis and Postgres)', () => {
  let stack: Stack;
  let port: number;
  let redis: Redis;

  beforeAll(async () => {
    stack = await createStack('port_replay');
    port = await freePort();
    await stack.startWorker({
      HOOKRELAY_HTTP_PORT: String(port),
      HOOKRELAY_PUBLIC_URL: `http://127.0.0.1:${port}`,
      QSTASH_CURRENT_SIGNING_KEY: CURRENT,
      QSTASH_NEXT_SIGNING_KEY: NEXT,
    });
    redis = new Redis(TEST_REDIS_URL);
  });
  afterAll(async () => {
    redis?.disconnect();
    await stack?.cleanup();
  });

  /** A delivery QStash accepted (attempt 1), waiting for its callbacks. */
  const acceptedDelivery = async (): Promise<string> => {
    const id = newDeliveryId();
    await insertDeliveries(stack.db.store.db, [
      {
        id,
        operationId: `op-${id}`,
        eventType: 'onComplete' as const,
        hookId: 'h',
        hook: { id: 'h', type: 'onComplete', webhook: { url: 'http://127.0.0.1:9/hook', delivery: 'qstash' } },
        transport: 'qstash' as const,
        payload: {},
        endpointKey: 'http://127.0.0.1:9/hook',
        occurredAt: new Date(),
      },
    ]);
    await stack.db.store.db.execute(sql`update deliveries set status = 'accepted_by_qstash', attempt_count = 1 where id = ${id}`);
    return id;
  };

  const post = async (path: string, signature: string, body: string) => {
    const res = await fetch(`http://127.0.0.1:${port}${path}`, { method: 'POST', headers: { 'upstash-signature': signature }, body });
    return { status: res.status, text: await res.text() };
  };

  const rowState = async (id: string) => {
    const row = await getDeliveryRow(stack.db.store.db, id);
    return { status: row?.status, attemptCount: row?.attemptCount, attempts: row?.attempts, lastHttpStatus: row?.lastHttpStatus, updatedAt: row?.updatedAt };
  };

  it('PORT-2 (Q7): a replayed signed callback changes no row — sequentially or 20 at once — and is counted', async () => {
    const id = await acceptedDelivery();
    const path = `/qstash/callback?deliveryId=${encodeURIComponent(id)}&generation=0`;
    const body = callbackBody(503, 0);
    const signature = signQStashJwt({ key: CURRENT, url: `http://127.0.0.1:${port}${path}`, body });

    const first = await post(path, signature, body);
    expect(first).toEqual({ status: 200, text: 'ok' });
    const recorded = await rowState(id);
    expect(recorded.attemptCount).toBe(2);
    expect(recorded.lastHttpStatus).toBe(503);

    for (let i = 0; i < 5; i++) expect(await post(path, signature, body)).toEqual({ status: 200, text: 'already recorded: nothing changed' });
    const together = await Promise.all(Array.from({ length: 20 }, () => post(path, signature, body)));
    // Each is refused: either found remembered, or found being read under the same token right now.
    for (const r of together) expect([200, 409]).toContain(r.status);
    expect(together.filter((r) => r.text === 'ok')).toEqual([]);
    // The same token with another body (another status, another excerpt): its hash does not match.
    expect((await post(path, signature, callbackBody(500, 0))).status).toBe(401);

    expect(await rowState(id)).toEqual(recorded);
    const metrics = stack.worker().metrics;
    const replayed = (await metrics.qstashCallbacks.get()).values.filter((v) => v.labels.result === 'replayed').reduce((n, v) => n + v.value, 0);
    expect(replayed).toBe(25);
  });

  it('PORT-2 (Q7): the token id is remembered under the queue prefix for the token lifetime only; a fresh token for the next attempt is recorded', async () => {
    const id = await acceptedDelivery();
    const cbPath = `/qstash/callback?deliveryId=${encodeURIComponent(id)}&generation=0`;
    const url = `http://127.0.0.1:${port}${cbPath}`;
    const firstBody = callbackBody(503, 0);
    expect((await post(cbPath, signQStashJwt({ key: CURRENT, url, body: firstBody }), firstBody)).status).toBe(200);
    // QStash's next attempt reports with a token of its own (signed with the next key, rotation): recorded.
    const secondBody = callbackBody(200, 1);
    expect(await post(cbPath, signQStashJwt({ key: NEXT, url, body: secondBody }), secondBody)).toEqual({ status: 200, text: 'ok' });
    const row = await rowState(id);
    expect(row.status).toBe('delivered');
    expect(row.attemptCount).toBe(3);

    const keys = await redis.keys(`${stack.prefix}:${stack.queueName}:qstash:seen:*`);
    expect(keys.length).toBeGreaterThanOrEqual(2);
    for (const key of keys) {
      const ttl = await redis.pttl(key);
      // The token's 5 minutes plus a minute for clock skew, never longer.
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(360_000);
    }
  });
});
