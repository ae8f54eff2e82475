/**
 * How the console answers: every response carries the same strict security headers; an
 * `HttpError` thrown by a handler becomes its status and message (errorMapping.ts).
 */
import type { ServerResponse } from 'node:http';

/** Every console response: nothing inline, nothing from elsewhere, never framed, never cached. */
const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  // same-origin, not no-referrer: with no-referrer browsers send `Origin: null` on form posts, which the CSRF check must refuse.
  'referrer-policy': 'same-origin',
  'cache-control': 'no-store',
  'cross-origin-opener-policy': 'same-origin',
};

export function send(
  res: ServerResponse,
  status: number,
  body: string | Buffer,
  type = 'text/html; charset=utf-8',
  extra: Readonly<Record<string, string>> = {},
): void {
  res.writeHead(status, { ...SECURITY_HEADERS, 'content-type': type, ...extra });
  res.end(body);
}

export function sendJson(res: ServerResponse, status: number, value: unknown, extra: Readonly<Record<string, string>> = {}): void {
  send(res, status, JSON.stringify(value), 'application/json; charset=utf-8', extra);
}

export function redirect(res: ServerResponse, to: string, extra: Record<string, string> = {}): void {
  res.writeHead(303, { ...SECURITY_HEADERS, location: to, ...extra });
  res.end();
}
