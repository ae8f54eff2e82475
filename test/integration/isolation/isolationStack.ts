/**
 * What the isolation tests run on: the real Redis and one migrated Postgres test store per file,
 * a fresh gate key prefix per test, and after each test every isolation it started stopped, its
 * Redis keys and the endpoint rows removed. Also the two attempt results they feed settle().
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest';
import type { NotificationFailure, NotificationSuccess } from '../../../src/notify/deliver.ts';
import type { EndpointIsolation } from '../../../src/isolation/endpointIsolation.ts';
import type { Db } from '../../../src/store/db.ts';
import { createTestStore, type TestStore } from '../../support/db.ts';
import { deleteKeys } from '../../support/redisKeys.ts';
import { TEST_REDIS_URL } from '../queue/harness.ts';

export type IsolationStack = {
  readonly db: Db;
  readonly redis: Redis;
  /** This test's gate key prefix. */
  readonly prefix: string;
  /** Starts the isolation and stops it after the test. */
  start(iso: EndpointIsolation): Promise<EndpointIsolation>;
};

/** Registers the file's hooks; call it at the top of a describe. */
export function useIsolationStack(storeName: string, prefixTag: string): IsolationStack {
  let testStore: TestStore | undefined;
  let redis: Redis | undefined;
  let prefix = '';
  let started: EndpointIsolation[] = [];
  const ready = <T>(value: T | undefined, what: string): T => {
    if (value === undefined) throw new Error(`isolation stack: ${what} is used before beforeAll ran`);
    return value;
  };
  beforeAll(async () => {
    testStore = await createTestStore(storeName);
    redis = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: null });
  });
  afterAll(async () => {
    redis?.disconnect();
    await testStore?.cleanup();
  });
  beforeEach(() => {
    prefix = `${prefixTag}-${randomUUID()}`;
  });
  afterEach(async () => {
    for (const iso of started) iso.stop();
    started = [];
    await deleteKeys(`${prefix}:*`, ready(redis, 'redis'));
    await ready(testStore, 'the test store').store.db.execute(sql`DELETE FROM endpoints`);
  });
  return {
    get db() {
      return ready(testStore, 'the test store').store.db;
    },
    get redis() {
      return ready(redis, 'redis');
    },
    get prefix() {
      return prefix;
    },
    async start(iso) {
      await iso.start();
      started.push(iso);
      return iso;
    },
  };
}

export const notificationSuccess: NotificationSuccess = { ok: true, transport: 'fetch', httpStatus: 200, fellBack: false, durationMs: 2 };

/** A retryable 503 of the given error class. */
export const notificationFailure = (errorClass = 'http_error'): NotificationFailure =>
  ({ ok: false, errorClass, httpStatus: 503, permanent: false, critical: false, transport: 'fetch', fellBack: false, durationMs: 2 }) as NotificationFailure;
