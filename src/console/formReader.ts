/**
 * A POSTed form (application/x-www-form-urlencoded), read through the HTTP server's body reader
 * with the route's cap (more is 413) — a sign-in form within the server's budget for
 * unauthenticated bodies (past it 503, try again shortly).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { HttpIo } from '../observability/httpServer.ts';
import { HttpError } from './httpError.ts';

/** The largest form a signed-in operator posts (a replay confirmation lists delivery ids). */
export const MAX_FORM_BYTES = 1024 * 1024;

export async function readForm(
  req: IncomingMessage,
  res: ServerResponse,
  io: HttpIo,
  options: { maxBytes: number; unauthenticated: boolean },
): Promise<URLSearchParams> {
  const read = await io.readBody(req, res, options);
  if (read.ok) return new URLSearchParams(read.body.toString('utf8'));
  io.refused(read.reason);
  if (read.reason === 'body_too_large') throw new HttpError(413, 'form too large');
  if (read.reason === 'body_budget') throw new HttpError(503, 'busy: try again in a few seconds', { 'retry-after': '5' });
  throw new HttpError(400, 'the request ended before its form did');
}
