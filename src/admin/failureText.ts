/**
 * Why a delivery failed (or is retrying), in one line the CLI and the console share. A delivery
 * ended while it waited at its endpoint (Q3: the breaker, the cap, the rate limit, a disable,
 * an earlier ordered delivery) is told apart from the receiver's own answer: `circuit_open 500`
 * read as a contradiction, "circuit_open: ended by the breaker after 2 attempts, last HTTP 500"
 * does not.
 */
import { ENVIRONMENT_HOOK_REMOVED_REASON } from '../contract/delivery.ts';

const CRITICAL = 'CriticalHookDeliveryError';

/** Q3: the reasons a delivery's deadline passed while it waited, and what each waited for. */
const ENDED_WHILE_WAITING: Record<string, string> = {
  circuit_open: 'ended by the breaker (its endpoint kept failing)',
  endpoint_busy: "ended waiting for a slot at its endpoint's concurrency cap",
  rate_limited: "ended waiting for its endpoint's rate limit",
  endpoint_disabled: 'ended while its endpoint was disabled',
  ordering_wait: 'ended waiting for an earlier ordered delivery of its operation',
};

/** The ledger fields it reads (a Delivery, or a console row). */
type FailureFields = { status: string; attemptCount: number; lastErrorClass: string | null; lastHttpStatus: number | null; failureReason?: string | null };

function attempts(n: number): string {
  return n === 0 ? 'before any attempt' : `after ${n} ${n === 1 ? 'attempt' : 'attempts'}`;
}

/** `null` when nothing failed. */
export function failureText(d: FailureFields): string | null {
  // F4: skipped by the worker, not by an operator: its environment hook is gone.
  if (d.status === 'skipped' && d.failureReason === ENVIRONMENT_HOOK_REMOVED_REASON)
    return `${ENVIRONMENT_HOOK_REMOVED_REASON}: the worker's environment no longer has this environment hook (AGENT_HOOK_WEBHOOK_URL / AGENT_HOOK_WEBHOOK_EVENTS); not sent`;
  if (!d.lastErrorClass) return null;
  const reason = d.failureReason ?? d.lastErrorClass;
  const critical = d.lastErrorClass === CRITICAL ? " (critical: fallback 'none')" : '';
  // Q4: QStash took it and no callback reported an outcome by its deadline (status stays accepted_by_qstash).
  if (reason === 'qstash_outcome_unknown') return `qstash_outcome_unknown: accepted by QStash, no outcome reported by its deadline${critical}`;
  const waited = ENDED_WHILE_WAITING[reason];
  // N3: a delivery the breaker kept from its receiver until its deadline was never sent: say so, not "failed".
  if (reason === 'circuit_open' && d.attemptCount === 0)
    return `circuit_open: not attempted: its endpoint's circuit was open (the receiver failing for everyone: refused, 5xx, 429, timeouts) until the delivery's deadline; replay it once the endpoint is back${critical}`;
  if (waited) {
    const last = d.lastHttpStatus !== null && d.attemptCount > 0 ? `, last HTTP ${d.lastHttpStatus}` : '';
    return `${reason}: ${waited} ${attempts(d.attemptCount)}${last}${critical}`;
  }
  const answer = reason === 'http_error' && d.lastHttpStatus !== null ? `HTTP ${d.lastHttpStatus}` : reason;
  const when = d.status === 'failed' ? attempts(d.attemptCount) : `at attempt ${d.attemptCount}, retrying`;
  return `${reason === 'http_error' ? 'http_error: ' : ''}${answer} ${when}${critical}`;
}
