/**
 * The adaptive per-endpoint concurrency limit: AIMD, the way TCP slow start and
 * Netflix's concurrency-limits `AIMDLimit` do it. Each attempt's outcome moves the limit:
 *
 * - a fast success: +1 (an endpoint that answers quickly doubles its limit every round of
 *   attempts, so from `initial` 4 it reaches a worker's 64 slots after ~60 successes);
 * - a slow success (longer than `slowAttemptMs`): ×0.9, not below `initial` — a slow receiver
 *   keeps a few slots, never the whole worker;
 * - a failure (timeout, refused, 5xx, 429): halved, down to 1;
 * - a local problem (cancelled, configuration): unchanged.
 *
 * The limit never exceeds the ceiling: the configured cap (HOOKRELAY_ENDPOINT_CONCURRENCY or the
 * endpoint's own), or LIMIT_MAX when none is configured. The limit lives in Redis with the
 * breaker (shared by every worker); `commands/endpointExchange-6.lua` applies exactly this
 * function (a test runs both over the same outcomes).
 */

/** What an attempt says about its endpoint, as the gate's release records it. */
export type LimitOutcome = 'ok' | 'slow' | 'fail' | 'none';

/** No configured cap: the limit may grow this far (far above any worker's concurrency). */
export const LIMIT_MAX = 1_000;
/** A success slower than this (or than half the webhook timeout, if lower) counts as "slow". */
export const SLOW_ATTEMPT_MS = 1_000;
/** Multiplicative decrease on a slow success (Netflix AIMDLimit's backoff ratio). */
const SLOW_BACKOFF = 0.9;

export type LimitPolicy = {
  /** Where a new endpoint (or one whose state Redis forgot) starts, and the floor of a slow one. */
  initial: number;
  /** Configured cap; 0 = none (then LIMIT_MAX). */
  cap: number;
};

/** The ceiling a limit grows to: the configured cap, else LIMIT_MAX. */
export function limitCeiling(cap: number): number {
  return cap > 0 ? cap : LIMIT_MAX;
}

/** The next limit after one attempt's outcome (pure: the Lua script mirrors it). */
export function nextLimit(limit: number | undefined, outcome: LimitOutcome, policy: LimitPolicy): number {
  const ceiling = limitCeiling(policy.cap);
  const current = Math.min(limit ?? policy.initial, ceiling);
  switch (outcome) {
    case 'ok':
      return Math.min(ceiling, current + 1);
    case 'slow':
      return current > policy.initial ? Math.max(policy.initial, Math.floor(current * SLOW_BACKOFF)) : current;
    case 'fail':
      return Math.max(1, Math.floor(current / 2));
    case 'none':
      return current;
  }
}

/** Is a successful attempt of this duration "slow" for a webhook with this timeout? */
export function isSlowAttempt(durationMs: number, timeoutMs: number): boolean {
  return durationMs > Math.min(SLOW_ATTEMPT_MS, Math.max(1, timeoutMs / 2));
}
