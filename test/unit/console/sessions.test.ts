/** SEC-H5: the console's server-side sessions against the real Redis, with a test clock for the timeouts. */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSessionStore, type SessionRedis, type SessionStore } from '../../../src/console/sessions.ts';
import { deleteKeys, listKeys, TEST_REDIS_URL } from '../../support/redisKeys.ts';

const TOKEN = `console-token-${randomBytes(8).toString('hex')}`;
const MIN = 60_000;

describe('SEC-H5 console sessions (Redis)', () => {
  let redis: Redis;
  const prefix = `test-console-${randomBytes(4).toString('hex')}:console:session:`;
  let clock = Date.UTC(2030, 0, 1);
  const store = (token = TOKEN): SessionStore =>
    createSessionStore({
      redis: async () => redis as unknown as SessionRedis,
      keyPrefix: prefix,
      token,
      timeouts: { idleSeconds: 30 * 60, maxAgeSeconds: 12 * 60 * 60 },
      now: () => clock,
    });

  beforeAll(() => {
    redis = new Redis(TEST_REDIS_URL);
  });
  afterAll(async () => {
    await deleteKeys(`${prefix}*`, redis);
    redis.disconnect();
  });

  it('SEC-H5 session: a random 32-byte id; Redis holds only a keyed hash of it (never the id, never the token)', async () => {
    const s = store();
    const a = await s.create();
    const b = await s.create();
    expect(a.id).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(a.id, 'base64url').length).toBe(32);
    expect(a.id).not.toBe(b.id);
    const keys = await listKeys(`${prefix}*`, redis);
    expect(keys.length).toBeGreaterThanOrEqual(2);
    for (const key of keys) {
      expect(key).not.toContain(a.id);
      expect(key).not.toContain(b.id);
      const value = (await redis.get(key)) ?? '';
      for (const secret of [a.id, b.id, TOKEN]) expect(`${key} ${value}`).not.toContain(secret);
      expect(await redis.pttl(key)).toBeGreaterThan(0); // Redis clears it even if nobody asks again
    }
    expect((await s.touch(a.id))?.id).toBe(a.id);
  });

  it('SEC-H5 session: idle timeout — used within 30 min it lives on; 30 min without a request ends it', async () => {
    const s = store();
    clock = Date.UTC(2030, 0, 2);
    const session = await s.create();
    for (let i = 0; i < 4; i++) {
      clock += 29 * MIN;
      expect(await s.touch(session.id), `touch ${i}`).toBeDefined(); // each use restarts the idle clock
    }
    clock += 30 * MIN;
    expect(await s.touch(session.id)).toBeUndefined();
    clock -= 1; // once ended it stays ended (deleted), even for a clock that steps back
    expect(await s.touch(session.id)).toBeUndefined();
  });

  it('SEC-H5 session: a lookup that does not extend (background polling) leaves the idle clock running', async () => {
    const s = store();
    clock = Date.UTC(2030, 0, 5);
    const session = await s.create();
    for (let i = 0; i < 3; i++) {
      clock += 9 * MIN;
      expect(await s.touch(session.id, false), `poll ${i}`).toBeDefined();
    }
    clock += 3 * MIN; // 30 min since the last real use
    expect(await s.touch(session.id, false)).toBeUndefined();
  });

  it('SEC-H5 session: absolute timeout — a session used every 20 min still ends 12 h after sign-in', async () => {
    const s = store();
    clock = Date.UTC(2030, 0, 3);
    const start = clock;
    const session = await s.create();
    while (clock + 20 * MIN < start + 12 * 60 * MIN) {
      clock += 20 * MIN;
      expect(await s.touch(session.id)).toBeDefined();
    }
    clock = start + 12 * 60 * MIN;
    expect(await s.touch(session.id)).toBeUndefined();
  });

  it('SEC-H5 session: revocation — a revoked session is gone server-side; the others stay', async () => {
    const s = store();
    clock = Date.UTC(2030, 0, 4);
    const a = await s.create();
    const b = await s.create();
    await s.revoke(a.id);
    expect(await s.touch(a.id)).toBeUndefined();
    expect(await s.touch(b.id)).toBeDefined();
  });

  it('SEC-H5 session: rotating the token ends every session; malformed or unknown ids are no session', async () => {
    const a = await store().create();
    expect(await store(`${TOKEN}-rotated`).touch(a.id)).toBeUndefined();
    expect(await store().touch(a.id)).toBeDefined();
    const s = store();
    for (const id of ['', 'short', `${a.id}x`, randomBytes(32).toString('base64url'), '__proto__', `${a.id.slice(0, 42)}\u0000`]) {
      expect(await s.touch(id), JSON.stringify(id)).toBeUndefined();
    }
  });
});
