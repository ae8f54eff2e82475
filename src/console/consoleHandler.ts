/**
 * The operator console: deliveries (filter, keyset pages, live counts), one delivery (its hook
 * config with templates unresolved, payload, every attempt), replay (one, or a filtered set after
 * a dry-run preview and a confirmation), endpoints (breaker, in-flight vs cap, failure rate,
 * disable / enable) and an overview (charts, oldest undelivered age). Mounted under `/console`
 * by the worker's HTTP server and by `hookrelay console`; it reads and changes the ledger and the
 * queue only through the functions the CLI uses (store/*, admin/replay.ts, admin/endpointViews.ts).
 *
 * This file assembles the parts: access (access.ts: sessions, bearer, CSRF, origin), the
 * queue-depth sampler (queueSampler.ts), the route table (routes/table.ts, one module per page
 * or action), the router (router.ts) and the error mapping (errorMapping.ts).
 *
 * Security: it exists only with HOOKRELAY_CONSOLE_TOKEN; every request but the sign-in page and
 * the static assets needs a live server-side session (cookie, sessions.ts) or the bearer token;
 * every POST from a cookie session needs the session's CSRF value and an Origin equal to the
 * console's public origin; a wrong or missing credential is 401 and changes nothing (a POST's
 * form unread); token guesses are throttled per address and overall (access.ts); a bad query
 * value is 400 (never 500); every response carries a strict Content-Security-Policy.
 */
import type { Settings } from '../config/settings.ts';
import type { CredentialGuard } from '../observability/credentialGuard.ts';
import type { RequestHandler } from '../observability/httpServer.ts';
import type { Logger } from '../observability/logger.ts';
import type { OperatorQueue } from '../admin/operatorQueue.ts';
import type { Db } from '../store/db.ts';
import { createConsoleAccess } from './access.ts';
import type { ConsoleContext } from './context.ts';
import { answerError } from './errorMapping.ts';
import { BASE } from './pages.ts';
import { createQueueSampler } from './queueSampler.ts';
import { routeRequest } from './router.ts';
import { CONSOLE_ROUTES } from './routes/table.ts';
import type { SessionStore } from './sessions.ts';
import { withDefined } from '../util/withDefined.ts';

export type ConsoleOptions = {
  db: Db;
  settings: Settings;
  operator: OperatorQueue;
  /** HOOKRELAY_CONSOLE_TOKEN. */
  token: string;
  logger: Logger;
  /** Queue-depth sampling for the overview chart (default on; tests may turn it off). */
  sampleQueue?: boolean;
  /**
   * Where the console listens, once it does (the port may be chosen at bind time): without
   * HOOKRELAY_CONSOLE_ORIGIN, browser forms must come from this address.
   */
  listening?: () => { host?: string; port: number } | undefined;
  /** Session store override (tests); default: Redis through the operator's queue connection. */
  sessions?: SessionStore;
  /** The process's token-guess throttle, shared with the HTTP server's /metrics bearer check; default: the console's own. */
  guard?: CredentialGuard;
};

export type Console = {
  /** Handles a request under /console; false for any other path (the caller answers it). */
  handle: RequestHandler;
  close(): Promise<void>;
};

export function createConsole(options: ConsoleOptions): Console {
  const { db, settings, operator, token, logger } = options;
  const ctx: ConsoleContext = {
    db,
    settings,
    operator,
    logger,
    access: createConsoleAccess({
      settings,
      operator,
      token,
      logger,
      ...withDefined({ listening: options.listening, sessions: options.sessions, guard: options.guard }),
    }),
    sampler: createQueueSampler(operator, options.sampleQueue !== false),
  };

  return {
    async handle(req, res, io) {
      const raw = req.url ?? '/';
      if (!URL.canParse(raw, 'http://console.invalid')) return false;
      const url = new URL(raw, 'http://console.invalid');
      if (url.pathname !== BASE && !url.pathname.startsWith(`${BASE}/`)) return false;
      const state: { csrf?: string } = {};
      try {
        await routeRequest(ctx, CONSOLE_ROUTES, req, res, io, url, state);
      } catch (caught) {
        answerError(caught, { res, url, csrf: state.csrf, logger });
      }
      return true;
    },
    async close() {
      ctx.sampler.close();
    },
  };
}
