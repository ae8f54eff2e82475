/**
 * Who is asking and whether they may change something: the bearer token, or a browser's live
 * server-side session (sessions.ts, in Redis) with its CSRF value and the console's public origin
 * (the pure checks are in auth.ts). Redis not answering a session lookup in time is 503. Every
 * presented token (bearer or sign-in form) goes through the credential guard: guesses are
 * throttled per address and overall (429 with Retry-After) and each burst of them logged once.
 */
import type { IncomingMessage } from 'node:http';
import type { Settings } from '../config/settings.ts';
import { createCredentialGuard, type CredentialGuard } from '../observability/credentialGuard.ts';
import type { Logger } from '../observability/logger.ts';
import type { OperatorQueue } from '../admin/operatorQueue.ts';
import { bearerToken, csrfValue, defaultConsoleOrigins, sameOrigin, sameSecret, sessionIdOf } from './auth.ts';
import { BASE } from './pages.ts';
import { HttpError } from './httpError.ts';
import { createSessionStore, type Session, type SessionRedis, type SessionStore } from './sessions.ts';

/** Who is asking: the bearer token, a signed-in browser (its live session), or nobody. */
export type Caller = { kind: 'bearer' } | { kind: 'session'; session: Session; csrf: string } | { kind: 'anonymous' };

/** How long a session lookup waits for Redis before the request is answered 503. */
const SESSION_REDIS_TIMEOUT_MS = 3_000;

export type ConsoleAccess = {
  sessions: SessionStore;
  token: string;
  /** Throttles and logs every presented token (sign-in form and bearer). */
  guard: CredentialGuard;
  /** The origins browser forms may come from: the configured public origin, else where the console listens. */
  allowedOrigins(): readonly string[];
  /** The cookie is Secure when the public origin is https (a proxy in front terminates TLS). */
  secureCookie(): boolean;
  /** Redis's answer within the timeout, else 503 (a session cannot be checked or made without it). */
  withSessions<T>(work: () => Promise<T>): Promise<T>;
  /**
   * Who is asking. A wrong bearer is anonymous even with a good cookie (the caller meant the
   * bearer); too many wrong ones from the caller's address are refused unchecked (HttpError 429).
   */
  callerOf(req: IncomingMessage, path: string): Promise<Caller>;
  /** A change needs the token; from a browser session also the session's CSRF value and the public origin. */
  assertMayChange(req: IncomingMessage, caller: Caller, form: URLSearchParams): void;
};

export function createConsoleAccess(p: {
  settings: Settings;
  operator: OperatorQueue;
  token: string;
  logger: Logger;
  listening?: () => { host?: string; port: number } | undefined;
  sessions?: SessionStore;
  /** Shared with the HTTP server's /metrics bearer check (one throttle per process); default: the console's own. */
  guard?: CredentialGuard;
}): ConsoleAccess {
  const { settings, token, logger } = p;
  const guard = p.guard ?? createCredentialGuard({ logger });
  const sessions =
    p.sessions ??
    createSessionStore({
      redis: async () => (await p.operator.redis()) as unknown as SessionRedis,
      // Next to the queue the console reads: the prefix its operator queue was opened with.
      keyPrefix: p.operator.keys.consoleSessions,
      token,
      timeouts: { idleSeconds: settings.HOOKRELAY_CONSOLE_IDLE_TIMEOUT, maxAgeSeconds: settings.HOOKRELAY_CONSOLE_SESSION_MAX_AGE },
    });

  const allowedOrigins = (): readonly string[] => {
    if (settings.HOOKRELAY_CONSOLE_ORIGIN) return [settings.HOOKRELAY_CONSOLE_ORIGIN];
    const at = p.listening?.();
    return at ? defaultConsoleOrigins(at.host, at.port) : [];
  };

  async function withSessions<T>(work: () => Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        work(),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error('timeout')), SESSION_REDIS_TIMEOUT_MS);
        }),
      ]);
    } catch (err) {
      logger.warn({ err }, 'console sessions: Redis did not answer');
      throw new HttpError(503, 'console sign-in sessions live in Redis, which does not answer now: try again shortly (Authorization: Bearer still works)');
    } finally {
      clearTimeout(timer);
    }
  }

  return {
    sessions,
    token,
    guard,
    allowedOrigins,
    secureCookie: () => settings.HOOKRELAY_CONSOLE_ORIGIN?.startsWith('https:') === true,
    withSessions,
    async callerOf(req, path) {
      const presented = bearerToken(req);
      if (presented !== undefined) {
        const verdict = await guard.judge('bearer', req, () => sameSecret(presented, token));
        if (verdict.ok) return { kind: 'bearer' };
        if (verdict.status === 429)
          throw new HttpError(429, `too many wrong tokens from this address: try again in ${verdict.retryAfterSeconds} s`, {
            'retry-after': String(verdict.retryAfterSeconds),
          });
        return { kind: 'anonymous' };
      }
      const id = sessionIdOf(req);
      if (id === undefined || id === '') return { kind: 'anonymous' };
      // The page's own polling (/console/api/*) does not count as activity: an open tab still idles out.
      const session = await withSessions(() => sessions.touch(id, !path.startsWith(`${BASE}/api/`)));
      return session ? { kind: 'session', session, csrf: csrfValue(session.id) } : { kind: 'anonymous' };
    },
    assertMayChange(req, caller, form) {
      if (caller.kind === 'anonymous') throw new HttpError(401, 'sign in with the console token');
      if (caller.kind === 'session' && (!sameSecret(form.get('_csrf') ?? '', caller.csrf) || !sameOrigin(req, allowedOrigins()))) {
        throw new HttpError(403, 'this form is stale or came from another site: reload the page and try again');
      }
    },
  };
}

/** Where to go after signing in: a console path only (no open redirect), printable ASCII only (it becomes a Location header). */
export function safeNext(raw: string | null | undefined): string {
  return typeof raw === 'string' && raw.startsWith(`${BASE}`) && !raw.startsWith('//') && !raw.includes('\\') && /^[\x21-\x7e]*$/.test(raw) ? raw : BASE;
}
