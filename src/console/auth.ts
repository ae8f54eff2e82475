/**
 * Console authentication: one operator token (HOOKRELAY_CONSOLE_TOKEN). A browser signs in once
 * with it and holds an HttpOnly, SameSite=Strict cookie derived from it (never the token
 * itself); API clients send `Authorization: Bearer <token>`. Every mutating request from a
 * cookie session also carries a CSRF value derived from the token and passes an Origin check.
 * Rotating the token signs every session out. Pure apart from HMAC.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

export const SESSION_COOKIE = 'hookrelay_console';
/** A session lasts 12 hours; then the operator signs in again. */
export const SESSION_MAX_AGE_S = 12 * 60 * 60;

function derive(token: string, purpose: string): string {
  return createHmac('sha256', token).update(`hookrelay-console:${purpose}`).digest('base64url');
}

/** Constant-time comparison of two strings of any length. */
export function sameSecret(a: string, b: string): boolean {
  const ha = createHash('sha256').update(a).digest();
  const hb = createHash('sha256').update(b).digest();
  return timingSafeEqual(ha, hb);
}

export function sessionValue(token: string): string {
  return derive(token, 'session');
}

export function csrfValue(token: string): string {
  return derive(token, 'csrf');
}

export function sessionCookie(token: string, secure: boolean): string {
  return `${SESSION_COOKIE}=${sessionValue(token)}; HttpOnly; SameSite=Strict; Path=/console; Max-Age=${SESSION_MAX_AGE_S}${secure ? '; Secure' : ''}`;
}

export const CLEARED_COOKIE = `${SESSION_COOKIE}=; HttpOnly; SameSite=Strict; Path=/console; Max-Age=0`;

function cookieOf(req: IncomingMessage, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

export type Caller = { kind: 'bearer' } | { kind: 'session' } | { kind: 'anonymous' };

/** Who is asking: a bearer token, a signed-in browser, or nobody. */
export function callerOf(req: IncomingMessage, token: string): Caller {
  const auth = req.headers.authorization;
  if (typeof auth === 'string' && auth.startsWith('Bearer ')) return sameSecret(auth.slice(7).trim(), token) ? { kind: 'bearer' } : { kind: 'anonymous' };
  const cookie = cookieOf(req, SESSION_COOKIE);
  return cookie !== undefined && sameSecret(cookie, sessionValue(token)) ? { kind: 'session' } : { kind: 'anonymous' };
}

/**
 * A browser form may change something only from this origin: the Origin header (sent by every
 * current browser on POST) must name this host; absent, the Referer must. SameSite=Strict already
 * keeps the cookie off cross-site requests; this is the second lock.
 */
export function sameOrigin(req: IncomingMessage): boolean {
  const host = req.headers.host;
  if (!host) return false;
  const origin = req.headers.origin ?? req.headers.referer;
  if (typeof origin !== 'string' || origin === 'null') return false;
  try {
    return new URL(origin).host === host;
  } catch {
    return false;
  }
}
