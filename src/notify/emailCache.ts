import { silentLogger, type Logger } from '../observability/logger.ts';

/** B4: five minutes, 1,000 users per dispatcher. */
export const EMAIL_CACHE_TTL_MS = 300_000;
export const EMAIL_CACHE_CAPACITY = 1_000;

/** Reads a user's email; `null` / `undefined` mean the user has none (a miss, cached too). */
export type EmailLookup = (userId: string) => Promise<string | null | undefined>;

export type EmailResolverOptions = {
  lookup: EmailLookup;
  ttlMs?: number;
  capacity?: number;
  now?: () => number;
  logger?: Pick<Logger, 'warn'>;
};

type ResolveEmailOptions = { signal?: AbortSignal };

export type EmailResolver = {
  /** The email, or undefined when there is none, the look-up failed, or `signal` aborted. */
  resolve(userId: string, options?: ResolveEmailOptions): Promise<string | undefined>;
  /** Entries held, in flight or settled (expired ones until they are swept). */
  readonly size: number;
};

type Entry = { expiresAt: number; promise: Promise<string | undefined> };

/** B5: each waiter stops waiting on its own signal; the shared look-up keeps going for the others. */
function waitUnlessAborted(promise: Promise<string | undefined>, signal: AbortSignal | undefined): Promise<string | undefined> {
  if (!signal) return promise;
  return new Promise((resolve) => {
    const onAbort = (): void => resolve(undefined);
    signal.addEventListener('abort', onAbort, { once: true });
    void promise.then((email) => {
      signal.removeEventListener('abort', onAbort);
      resolve(email);
    });
  });
}

/**
 * B4/B5: a bounded, per-dispatcher cache of email look-ups. One Map holds userId → look-up
 * promise, so concurrent callers share one query and misses and failures are remembered for
 * the TTL as well. Eviction is FIFO by insertion; query timeouts belong to the lookup itself.
 */
export function createEmailResolver(options: EmailResolverOptions): EmailResolver {
  const { lookup, ttlMs = EMAIL_CACHE_TTL_MS, capacity = EMAIL_CACHE_CAPACITY, now = Date.now } = options;
  if (!Number.isFinite(ttlMs) || ttlMs < 0) throw new RangeError('createEmailResolver: ttlMs must be a finite number ≥ 0');
  if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError('createEmailResolver: capacity must be an integer ≥ 1');
  const logger = options.logger ?? silentLogger();
  const entries = new Map<string, Entry>();

  // Email is optional enrichment: a failing store must never stop a delivery, and the log
  // carries no error text or user id (it could hold PII or connection details).
  async function readEmail(userId: string): Promise<string | undefined> {
    try {
      const email = await lookup(userId);
      return typeof email === 'string' && email !== '' ? email : undefined;
    } catch {
      logger.warn({ event: 'webhook_email_lookup_failed' }, 'webhook user email lookup failed');
      return undefined;
    }
  }

  function cached(userId: string, at: number): Promise<string | undefined> {
    const hit = entries.get(userId);
    if (hit && hit.expiresAt > at) return hit.promise;
    entries.delete(userId);
    // Insertion order is expiry order, so expired entries sit at the head.
    for (const [key, entry] of entries) {
      if (entry.expiresAt > at && entries.size < capacity) break;
      entries.delete(key);
    }
    const promise = readEmail(userId);
    entries.set(userId, { expiresAt: at + ttlMs, promise });
    return promise;
  }

  return {
    resolve(userId, resolveOptions = {}) {
      const { signal } = resolveOptions;
      // Nobody is waiting: do not start (or count) a query.
      if (signal?.aborted) return Promise.resolve(undefined);
      return waitUnlessAborted(cached(userId, now()), signal);
    },
    get size() {
      return entries.size;
    },
  };
}
