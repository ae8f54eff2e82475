/** Q3: retry schedule, jitter, Retry-After and permanent statuses. Pure functions. */
import { DEFAULT_RETRY_SCHEDULE_SECONDS } from '../contract/defaults.ts';
import { RetryScheduleError } from '../contract/errors.ts';

/** Delays (seconds) after the first immediate attempt: 8 attempts over ~27.5 h. */
export { DEFAULT_RETRY_SCHEDULE_SECONDS };
const JITTER_RATIO = 0.2;
export const MAX_RETRY_DELAY_MS = 24 * 60 * 60 * 1000;
const MS_PER_SECOND = 1000;
/** 4xx statuses that are worth retrying: timeout, conflict, too early, too many requests. */
const RETRYABLE_CLIENT_STATUSES = new Set([408, 409, 425, 429]);
const DELTA_SECONDS = /^\d+$/;
/** IMF-fixdate, RFC 850 and asctime all start with a day name. */
const HTTP_DATE_START = /^[A-Za-z]{3}/;

/** 3xx and 4xx other than 408/409/425/429 (410 included) never succeed on retry. */
export function isPermanentStatus(status: number): boolean {
  if (status >= 300 && status < 400) return true;
  if (status >= 400 && status < 500) return !RETRYABLE_CLIENT_STATUSES.has(status);
  return false;
}

/** `Retry-After` as milliseconds from `nowMs` (delta-seconds or HTTP date); undefined when absent or invalid. */
export function parseRetryAfter(header: string | string[] | undefined, nowMs: number): number | undefined {
  const value = (Array.isArray(header) ? header[0] : header)?.trim();
  if (value === undefined || value === '') return undefined;
  if (DELTA_SECONDS.test(value)) return Math.min(Number(value) * MS_PER_SECOND, Number.MAX_SAFE_INTEGER);
  if (!HTTP_DATE_START.test(value)) return undefined;
  const at = Date.parse(value);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - nowMs);
}

export type NextDelayInput = {
  /** The attempt that just failed, 1-based. */
  attempt: number;
  scheduleSeconds?: readonly number[];
  retryAfterMs?: number;
  /** [0, 1) source for jitter. */
  random?: () => number;
};

/**
 * Delay before the next attempt: the scheduled delay ±20 %, raised to Retry-After, capped at
 * 24 h; undefined when the attempts are exhausted (schedule length + 1 attempts in all).
 */
export function nextDelayMs(input: NextDelayInput): number | undefined {
  const schedule = input.scheduleSeconds ?? DEFAULT_RETRY_SCHEDULE_SECONDS;
  if (!Number.isInteger(input.attempt) || input.attempt < 1 || input.attempt > schedule.length) return undefined;
  const scheduled = (schedule[input.attempt - 1] ?? 0) * MS_PER_SECOND;
  const factor = 1 + (2 * (input.random ?? Math.random)() - 1) * JITTER_RATIO;
  const delay = Math.max(scheduled * factor, input.retryAfterMs ?? 0);
  return Math.round(Math.min(delay, MAX_RETRY_DELAY_MS));
}

/**
 * Q3: fixed part of a delivery's deadline slack — the attempts' own time (a webhook
 * timeout each) and queue latency, on top of the schedule's largest jitter.
 */
export const DEADLINE_SLACK_MS = 30_000;

/**
 * How long a delivery may take from its first attempt (or first wait behind its endpoint) to its
 * last: the sum of the schedule, plus the most jitter can add (20 %), plus DEADLINE_SLACK_MS.
 * Past it the delivery is `failed`, whether or not its endpoint let it try.
 */
export function deadlineBudgetMs(scheduleSeconds: readonly number[] = DEFAULT_RETRY_SCHEDULE_SECONDS): number {
  const sumMs = scheduleSeconds.reduce((total, s) => total + s * MS_PER_SECOND, 0);
  return Math.round(sumMs * (1 + JITTER_RATIO)) + DEADLINE_SLACK_MS;
}

/** Parses HOOKRELAY_RETRY_SCHEDULE (comma-separated non-negative seconds); unset → the default. */
export function parseRetrySchedule(value: string | undefined): number[] {
  if (value === undefined || value.trim() === '') return [...DEFAULT_RETRY_SCHEDULE_SECONDS];
  return value.split(',').map((entry) => {
    const seconds = Number(entry.trim());
    if (entry.trim() === '' || !Number.isFinite(seconds) || seconds < 0) {
      throw new RetryScheduleError(entry.trim());
    }
    return seconds;
  });
}
