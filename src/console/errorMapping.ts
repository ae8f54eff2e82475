/**
 * What a failed console request answers: a refusal (HttpError, a bad query value) its status and
 * message — JSON under /api/ and for 401, a page otherwise; anything else is logged and answered
 * 500 with a page that says nothing changed unless the page said so (never the error's text).
 * A database without hookrelay's tables (never migrated, or migrated by an older version) is
 * 503 with a page saying to run `hookrelay migrate`; an unreachable one (Q13) is 503 saying so.
 */
import type { ServerResponse } from 'node:http';
import type { Logger } from '../observability/logger.ts';
import { BASE, messagePage } from './pages.ts';
import { HttpError } from './httpError.ts';
import { ConsoleInputError } from '../contract/errors.ts';
import { send, sendJson } from './respond.ts';
import { isStoreUnreachable } from '../store/unreachable.ts';

export function answerError(caught: unknown, p: { res: ServerResponse; url: URL; csrf: string | undefined; logger: Logger }): void {
  const { res } = p;
  const err = caught instanceof ConsoleInputError ? new HttpError(400, caught.message) : caught;
  if (err instanceof HttpError) {
    const wantsJson = p.url.pathname.startsWith(`${BASE}/api/`) || err.status === 401;
    if (wantsJson) sendJson(res, err.status, { error: err.message }, err.headers);
    else
      send(
        res,
        err.status,
        messagePage(err.status === 404 ? 'Not found' : err.status === 400 ? 'Bad request' : 'Not done', err.message, p.csrf),
        undefined,
        err.headers,
      );
    return;
  }
  if (notMigrated(err)) {
    p.logger.error({ err }, 'console: the database is not migrated (run `hookrelay migrate`)');
    const message = NOT_MIGRATED;
    if (p.url.pathname.startsWith(`${BASE}/api/`)) sendJson(res, 503, { error: message, code: 'not_migrated' });
    else send(res, 503, messagePage('Database not migrated', message, p.csrf));
    return;
  }
  if (isStoreUnreachable(err)) {
    // Q13: Postgres away is the operator's to fix, not a console fault: one line, no stack on the page.
    p.logger.warn({ err }, 'console: the database is unreachable');
    if (p.url.pathname.startsWith(`${BASE}/api/`)) sendJson(res, 503, { error: UNREACHABLE, code: 'database_unreachable' });
    else send(res, 503, messagePage('Database unreachable', UNREACHABLE, p.csrf));
    return;
  }
  p.logger.error({ err }, 'console request failed');
  if (!res.headersSent)
    send(res, 500, messagePage('Error', 'The console could not answer (see the worker log). Nothing was changed by this request unless its page said so.'));
}

const UNREACHABLE =
  'The database (Postgres at DATABASE_URL) is unreachable: nothing was read or changed. Check that it runs and that DATABASE_URL points at it, then reload this page.';

const NOT_MIGRATED =
  'The database has no hookrelay tables yet (or older ones): run `hookrelay migrate` with the same DATABASE_URL (a worker started without --no-migrate also applies them), then reload this page.';

/** Postgres error codes of a query against tables or columns that are not there (undefined_table, undefined_column). */
const NOT_MIGRATED_CODES: ReadonlySet<string> = new Set(['42P01', '42703']);

/** A driver error (or the one it wraps, drizzle puts it in `cause`) saying the schema is missing. */
function notMigrated(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 4; e = e.cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && NOT_MIGRATED_CODES.has(code)) return true;
  }
  return false;
}
