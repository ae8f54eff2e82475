/**
 * Q7: a QStash callback is accepted once. Its identity — the token's `jti`, or without one the
 * source message id with its retry count — is remembered in Redis (SET NX with an expiry, under
 * the queue's key prefix) for as long as its token is valid, so a captured callback replayed
 * within its token's lifetime finds its identity taken and changes nothing; past it, its token is
 * refused as expired. QStash signs every delivery of a callback afresh (a new `jti`), so its own
 * retry after a failed answer is never taken for a replay; a claim whose processing failed is
 * released all the same.
 */
import { createHash } from 'node:crypto';

/** The Redis commands the guard needs (ioredis' Redis and Cluster both have them). */
export type ReplayRedis = {
  set(key: string, value: string, px: 'PX', ms: number, nx: 'NX'): Promise<'OK' | null>;
  del(key: string): Promise<number>;
};

export type CallbackReplayGuard = {
  /** `first` (now remembered for `ttlMs`) or `seen` (a replay). Throws when Redis does not answer in time. */
  claim(identity: string, ttlMs: number): Promise<'first' | 'seen'>;
  /** Forgets a claim whose callback was not recorded (an error answered 5xx). */
  release(identity: string): Promise<void>;
};

/** A claim waits this long for Redis; then the callback is answered 503 and QStash retries it. */
const REDIS_TIMEOUT_MS = 2_000;

export function createRedisReplayGuard(p: {
  redis: ReplayRedis;
  /** Key prefix, e.g. `bull:hookrelay:qstash:seen:` (the queue's prefix and name). */
  keyPrefix: string;
  /** False while the connection is down: answered at once instead of waiting in ioredis' offline queue. */
  ready: () => boolean;
}): CallbackReplayGuard {
  // Hashed: one fixed-length key whatever the token carries.
  const keyOf = (identity: string) => p.keyPrefix + createHash('sha256').update(identity).digest('base64url');
  return {
    async claim(identity, ttlMs) {
      if (!p.ready()) throw new Error('redis unreachable');
      const set = await withinTimeout(p.redis.set(keyOf(identity), '1', 'PX', Math.max(1_000, Math.ceil(ttlMs)), 'NX'));
      return set === 'OK' ? 'first' : 'seen';
    },
    async release(identity) {
      if (!p.ready()) return;
      await withinTimeout(p.redis.del(keyOf(identity))).catch(() => undefined);
    },
  };
}

async function withinTimeout<T>(work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      work,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('redis did not answer')), REDIS_TIMEOUT_MS);
      }),
    ]);
  } finally {
    clearTimeout(timer);
    work.catch(() => undefined);
  }
}
