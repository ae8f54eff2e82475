/**
 * What a failed console request answers: a refusal (HttpError, a bad query value) its status and
 * message — JSON under /api/ and for 401, a page otherwise; anything else is logged and answered
 * 500 with a page that says nothing changed unless the page said so (never the error's text).
 */
import type { ServerResponse } from 'node:http';
import type { Logger } from '../observability/logger.ts';
import { BASE, messagePage } from './pages.ts';
import { ConsoleInputError } from './queryInput.ts';
import { HttpError, send, sendJson } from './respond.ts';

export function answerError(caught: unknown, p: { res: ServerResponse; url: URL; csrf: string | undefined; logger: Logger }): void {
  const { res } = p;
  const err = caught instanceof ConsoleInputError ? new HttpError(400, caught.message) : caught;
  if (err instanceof HttpError) {
    const wantsJson = p.url.pathname.startsWith(`${BASE}/api/`) || err.status === 401;
    if (wantsJson) sendJson(res, err.status, { error: err.message });
    else send(res, err.status, messagePage(err.status === 404 ? 'Not found' : err.status === 400 ? 'Bad request' : 'Not done', err.message, p.csrf));
    return;
  }
  p.logger.error({ err }, 'console request failed');
  if (!res.headersSent)
    send(res, 500, messagePage('Error', 'The console could not answer (see the worker log). Nothing was changed by this request unless its page said so.'));
}
