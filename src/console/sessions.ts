/**
 * Console sessions, held server-side in Redis. Signing in with the token creates a random id
 * (32 bytes from the CSPRNG, base64url) that only the browser's cookie carries; Redis keeps a
 * keyed hash of it (HMAC under the console token, so a Redis reader cannot replay a session, and
 * rotating the token orphans every session) with its creation and last-use times. A session ends
 * at sign-out (deleted), after the idle timeout without a request, or at the absolute age —
 * whichever comes first. The times are checked here on every lookup with the injected clock;
 * Redis's own expiry only clears keys nobody asks for again.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { z } from 'zod';

/** The few Redis commands a session store needs (ioredis and Cluster clients both have them). */
export type SessionRedis = {
  set(key: string, value: string, px: 'PX', ms: number): Promise<unknown>;
  set(key: string, value: string, px: 'PX', ms: number, xx: 'XX'): Promise<unknown>;
  get(key: string): Promise<string | null>;
  del(key: string): Promise<number>;
};

export type SessionTimeouts = {
  /** Seconds without a request after which a session ends. */
  idleSeconds: number;
  /** Seconds after sign-in after which a session ends, however busy. */
  maxAgeSeconds: number;
};

export type Session = {
  /** The id the cookie carries (never stored). */
  id: string;
  createdAt: number;
  /** When the session ends unless used again before (ms since the epoch). */
  expiresAt: number;
};

export type SessionStore = {
  create(): Promise<Session>;
  /**
   * The live session with this id, or undefined (unknown, malformed, expired, revoked). Its idle
   * clock restarts unless `extend` is false (background polling is not operator activity).
   */
  touch(id: string, extend?: boolean): Promise<Session | undefined>;
  /** Ends the session server-side: its cookie is worthless from now on. */
  revoke(id: string): Promise<void>;
};

/** 32 random bytes in base64url: exactly 43 characters of [A-Za-z0-9_-]. */
const SESSION_ID = /^[A-Za-z0-9_-]{43}$/;
const SESSION_ID_BYTES = 32;
/** Redis keeps an idle key a little past its end, so the clock check here (not Redis) decides. */
const REDIS_SLACK_MS = 60_000;

const StoredSession = z.object({ createdAt: z.number().int(), lastSeenAt: z.number().int() });

function isSessionIdShape(id: string): boolean {
  return SESSION_ID.test(id);
}

export function createSessionStore(options: {
  redis: () => Promise<SessionRedis>;
  /** Redis key prefix, e.g. `bull:hookrelay:console:session:` (the queue's prefix and name). */
  keyPrefix: string;
  /** The console token: the key is HMAC(token, id), so the id itself is never stored. */
  token: string;
  timeouts: SessionTimeouts;
  now?: () => number;
}): SessionStore {
  const now = options.now ?? Date.now;
  const idleMs = options.timeouts.idleSeconds * 1000;
  const maxAgeMs = options.timeouts.maxAgeSeconds * 1000;
  const keyOf = (id: string) => options.keyPrefix + createHmac('sha256', options.token).update(`hookrelay-console:session:${id}`).digest('base64url');
  const endOf = (s: z.infer<typeof StoredSession>) => Math.min(s.lastSeenAt + idleMs, s.createdAt + maxAgeMs);

  return {
    async create() {
      const id = randomBytes(SESSION_ID_BYTES).toString('base64url');
      const t = now();
      const stored = { createdAt: t, lastSeenAt: t };
      const redis = await options.redis();
      await redis.set(keyOf(id), JSON.stringify(stored), 'PX', endOf(stored) - t + REDIS_SLACK_MS);
      return { id, createdAt: t, expiresAt: endOf(stored) };
    },
    async touch(id, extend = true) {
      if (!isSessionIdShape(id)) return undefined;
      const redis = await options.redis();
      const key = keyOf(id);
      const raw = await redis.get(key);
      if (raw === null) return undefined;
      let parsed: z.infer<typeof StoredSession>;
      try {
        parsed = StoredSession.parse(JSON.parse(raw));
      } catch {
        await redis.del(key);
        return undefined;
      }
      const t = now();
      if (t >= endOf(parsed)) {
        await redis.del(key);
        return undefined;
      }
      if (!extend) return { id, createdAt: parsed.createdAt, expiresAt: endOf(parsed) };
      const next = { createdAt: parsed.createdAt, lastSeenAt: t };
      // XX: only while it still exists, so a concurrent sign-out is never undone.
      await redis.set(key, JSON.stringify(next), 'PX', endOf(next) - t + REDIS_SLACK_MS, 'XX');
      return { id, createdAt: parsed.createdAt, expiresAt: endOf(next) };
    },
    async revoke(id) {
      if (!isSessionIdShape(id)) return;
      const redis = await options.redis();
      await redis.del(keyOf(id));
    },
  };
}
