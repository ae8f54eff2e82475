import { Writable } from 'node:stream';
import { describe, expect, it, vi } from 'vitest';
import { createLogger } from '../../../src/observability/logger.ts';
import { createEmailResolver, EMAIL_CACHE_CAPACITY, EMAIL_CACHE_TTL_MS } from '../../../src/notify/emailCache.ts';

function deferred<T>() {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

function captureLogger() {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      lines.push(chunk.toString());
      callback();
    },
  });
  return { lines, logger: createLogger({ destination, pretty: false }) };
}

const emailOf = (id: string) => `${id}@example.test`;

describe('B4: email cache', () => {
  it('B4: defaults are 5 minutes and 1,000 users', () => {
    expect(EMAIL_CACHE_TTL_MS).toBe(300_000);
    expect(EMAIL_CACHE_CAPACITY).toBe(1_000);
  });

  it('B4: 10 concurrent look-ups of one user share 1 in-flight query', async () => {
    const pending = deferred<string>();
    const lookup = vi.fn(() => pending.promise);
    const resolver = createEmailResolver({ lookup });
    const waiters = Array.from({ length: 10 }, () => resolver.resolve('u1'));
    expect(lookup).toHaveBeenCalledTimes(1);
    expect(lookup).toHaveBeenCalledWith('u1');
    pending.resolve('u1@example.test');
    expect(await Promise.all(waiters)).toEqual(Array(10).fill('u1@example.test'));
    expect(lookup).toHaveBeenCalledTimes(1);
  });

  it('B4: a settled result is served from the cache', async () => {
    const lookup = vi.fn(async (id: string) => emailOf(id));
    const resolver = createEmailResolver({ lookup });
    expect(await resolver.resolve('u1')).toBe('u1@example.test');
    expect(await resolver.resolve('u1')).toBe('u1@example.test');
    expect(lookup).toHaveBeenCalledTimes(1);
  });

  it('B4: distinct users get their own queries and emails', async () => {
    const lookup = vi.fn(async (id: string) => emailOf(id));
    const resolver = createEmailResolver({ lookup });
    expect(await Promise.all([resolver.resolve('a'), resolver.resolve('b')])).toEqual(['a@example.test', 'b@example.test']);
    expect(lookup).toHaveBeenCalledTimes(2);
  });

  it.each([null, undefined, ''])('B4: a miss (%j) resolves to undefined and is cached too', async (miss) => {
    const lookup = vi.fn(async () => miss);
    const resolver = createEmailResolver({ lookup });
    expect(await resolver.resolve('u1')).toBeUndefined();
    expect(await resolver.resolve('u1')).toBeUndefined();
    expect(lookup).toHaveBeenCalledTimes(1);
  });

  it('B4: a failing look-up resolves to undefined, is cached, and is logged without details', async () => {
    const { lines, logger } = captureLogger();
    const lookup = vi.fn(async () => {
      throw new Error('connect ECONNREFUSED postgres://admin:hunter2@db');
    });
    const resolver = createEmailResolver({ lookup, logger });
    expect(await resolver.resolve('user-secret-id')).toBeUndefined();
    expect(await resolver.resolve('user-secret-id')).toBeUndefined();
    expect(lookup).toHaveBeenCalledTimes(1);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('email lookup failed');
    expect(lines[0]).not.toContain('hunter2');
    expect(lines[0]).not.toContain('ECONNREFUSED');
    expect(lines[0]).not.toContain('user-secret-id');
  });

  it('B4: a lookup that throws synchronously is treated like a failed look-up', async () => {
    const lookup = vi.fn((): Promise<string> => {
      throw new Error('sync');
    });
    const resolver = createEmailResolver({ lookup });
    expect(await resolver.resolve('u1')).toBeUndefined();
  });

  it('B4: an entry counts while expiresAt > now; at +5 min it is looked up again', async () => {
    let clock = 1_000_000;
    const lookup = vi.fn(async (id: string) => `${id}-${lookup.mock.calls.length}@example.test`);
    const resolver = createEmailResolver({ lookup, now: () => clock });
    expect(await resolver.resolve('u1')).toBe('u1-1@example.test');
    clock += 300_000 - 1;
    expect(await resolver.resolve('u1')).toBe('u1-1@example.test');
    expect(lookup).toHaveBeenCalledTimes(1);
    clock += 1;
    expect(await resolver.resolve('u1')).toBe('u1-2@example.test');
    expect(lookup).toHaveBeenCalledTimes(2);
    expect(resolver.size).toBe(1);
  });

  it('B4: cached misses and failures also expire after the TTL', async () => {
    let clock = 0;
    let fail = true;
    const lookup = vi.fn(async (id: string) => {
      if (fail) throw new Error('down');
      return emailOf(id);
    });
    const resolver = createEmailResolver({ lookup, now: () => clock });
    expect(await resolver.resolve('u1')).toBeUndefined();
    fail = false;
    expect(await resolver.resolve('u1')).toBeUndefined();
    clock = 300_000;
    expect(await resolver.resolve('u1')).toBe('u1@example.test');
    expect(lookup).toHaveBeenCalledTimes(2);
  });

  it('B4: at 1,000 users the 1,001st evicts the oldest inserted (FIFO)', async () => {
    const lookup = vi.fn(async (id: string) => emailOf(id));
    const resolver = createEmailResolver({ lookup });
    for (let i = 1; i <= 1_000; i += 1) await resolver.resolve(`u${i}`);
    expect(resolver.size).toBe(1_000);
    // Reading u1 again does not move it to the back: eviction is by insertion, not use.
    await resolver.resolve('u1');
    expect(lookup).toHaveBeenCalledTimes(1_000);

    await resolver.resolve('u1001');
    expect(resolver.size).toBe(1_000);
    expect(lookup).toHaveBeenCalledTimes(1_001);

    await resolver.resolve('u2');
    await resolver.resolve('u1000');
    expect(lookup).toHaveBeenCalledTimes(1_001);
    await resolver.resolve('u1');
    expect(lookup).toHaveBeenCalledTimes(1_002);
    expect(lookup).toHaveBeenLastCalledWith('u1');
    expect(resolver.size).toBe(1_000);
  });

  it('B4: expired entries are dropped when new users arrive', async () => {
    let clock = 0;
    const resolver = createEmailResolver({ lookup: async (id) => emailOf(id), now: () => clock, ttlMs: 10 });
    await resolver.resolve('a');
    await resolver.resolve('b');
    clock = 10;
    await resolver.resolve('c');
    expect(resolver.size).toBe(1);
  });

  it('B4: capacity and TTL options are validated', () => {
    const lookup = async () => null;
    expect(() => createEmailResolver({ lookup, capacity: 0 })).toThrow(RangeError);
    expect(() => createEmailResolver({ lookup, capacity: 1.5 })).toThrow(/capacity/);
    expect(() => createEmailResolver({ lookup, ttlMs: -1 })).toThrow(/ttlMs/);
    expect(() => createEmailResolver({ lookup, ttlMs: Number.NaN })).toThrow(/ttlMs/);
  });
});

describe('B5: per-waiter cancellation', () => {
  it('B5: a waiter cancels alone; the others still get the email from the 1 shared query', async () => {
    const pending = deferred<string>();
    const lookup = vi.fn(() => pending.promise);
    const resolver = createEmailResolver({ lookup });
    const controller = new AbortController();
    const cancelled = resolver.resolve('u1', { signal: controller.signal });
    const first = resolver.resolve('u1');
    const second = resolver.resolve('u1', { signal: new AbortController().signal });
    controller.abort();
    // The cancelled waiter settles before the query does.
    expect(await cancelled).toBeUndefined();
    pending.resolve('u1@example.test');
    expect(await first).toBe('u1@example.test');
    expect(await second).toBe('u1@example.test');
    expect(lookup).toHaveBeenCalledTimes(1);
    // The shared result stays cached for later callers.
    expect(await resolver.resolve('u1')).toBe('u1@example.test');
    expect(lookup).toHaveBeenCalledTimes(1);
  });

  it('B5: an already-aborted signal makes no query and caches nothing', async () => {
    const lookup = vi.fn(async (id: string) => emailOf(id));
    const resolver = createEmailResolver({ lookup });
    const controller = new AbortController();
    controller.abort();
    expect(await resolver.resolve('u1', { signal: controller.signal })).toBeUndefined();
    expect(lookup).not.toHaveBeenCalled();
    expect(resolver.size).toBe(0);
  });

  it('B5: aborting after the email arrived changes nothing for that waiter', async () => {
    const resolver = createEmailResolver({ lookup: async (id) => emailOf(id) });
    const controller = new AbortController();
    const email = await resolver.resolve('u1', { signal: controller.signal });
    controller.abort();
    expect(email).toBe('u1@example.test');
  });
});
