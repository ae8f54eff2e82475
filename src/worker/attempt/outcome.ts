/**
 * Q3/Q4: what one attempt's result means for the ledger. Pure: the processor does the I/O.
 * The schedule is also a promise in time: a retry that would start after the
 * delivery's deadline is moved to the deadline (the last attempt), or, when the receiver's
 * Retry-After forbids that or the deadline has passed, the delivery fails now.
 */
import type { DeliveryAttempt } from '../../contract/delivery.ts';
import { nextDelayMs } from '../../notify/retryPolicy.ts';
import type { NotificationResult } from '../../notify/deliver.ts';
import { SSRF_BLOCKED_HINT } from '../../contract/errors.ts';
import { CRITICAL_ERROR_CLASS, type AttemptOutcome, type ClaimedDelivery } from '../../store/deliveriesRepo.ts';
import { withDefined } from '../../util/withDefined.ts';

export { CRITICAL_ERROR_CLASS };

export type AttemptDecision =
  | { kind: 'delivered' | 'accepted_by_qstash'; outcome: AttemptOutcome }
  | { kind: 'retry'; delayMs: number; outcome: AttemptOutcome }
  | { kind: 'failed'; critical: boolean; errorClass: string; httpStatus?: number; outcome: AttemptOutcome };

export type DecideInput = {
  claimed: Pick<ClaimedDelivery, 'id' | 'attemptCount' | 'generationAttemptCount' | 'generation'>;
  result: NotificationResult;
  startedAt: Date;
  scheduleSeconds: readonly number[];
  nowMs: number;
  /** Q3: when this delivery gives up (ms); none → only the schedule's length bounds it. */
  deadlineAtMs?: number;
  random?: () => number;
};

export function decideOutcome(input: DecideInput): AttemptDecision {
  const { claimed, result } = input;
  // The schedule counts this generation's attempts; the record numbers it among all of them.
  const attemptNo = claimed.generationAttemptCount + 1;
  const attempt: DeliveryAttempt = {
    attempt: claimed.attemptCount + 1,
    at: input.startedAt.toISOString(),
    transport: result.transport,
    outcome: result.ok ? (result.transport === 'qstash' ? 'accepted_by_qstash' : 'delivered') : 'failed',
    errorClass: result.ok ? null : result.errorClass,
    httpStatus: result.httpStatus ?? null,
    durationMs: Math.round(result.durationMs * 1000) / 1000,
    // Q8: a failure keeps the receiver's answer and the headers sent too (why it said no).
    responseExcerpt: result.responseExcerpt ?? null,
    generation: claimed.generation,
  };
  if (!result.ok && result.requestHeaders) attempt.requestHeaders = result.requestHeaders;
  const deadlineAt = input.deadlineAtMs !== undefined ? new Date(input.deadlineAtMs) : null;
  const lastHttpStatus = result.httpStatus ?? null;

  // One outcome object per attempt, written out whole (no base object spread into it).
  if (result.ok) {
    const kind = result.transport === 'qstash' ? 'accepted_by_qstash' : 'delivered';
    return { kind, outcome: { id: claimed.id, attempt, lastHttpStatus, deadlineAt, status: kind, lastErrorClass: null, nextAttemptAt: null } };
  }
  let delayMs = result.permanent
    ? undefined
    : nextDelayMs({
        attempt: attemptNo,
        scheduleSeconds: input.scheduleSeconds,
        ...withDefined({ retryAfterMs: result.retryAfterMs, random: input.random }),
      });
  const deadline = input.deadlineAtMs;
  if (delayMs !== undefined && deadline !== undefined) {
    const left = deadline - input.nowMs;
    // The deadline passed (this was the last attempt), or the receiver asked to wait past it: fail now.
    if (left <= 0 || (result.retryAfterMs !== undefined && result.retryAfterMs > left)) delayMs = undefined;
    else delayMs = Math.min(delayMs, left);
  }
  if (delayMs !== undefined) {
    return {
      kind: 'retry',
      delayMs,
      outcome: {
        id: claimed.id,
        attempt,
        lastHttpStatus,
        deadlineAt,
        status: 'retrying',
        lastErrorClass: result.errorClass,
        nextAttemptAt: new Date(input.nowMs + delayMs),
      },
    };
  }
  // Q4: a fallback 'none' hook that failed for good is recorded as CriticalHookDeliveryError.
  return {
    kind: 'failed',
    critical: result.critical,
    errorClass: result.errorClass,
    ...withDefined({ httpStatus: result.httpStatus }),
    outcome: {
      id: claimed.id,
      attempt,
      lastHttpStatus,
      deadlineAt,
      status: 'failed',
      lastErrorClass: result.critical ? CRITICAL_ERROR_CLASS : result.errorClass,
      nextAttemptAt: null,
      // Q5: an SSRF refusal says which setting lets a private receiver through.
      failureReason: result.errorClass === 'ssrf_blocked' ? `ssrf_blocked: ${SSRF_BLOCKED_HINT}` : result.errorClass,
    },
  };
}
