import { describe, expect, it } from 'vitest';
import { isSlowAttempt, LIMIT_MAX, limitCeiling, nextLimit, SLOW_ATTEMPT_MS } from '../../../src/isolation/adaptiveLimit.ts';

const policy = { initial: 4, cap: 0 };

describe('adaptive endpoint limit (issue 27, AIMD)', () => {
  it('a fast success adds one; from the start (4) a healthy receiver reaches 64 after 60 successes', () => {
    expect(nextLimit(undefined, 'ok', policy)).toBe(5);
    let limit: number | undefined;
    let successes = 0;
    while ((limit ?? policy.initial) < 64) {
      limit = nextLimit(limit, 'ok', policy);
      successes += 1;
    }
    expect(successes).toBe(60);
  });

  it('a failure halves the limit, never below 1', () => {
    expect(nextLimit(40, 'fail', policy)).toBe(20);
    expect(nextLimit(3, 'fail', policy)).toBe(1);
    expect(nextLimit(1, 'fail', policy)).toBe(1);
  });

  it('a slow success shrinks the limit by 10 %, not below the start; a limit already below it stays', () => {
    expect(nextLimit(100, 'slow', policy)).toBe(90);
    expect(nextLimit(5, 'slow', policy)).toBe(4);
    expect(nextLimit(4, 'slow', policy)).toBe(4);
    expect(nextLimit(2, 'slow', policy)).toBe(2);
    // A receiver that is always slow settles at a few slots, whatever it had earned.
    let limit = 500;
    for (let i = 0; i < 200; i += 1) limit = nextLimit(limit, 'slow', policy);
    expect(limit).toBe(4);
  });

  it('a local problem (none) leaves the limit as it is', () => {
    expect(nextLimit(17, 'none', policy)).toBe(17);
    expect(nextLimit(undefined, 'none', policy)).toBe(4);
  });

  it('a configured cap is a ceiling: successes never pass it, a limit above it (cap lowered) is clamped first', () => {
    const capped = { initial: 4, cap: 10 };
    let limit: number | undefined;
    for (let i = 0; i < 100; i += 1) limit = nextLimit(limit, 'ok', capped);
    expect(limit).toBe(10);
    expect(nextLimit(64, 'ok', capped)).toBe(10);
    expect(nextLimit(64, 'fail', capped)).toBe(5);
    expect(nextLimit(undefined, 'ok', { initial: 4, cap: 2 })).toBe(2);
  });

  it('no configured cap: the ceiling is LIMIT_MAX', () => {
    expect(limitCeiling(0)).toBe(LIMIT_MAX);
    expect(limitCeiling(7)).toBe(7);
    expect(nextLimit(LIMIT_MAX, 'ok', policy)).toBe(LIMIT_MAX);
  });

  it('slow means longer than SLOW_ATTEMPT_MS, or than half a short webhook timeout', () => {
    expect(isSlowAttempt(SLOW_ATTEMPT_MS, 10_000)).toBe(false);
    expect(isSlowAttempt(SLOW_ATTEMPT_MS + 1, 10_000)).toBe(true);
    expect(isSlowAttempt(600, 1_000)).toBe(true);
    expect(isSlowAttempt(400, 1_000)).toBe(false);
  });
});
