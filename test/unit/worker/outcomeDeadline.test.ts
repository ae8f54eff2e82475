import { describe, expect, it } from 'vitest';
import type { NotificationResult } from '../../../src/notify/deliver.ts';
import { DEADLINE_SLACK_MS, deadlineBudgetMs, DEFAULT_RETRY_SCHEDULE_SECONDS } from '../../../src/notify/retryPolicy.ts';
import { decideOutcome } from '../../../src/worker/attempt/outcome.ts';

const claimed = { id: 'dlv_01J9Z3R6Y4V8Q2W7E5T1N0K3M8', attemptCount: 0, generationAttemptCount: 0, generation: 0 };
const fail503: NotificationResult = {
  ok: false,
  errorClass: 'http_error',
  httpStatus: 503,
  permanent: false,
  critical: false,
  transport: 'fetch',
  fellBack: false,
  durationMs: 3,
};
const T0 = Date.parse('2026-01-01T00:00:00Z');
const at = (nowMs: number, extra: Partial<Parameters<typeof decideOutcome>[0]> = {}) =>
  decideOutcome({ claimed, result: fail503, startedAt: new Date(nowMs), scheduleSeconds: [1, 1], nowMs, random: () => 0.5, ...extra });

describe('Q3 (issue 25): the retry schedule is a promise in time', () => {
  it('Q3: the deadline budget is the schedule’s sum + its largest jitter (20 %) + 30 s of slack', () => {
    expect(DEADLINE_SLACK_MS).toBe(30_000);
    expect(deadlineBudgetMs([1, 1])).toBe(2_400 + 30_000);
    const sum = DEFAULT_RETRY_SCHEDULE_SECONDS.reduce((a, b) => a + b, 0) * 1000;
    expect(deadlineBudgetMs()).toBe(Math.round(sum * 1.2) + 30_000);
    // Every retry of a schedule run on time fits inside it, whatever the jitter.
    expect(deadlineBudgetMs([0.01])).toBeGreaterThan(0.012 * 1000);
  });

  it('Q3: a retry within the deadline is scheduled as usual, and the outcome stores the deadline', () => {
    const d = at(T0, { deadlineAtMs: T0 + 32_400 });
    expect(d).toMatchObject({ kind: 'retry', delayMs: 1_000 });
    expect(d.outcome.deadlineAt).toEqual(new Date(T0 + 32_400));
  });

  it('Q3: a retry that would start after the deadline is moved to the deadline (the last attempt)', () => {
    const d = decideOutcome({
      claimed,
      result: fail503,
      startedAt: new Date(T0),
      scheduleSeconds: [60],
      nowMs: T0,
      random: () => 0.5,
      deadlineAtMs: T0 + 5_000,
    });
    expect(d).toMatchObject({ kind: 'retry', delayMs: 5_000 });
    expect(d.outcome.nextAttemptAt).toEqual(new Date(T0 + 5_000));
  });

  it('Q3: an attempt at or after the deadline that fails is final, with the attempt’s class as the reason', () => {
    const d = at(T0 + 40_000, { deadlineAtMs: T0 + 32_400 });
    expect(d).toMatchObject({ kind: 'failed', errorClass: 'http_error', critical: false });
    expect(d.outcome).toMatchObject({ status: 'failed', lastErrorClass: 'http_error', failureReason: 'http_error', nextAttemptAt: null });
  });

  it('Q3: a Retry-After reaching past the deadline fails now instead of sending early', () => {
    const d = at(T0, { deadlineAtMs: T0 + 10_000, result: { ...fail503, httpStatus: 429, retryAfterMs: 60_000 } });
    expect(d.kind).toBe('failed');
  });

  it('Q4: a critical delivery failing at its deadline is recorded as CriticalHookDeliveryError, the reason kept', () => {
    const d = at(T0 + 40_000, { deadlineAtMs: T0 + 32_400, result: { ...fail503, critical: true } });
    expect(d).toMatchObject({ kind: 'failed', critical: true });
    expect(d.outcome).toMatchObject({ lastErrorClass: 'CriticalHookDeliveryError', failureReason: 'http_error' });
  });

  it('Q3: without a deadline the schedule alone bounds it (as before)', () => {
    expect(at(T0 + 1e9).kind).toBe('retry');
  });
});
