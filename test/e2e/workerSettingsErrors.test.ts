/**
 * UX-6 / SEC-T5 setup messages, through the `hookrelay` bin as shipped (plain node over dist/):
 * every bad setting stops `hookrelay worker` within seconds with exit 2 and one line naming the
 * variable and the expected form (never the value); an unknown `HOOKRELAY_*` variable is warned
 * about once with the closest known name.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestStore, type TestStore } from '../support/db.ts';
import { TEST_REDIS_URL } from '../integration/queue/harness.ts';
import { spawnWorker } from '../support/hookrelayProcess.ts';
import { deleteKeys, queueKeys } from '../support/redisKeys.ts';

/** Generous: each case measured well under a second; a hang would run into the test timeout. */
const EXIT_BOUND_MS = 10_000;

async function exitOf(env: Record<string, string>): Promise<{ code: number | null; output: string; elapsedMs: number }> {
  const started = Date.now();
  const worker = spawnWorker({ REDIS_URL: TEST_REDIS_URL, HOOKRELAY_HTTP_PORT: '0', HOOKRELAY_QUEUE: 'ux6-never-started', ...env });
  const timer = setTimeout(() => worker.kill(), EXIT_BOUND_MS);
  const code = await worker.exited;
  clearTimeout(timer);
  return { code, output: worker.output(), elapsedMs: Date.now() - started };
}

describe('UX-6 / SEC-T5: a bad setting exits 2 naming the variable and the expected form, within seconds', () => {
  it.each([
    ['DATABASE_URL', 'postgres://app:pw-marker@[::1', 'postgres:// or postgresql:// URL'],
    ['DATABASE_URL', 'mysql://x', 'postgres:// or postgresql:// URL'],
    ['REDIS_URL', 'redis://:pw-marker@127.0.0.1:99999', 'redis:// or rediss:// URL'],
    ['HOOKRELAY_ALLOWED_CIDRS', '127.0.0.1/32,10.0.0.0/33', 'entry 2 of 2 is not a CIDR'],
    ['HOOKRELAY_CONCURRENCY', '1e3', 'whole number from 1 to 10000, in plain digits'],
    ['HOOKRELAY_CONCURRENCY', '0x10', 'whole number from 1 to 10000, in plain digits'],
    ['HOOKRELAY_CONCURRENCY', '99999999999', 'whole number from 1 to 10000, in plain digits'],
    ['HOOKRELAY_LOCK_DURATION_MS', '3e4', 'whole number from 100 to 2147483647'],
    ['HOOKRELAY_HTTP_PORT', '0x1f90', 'whole number from 0 to 65535'],
    ['HOOKRELAY_SIGNING_SECRETS', 'whsec_c2hvcnQ=', 'expected whsec_<base64 of 24-64 random bytes>'],
  ])('UX-6 SEC-T5 %s=%j → exit 2, the variable and "%s" named, the value never', async (variable, value, expected) => {
    const { code, output, elapsedMs } = await exitOf({ DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/test', [variable]: value });
    expect(code, output).toBe(2);
    expect(elapsedMs).toBeLessThan(EXIT_BOUND_MS);
    expect(output).toContain(`${variable}: `);
    expect(output).toContain(expected);
    expect(output).not.toContain('pw-marker');
    // Secret-bearing variables: not a byte of the value (the rules of the others quote 1e3 and 0x10 as examples).
    if (['DATABASE_URL', 'REDIS_URL', 'HOOKRELAY_SIGNING_SECRETS'].includes(variable)) expect(output).not.toContain(value);
    expect(output).not.toMatch(/MaxListenersExceededWarning|Invalid URL|ENOTFOUND/);
  });
});

describe('UX-6 unknown HOOKRELAY_* variables', () => {
  let db: TestStore;
  const queue = `ux6-${randomBytes(4).toString('hex')}`;
  beforeAll(async () => {
    db = await createTestStore('e2e_ux6');
  });
  afterAll(async () => {
    await deleteKeys(queueKeys(queue));
    await db.cleanup();
  });

  it('UX-6 HOOKRELAY_CONCURENCY (misspelt) is warned about once, naming HOOKRELAY_CONCURRENCY; the worker still starts', async () => {
    const worker = spawnWorker({
      DATABASE_URL: db.url,
      REDIS_URL: TEST_REDIS_URL,
      HOOKRELAY_QUEUE: queue,
      HOOKRELAY_HTTP_PORT: '0',
      HOOKRELAY_CONCURENCY: '4',
      HOOKRELAY_SOMETHING_ELSE_ENTIRELY: 'x',
    });
    try {
      await worker.ready();
      expect(await worker.stop('SIGTERM')).toBe(0);
    } finally {
      worker.kill();
    }
    const lines = worker.output().split('\n');
    const typo = lines.filter((l) => l.includes('HOOKRELAY_CONCURENCY'));
    expect(typo).toEqual(['hookrelay: warning: HOOKRELAY_CONCURENCY is not a hookrelay setting and is ignored: did you mean HOOKRELAY_CONCURRENCY?']);
    expect(lines.filter((l) => l.includes('HOOKRELAY_SOMETHING_ELSE_ENTIRELY'))).toHaveLength(1);
  });
});
