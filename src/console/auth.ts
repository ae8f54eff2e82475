/**
 * Console authentication, the pure parts: one operator token (HOOKRELAY_CONSOLE_TOKEN). A browser
 * signs in once with it and then holds only a random session id in an HttpOnly, SameSite=Strict
 * cookie (sessions.ts keeps the sessions in Redis); API clients send `Authorization: Bearer
 * <token>`. Every mutating request from a cookie session also carries a CSRF value derived from
 * that session's id and must come from the console's public origin (HOOKRELAY_CONSOLE_ORIGIN, or
 * the address it listens on) — never judged by the request's own Host header.
 */
import { createHmac } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { sameSecret } from '../util/sameSecret.ts';

export { sameSecret };

const SESSION_COOKIE = 'hookrelay_console';

/** The CSRF value of one session: unguessable without its id, different for every session. */
export function csrfValue(sessionId: string): string {
  return createHmac('sha256', sessionId).update('hookrelay-console:csrf').digest('base64url');
}

export function sessionCookie(sessionId: string, p: { maxAgeSeconds: number; secure: boolean }): string {
  return `${SESSION_COOKIE}=${sessionId}; HttpOnly; SameSite=Strict; Path=/console; Max-Age=${p.maxAgeSeconds}${p.secure ? '; Secure' : ''}`;
}

export function clearedCookie(secure: boolean): string {
  return `${SESSION_COOKIE}=; HttpOnly; SameSite=Strict; Path=/console; Max-Age=0${secure ? '; Secure' : ''}`;
}

/** The session cookie's value as sent, or undefined. */
export function sessionIdOf(req: IncomingMessage): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === SESSION_COOKIE) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** `ok` for the right bearer token, `wrong` for another, `none` without an Authorization bearer. */
export function bearerOf(req: IncomingMessage, token: string): 'ok' | 'wrong' | 'none' {
  const presented = bearerToken(req);
  if (presented === undefined) return 'none';
  return sameSecret(presented, token) ? 'ok' : 'wrong';
}

/** The token of an `Authorization: Bearer <token>` header, or undefined without one. */
export function bearerToken(req: IncomingMessage): string | undefined {
  const auth = req.headers.authorization;
  return typeof auth === 'string' && auth.startsWith('Bearer ') ? auth.slice(7).trim() : undefined;
}

const LOOPBACK_OR_ANY = new Set(['', '0.0.0.0', '::', '127.0.0.1', 'localhost', '::1']);

/**
 * The origins a browser may use when HOOKRELAY_CONSOLE_ORIGIN is unset: the address the console
 * listens on. Bound to loopback or every interface, that is this machine's loopback names
 * (`http://127.0.0.1:<port>`, `http://localhost:<port>`, `http://[::1]:<port>`); anything else
 * must be configured (a proxy's https name, a LAN address seen through another name).
 */
export function defaultConsoleOrigins(host: string | undefined, port: number): string[] {
  const h = (host ?? '').replace(/^\[|\]$/g, '');
  if (LOOPBACK_OR_ANY.has(h)) return [`http://127.0.0.1:${port}`, `http://localhost:${port}`, `http://[::1]:${port}`];
  return [new URL(`http://${h.includes(':') ? `[${h}]` : h}:${port}`).origin];
}

/**
 * A browser form may change something only from the console's public origin: the Origin header
 * (sent by every current browser on POST) must be one of `allowed`; absent, the Referer's origin
 * must. SameSite=Strict already keeps the cookie off cross-site requests; this is the second lock.
 */
export function sameOrigin(req: IncomingMessage, allowed: readonly string[]): boolean {
  const origin = req.headers.origin ?? req.headers.referer;
  if (typeof origin !== 'string' || origin === 'null' || !URL.canParse(origin)) return false;
  return allowed.includes(new URL(origin).origin);
}
