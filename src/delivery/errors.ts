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
