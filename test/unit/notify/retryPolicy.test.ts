import { describe, expect, it } from 'vitest';
import {
  DEFAULT_RETRY_SCHEDULE_SECONDS,
  isPermanentStatus,
  MAX_RETRY_DELAY_MS,
  nextDelayMs,
  parseRetryAfter,
  parseRetrySchedule,
} from '../../../src/notify/retryPolicy.ts';

describe('Q3: retry policy', () => {
  it('Q3: the default schedule is 5,300,1800,7200,18000,36000,36000 s: 8 attempts over ~27.5 h', () => {
    expect(DEFAULT_RETRY_SCHEDULE_SECONDS).toEqual([5, 300, 1800, 7200, 18000, 36000, 36000]);
    const total = DEFAULT_RETRY_SCHEDULE_SECONDS.reduce((a, b) => a + b, 0);
    expect(total / 3600).toBeCloseTo(27.5, 0);
  });

  it('Q3: without jitter (random 0.5) each delay is exactly the scheduled one; attempts run out after schedule + 1', () => {
    const delays = [1, 2, 3, 4, 5, 6, 7].map((attempt) => nextDelayMs({ attempt, random: () => 0.5 }));
    expect(delays).toEqual(DEFAULT_RETRY_SCHEDULE_SECONDS.map((s) => s * 1000));
    expect(nextDelayMs({ attempt: 8, random: () => 0.5 })).toBeUndefined();
    expect(nextDelayMs({ attempt: 0 })).toBeUndefined();
    expect(nextDelayMs({ attempt: 2, scheduleSeconds: [1], random: () => 0.5 })).toBeUndefined();
  });

  it('Q3: jitter stays within ±20 % of each entry', () => {
    for (const [i, seconds] of DEFAULT_RETRY_SCHEDULE_SECONDS.entries()) {
      const low = nextDelayMs({ attempt: i + 1, random: () => 0 }) ?? NaN;
      const high = nextDelayMs({ attempt: i + 1, random: () => 0.999999 }) ?? NaN;
      expect(low).toBe(Math.round(seconds * 1000 * 0.8));
      expect(high).toBeLessThanOrEqual(seconds * 1000 * 1.2);
      expect(high).toBeGreaterThan(seconds * 1000 * 1.19);
      for (let k = 0; k < 50; k += 1) {
        const d = nextDelayMs({ attempt: i + 1 }) ?? NaN;
        expect(d).toBeGreaterThanOrEqual(seconds * 1000 * 0.8 - 1);
        expect(d).toBeLessThanOrEqual(seconds * 1000 * 1.2 + 1);
      }
    }
  });

  it('Q3: Retry-After sets the delay to max(scheduled, Retry-After), capped at 24 h', () => {
    expect(nextDelayMs({ attempt: 1, retryAfterMs: 60_000, random: () => 0.5 })).toBe(60_000);
    expect(nextDelayMs({ attempt: 5, retryAfterMs: 60_000, random: () => 0.5 })).toBe(18_000_000);
    expect(nextDelayMs({ attempt: 1, retryAfterMs: 3 * MAX_RETRY_DELAY_MS, random: () => 0.5 })).toBe(MAX_RETRY_DELAY_MS);
    expect(nextDelayMs({ attempt: 1, scheduleSeconds: [200_000], random: () => 0.5 })).toBe(MAX_RETRY_DELAY_MS);
  });

  it('Q3: Retry-After in seconds and as an HTTP date', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(parseRetryAfter('120', now)).toBe(120_000);
    expect(parseRetryAfter(' 0 ', now)).toBe(0);
    expect(parseRetryAfter(['30', '40'], now)).toBe(30_000);
    expect(parseRetryAfter('Thu, 01 Jan 2026 00:02:00 GMT', now)).toBe(120_000);
    expect(parseRetryAfter('Wed, 31 Dec 2025 23:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
    expect(parseRetryAfter('', now)).toBeUndefined();
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter('-5', now)).toBeUndefined();
  });

  it('Q3: permanent statuses: 3xx and 4xx except 408/409/425/429; 410 too; 5xx retry', () => {
    for (const s of [300, 301, 302, 304, 307, 308, 400, 401, 403, 404, 405, 410, 413, 422, 451]) expect(isPermanentStatus(s), String(s)).toBe(true);
    for (const s of [408, 409, 425, 429, 500, 502, 503, 504, 599]) expect(isPermanentStatus(s), String(s)).toBe(false);
  });

  it('Q3: HOOKRELAY_RETRY_SCHEDULE parses; a bad entry is named', () => {
    expect(parseRetrySchedule(undefined)).toEqual([...DEFAULT_RETRY_SCHEDULE_SECONDS]);
    expect(parseRetrySchedule('1, 2.5,3')).toEqual([1, 2.5, 3]);
    expect(() => parseRetrySchedule('1,x')).toThrow(/HOOKRELAY_RETRY_SCHEDULE.*"x"/);
    expect(() => parseRetrySchedule('1,,2')).toThrow(/HOOKRELAY_RETRY_SCHEDULE/);
  });
});
