import { describe, expect, it } from 'vitest';
import { failureText } from '../../../src/admin/failureText.ts';

const row = { status: 'failed', attemptCount: 2, lastErrorClass: 'circuit_open', lastHttpStatus: 500, failureReason: 'circuit_open' };

describe('UX-2 failureText: what a delivery ended on, in one line (Q3)', () => {
  it('UX-2 Q3: ended by the breaker after N attempts, last HTTP 500 — no longer "circuit_open 500"', () => {
    expect(failureText(row)).toBe('circuit_open: ended by the breaker (its endpoint kept failing) after 2 attempts, last HTTP 500');
    expect(failureText({ ...row, attemptCount: 1 })).toBe('circuit_open: ended by the breaker (its endpoint kept failing) after 1 attempt, last HTTP 500');
    // TEN-3 (N3): never sent is said as such, not as a failure of the receiver's.
    expect(failureText({ ...row, attemptCount: 0, lastHttpStatus: null })).toMatch(/^circuit_open: not attempted: its endpoint's circuit was open/);
  });
  it('UX-2 Q3/Q4: each wait reason, and a critical one (fallback none) says so', () => {
    expect(
      failureText({ ...row, lastErrorClass: 'CriticalHookDeliveryError', failureReason: 'endpoint_disabled', lastHttpStatus: null, attemptCount: 0 }),
    ).toBe("endpoint_disabled: ended while its endpoint was disabled before any attempt (critical: fallback 'none')");
    expect(failureText({ ...row, lastErrorClass: 'rate_limited', failureReason: 'rate_limited', attemptCount: 3, lastHttpStatus: 503 })).toContain(
      "ended waiting for its endpoint's rate limit after 3 attempts, last HTTP 503",
    );
    expect(failureText({ ...row, lastErrorClass: 'ordering_wait', failureReason: 'ordering_wait', lastHttpStatus: null })).toBe(
      'ordering_wait: ended waiting for an earlier ordered delivery of its operation after 2 attempts',
    );
  });
  it('UX-2 the receiver’s own answer: the HTTP status; other classes by name; retrying says so; nothing failed → null', () => {
    expect(failureText({ ...row, lastErrorClass: 'http_error', failureReason: 'http_error', lastHttpStatus: 422, attemptCount: 1 })).toBe(
      'http_error: HTTP 422 after 1 attempt',
    );
    expect(failureText({ ...row, lastErrorClass: 'timeout', failureReason: 'timeout', lastHttpStatus: null, attemptCount: 3 })).toBe(
      'timeout after 3 attempts',
    );
    expect(failureText({ status: 'retrying', attemptCount: 1, lastErrorClass: 'http_error', lastHttpStatus: 500, failureReason: null })).toBe(
      'http_error: HTTP 500 at attempt 1, retrying',
    );
    expect(failureText({ status: 'delivered', attemptCount: 1, lastErrorClass: null, lastHttpStatus: 200, failureReason: null })).toBeNull();
  });
});
