/**
 * Delivery errors. Every message here is written by us: it may name a header, an environment
 * variable, a host or an error code, but never a header value, a resolved secret, remote
 * response text or a query string (W2).
 */
import { HookrelayError } from '../contract/hookrelayError.ts';

/** A webhook cannot be sent as configured (bad URL, header or template): nothing was sent. */
export class DeliveryConfigError extends HookrelayError {
  readonly code = 'HOOKRELAY_DELIVERY_CONFIG_INVALID' as const;
  override readonly name = 'DeliveryConfigError';
  readonly errorClass = 'configuration' as const;

  constructor(message: string) {
    super(message);
  }
}

/**
 * Q5: what an operator does about an `ssrf_blocked` failure — the refusal alone never
 * said that a receiver on a private network is allowed by naming its range.
 */
export const SSRF_BLOCKED_HINT =
  'a private, loopback, link-local or other reserved address; to deliver to a receiver there, add its range to HOOKRELAY_ALLOWED_CIDRS (e.g. 127.0.0.1/32 or 10.0.0.0/8) where the request is sent from (the worker, or the server app for decisions and local mode)';

/** Q5: the destination resolves to (or is) an address the SSRF guard refuses. */
export class SsrfBlockedError extends HookrelayError {
  override readonly name = 'SsrfBlockedError';
  readonly errorClass = 'ssrf_blocked' as const;
  /** Lets the transport recognise the refusal after undici has passed it along. */
  readonly code = 'HOOKRELAY_SSRF_BLOCKED';

  constructor(host: string) {
    super(`destination ${JSON.stringify(host)} refused by the SSRF guard: it is or resolves to ${SSRF_BLOCKED_HINT}`);
  }
}

const RETRY_SCHEDULE_ENV = 'HOOKRELAY_RETRY_SCHEDULE';
const ALLOWED_CIDRS_ENV = 'HOOKRELAY_ALLOWED_CIDRS';

/** An entry of HOOKRELAY_RETRY_SCHEDULE that is not a non-negative number of seconds (`entry`, trimmed). */
export class RetryScheduleError extends HookrelayError {
  readonly code = 'HOOKRELAY_RETRY_SCHEDULE_INVALID' as const;
  override readonly name = 'RetryScheduleError';
  readonly variables = [RETRY_SCHEDULE_ENV];

  constructor(readonly entry: string) {
    super(`${RETRY_SCHEDULE_ENV}: ${JSON.stringify(entry)} is not a non-negative number of seconds`);
  }
}

/** Why a delivery's deadline ended it (deadline.ts). */
export type DeadlineCause = 'timeout' | 'cancelled';

/** The abort reason we use, so a destroyed body says why without quoting anything remote. */
export class DeadlineAbortError extends HookrelayError {
  override readonly name = 'DeadlineAbortError';
  readonly code: 'HOOKRELAY_TIMEOUT' | 'HOOKRELAY_CANCELLED';

  constructor(readonly why: DeadlineCause) {
    super(why === 'timeout' ? 'delivery deadline passed' : 'delivery cancelled by the caller');
    this.code = why === 'timeout' ? 'HOOKRELAY_TIMEOUT' : 'HOOKRELAY_CANCELLED';
  }
}

/** A transport or protocol failure; the emitter maps a throw to `host_error:interceptor_failed`. */
export class RemoteInterceptorError extends HookrelayError {
  readonly code = 'HOOKRELAY_REMOTE_INTERCEPTOR_FAILED' as const;
  override readonly name = 'RemoteInterceptorError';
}

/** An entry of HOOKRELAY_ALLOWED_CIDRS (or `allowedCidrs`) that is not an IPv4/IPv6 CIDR; a CIDR is not a secret. */
export class AllowedCidrsError extends HookrelayError {
  readonly code = 'HOOKRELAY_ALLOWED_CIDRS_INVALID' as const;
  override readonly name = 'AllowedCidrsError';
  readonly variables = [ALLOWED_CIDRS_ENV];

  constructor(readonly entry: string) {
    super(`${ALLOWED_CIDRS_ENV}: ${JSON.stringify(entry)} is not an IPv4 or IPv6 CIDR (e.g. 127.0.0.1/32, fd00::/8)`);
  }
}

export function isSsrfBlockedError(error: unknown): error is SsrfBlockedError {
  return error instanceof SsrfBlockedError || (hasStringProp(error, 'code') && error.code === 'HOOKRELAY_SSRF_BLOCKED');
}

const ERROR_CODE = /^[A-Z][A-Z0-9_]{1,63}$/;

/**
 * A short, safe description of a transport failure: the error's code (e.g. `ECONNRESET`,
 * `UND_ERR_SOCKET`) or its class name — never its message, which may quote remote text.
 */
export function describeError(error: unknown): string {
  if (hasStringProp(error, 'code') && ERROR_CODE.test(error.code)) return error.code;
  if (error instanceof Error && /^[A-Za-z]{1,64}$/.test(error.name)) return error.name;
  return 'unknown_error';
}

function hasStringProp<K extends string>(value: unknown, key: K): value is Record<K, string> {
  return typeof value === 'object' && value !== null && typeof (value as Record<string, unknown>)[key] === 'string';
}
