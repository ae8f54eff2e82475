/**
 * Issue 51 (PORT-3, PORT-5): the pure parts — the token-guess throttle on an injected clock, and
 * the log limiter's one line per key per window.
 */
import { describe, expect, it } from 'vitest';
import { createAuthThrottle, throttleKey } from '../../../src/observability/authThrottle.ts';
import { createLogLimiter } from '../../../src/observability/logLimiter.ts';

function clock() {
  let t = 1_000_000;
  const waits: number[] = [];
  return {
    now: () => t,
    sleep: async (ms: number) => {
      waits.push(ms);
      t += ms;
    },
    advance: (ms: number) => {
      t += ms;
    },
    waits,
  };
}

describe('PORT-3 token-guess throttle', () => {
  it('PORT-3 (SEC-H8): 5 free attempts a minute per address, then turns 1 s, 2 s, 4 s apart; a turn further than 5 s is refused with its wait', async () => {
    const c = clock();
    const throttle = createAuthThrottle({ now: c.now, sleep: c.sleep });
    for (let i = 0; i < 5; i++) {
      const a = await throttle.admit('signin', '203.0.113.7');
      expect(a.ok && a.waitedMs).toBe(0);
      if (a.ok) a.settle('wrong');
    }
    const waited: number[] = [];
    for (let i = 0; i < 3; i++) {
      const a = await throttle.admit('signin', '203.0.113.7');
      if (!a.ok) throw new Error('refused too early');
      waited.push(a.waitedMs);
      a.settle('wrong');
    }
    expect(waited).toEqual([1_000, 2_000, 4_000]);
    const refused = await throttle.admit('signin', '203.0.113.7');
    expect(refused).toEqual({ ok: false, retryAfterSeconds: 8, scope: 'address' });
    // Another address, and the same address's bearer guesses, are not held by this one.
    expect((await throttle.admit('signin', '198.51.100.1')).ok).toBe(true);
    expect((await throttle.admit('bearer', '203.0.113.7')).ok).toBe(true);
    // A quiet minute (past the last turn) forgets the address.
    c.advance(8_000 + 60_000);
    const fresh = await throttle.admit('signin', '203.0.113.7');
    expect(fresh.ok && fresh.waitedMs).toBe(0);
  });

  it('PORT-3 (SEC-H8): a right token clears its address; an unchecked attempt (unreadable form) does not count', async () => {
    const c = clock();
    const throttle = createAuthThrottle({ now: c.now, sleep: c.sleep });
    for (let i = 0; i < 4; i++) {
      const a = await throttle.admit('signin', '::ffff:10.0.0.1');
      if (a.ok) a.settle('wrong');
    }
    const right = await throttle.admit('signin', '10.0.0.1');
    if (right.ok) right.settle('right');
    for (let i = 0; i < 20; i++) {
      const a = await throttle.admit('signin', '10.0.0.1');
      expect(a.ok && a.waitedMs).toBe(0);
      if (a.ok) a.settle(i < 4 ? 'wrong' : 'unjudged');
    }
    expect(c.waits).toEqual([]);
  });

  it('PORT-3 (SEC-H8): all addresses together get 50 free attempts a minute, then turns (a guesser spread over many addresses)', async () => {
    const c = clock();
    const throttle = createAuthThrottle({ now: c.now, sleep: c.sleep });
    for (let i = 0; i < 50; i++) {
      const a = await throttle.admit('bearer', `203.0.113.${i}`);
      if (a.ok) a.settle('wrong');
    }
    const next = await throttle.admit('bearer', '198.51.100.200');
    expect(next.ok && next.waitedMs).toBe(250);
  });

  it('PORT-3 (SEC-H8): IPv6 addresses are throttled by their /64, IPv4-mapped ones as IPv4', () => {
    expect(throttleKey('2001:db8:1:2:aaaa::1')).toBe(throttleKey('2001:db8:1:2:bbbb::9'));
    expect(throttleKey('2001:db8:1:3::1')).not.toBe(throttleKey('2001:db8:1:2::1'));
    expect(throttleKey('::ffff:127.0.0.1')).toBe('127.0.0.1');
    expect(throttleKey(undefined)).toBe('unknown');
  });
});

describe('PORT-5 log limiter', () => {
  it('PORT-5 (SEC-H8): one line per key at once, the rest counted into one summary at the window end', async () => {
    const lines: string[] = [];
    const limit = createLogLimiter({ windowMs: 50 });
    for (let i = 0; i < 1_000; i++) limit(i % 2 === 0 ? 'missing_signature' : 'invalid_signature', (n) => lines.push(`${i % 2}:${n}`));
    expect(lines).toEqual(['0:0', '1:0']);
    await new Promise((r) => setTimeout(r, 120));
    expect(lines.sort()).toEqual(['0:0', '0:499', '1:0', '1:499']);
    limit('missing_signature', (n) => lines.push(`again:${n}`));
    expect(lines).toContain('again:0');
    limit.flush();
  });
});
