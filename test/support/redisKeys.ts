/** Redis keys of one test's queue (or prefix), found with SCAN: never KEYS on a shared server. */
import { Redis } from 'ioredis';

export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** Every key matching `pattern` (e.g. `bull:<queue>:*`). */
export async function listKeys(pattern: string, redis?: Redis): Promise<string[]> {
  const client = redis ?? new Redis(TEST_REDIS_URL);
  try {
    const keys: string[] = [];
    let cursor = '0';
    do {
      const [next, batch] = await client.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      cursor = next;
      keys.push(...batch);
    } while (cursor !== '0');
    return keys;
  } finally {
    if (!redis) client.disconnect();
  }
}

/** Deletes every key matching `pattern`; returns how many. */
export async function deleteKeys(pattern: string, redis?: Redis): Promise<number> {
  const client = redis ?? new Redis(TEST_REDIS_URL);
  try {
    const keys = await listKeys(pattern, client);
    for (let i = 0; i < keys.length; i += 1000) await client.del(...keys.slice(i, i + 1000));
    return keys.length;
  } finally {
    if (!redis) client.disconnect();
  }
}

/** The keys of a BullMQ queue under the default `bull` prefix. */
export const queueKeys = (queue: string): string => `bull:${queue}:*`;
