/**
 * A3: `POST /approvals/answer` on the worker's HTTP port — what a chat button calls with the
 * answer token from `approval.requested` (JSON `{ "token", "reason"?, "by"? }` or the same as a
 * form). The token is the credential: signed (HOOKRELAY_APPROVAL_SECRETS), bound to one request
 * and one answer, spent by the first decision of its request. A body over 4 KiB is refused before
 * it is read. Answers are JSON: 200 decided, 400 bad input, 403 token refused, 409 no longer
 * pending, 413 too large, 415 another content type.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '../observability/logger.ts';
import type { RequestHandler } from '../observability/httpServer.ts';
import { toApproval, type ApprovalRow } from '../store/approvalsRepo.ts';
import type { Db } from '../store/db.ts';
import { verifyAnswerToken } from './answerToken.ts';
import { decideApproval } from './decideApproval.ts';
import { ApprovalNotFoundError, ApprovalNotPendingError, ApprovalTokenError } from './errors.ts';

export const APPROVAL_ANSWER_PATH = '/approvals/answer';
/** Largest body read: a token, a reason and a name. */
const MAX_ANSWER_BODY_BYTES = 4_096;

export type ApprovalAnswerHandlerOptions = {
  db: Db;
  secrets: readonly string[];
  logger: Logger;
  /** A decision was made (the worker announces `approval.resolved`). */
  onDecided?: (row: ApprovalRow) => void;
};

function answer(res: ServerResponse, status: number, body: Record<string, unknown>, extra: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', ...extra });
  res.end(JSON.stringify(body));
}

/** The body, or undefined when it is larger than the cap (refused by its Content-Length before any of it is read). */
async function readCapped(req: IncomingMessage): Promise<string | undefined> {
  const declared = Number(req.headers['content-length'] ?? '0');
  if (Number.isFinite(declared) && declared > MAX_ANSWER_BODY_BYTES) return undefined;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_ANSWER_BODY_BYTES) return undefined;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function fieldsOf(type: string, body: string): Record<string, unknown> | undefined {
  if (type === 'application/json') {
    try {
      const parsed: unknown = JSON.parse(body);
      return parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : undefined;
    } catch {
      return undefined;
    }
  }
  return Object.fromEntries(new URLSearchParams(body));
}

export function createApprovalAnswerHandler(options: ApprovalAnswerHandlerOptions): RequestHandler {
  return async (req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== APPROVAL_ANSWER_PATH) return false;
    if (req.method !== 'POST') {
      answer(res, 405, { error: 'POST the answer token' }, { allow: 'POST' });
      return true;
    }
    const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
    if (type !== 'application/json' && type !== 'application/x-www-form-urlencoded') {
      answer(res, 415, { error: 'send application/json or application/x-www-form-urlencoded' });
      return true;
    }
    const body = await readCapped(req);
    if (body === undefined) {
      answer(res, 413, { error: `body larger than ${MAX_ANSWER_BODY_BYTES} bytes` }, { connection: 'close' });
      req.resume();
      return true;
    }
    const fields = fieldsOf(type, body);
    if (fields === undefined) {
      answer(res, 400, { error: 'the body is not a JSON object' });
      return true;
    }
    try {
      const claims = verifyAnswerToken(fields.token, options.secrets);
      const by = typeof fields.by === 'string' && fields.by !== '' ? `token:${fields.by}` : 'token';
      const row = await decideApproval(options.db, {
        id: claims.approvalId,
        tenant: claims.tenant,
        answer: claims.answer,
        by,
        reason: typeof fields.reason === 'string' ? fields.reason : undefined,
        nonce: claims.nonce,
      });
      options.onDecided?.(row);
      const decided = toApproval(row);
      options.logger.info({ approvalId: decided.id, status: decided.status, decidedBy: decided.decidedBy }, 'approval decided by an answer token');
      answer(res, 200, { approvalId: decided.id, status: decided.status, decidedBy: decided.decidedBy, decidedAt: decided.decidedAt?.toISOString() ?? null });
    } catch (err) {
      if (err instanceof ApprovalTokenError) answer(res, 403, { error: err.message });
      else if (err instanceof ApprovalNotPendingError) answer(res, 409, { error: err.message, status: err.status });
      else if (err instanceof ApprovalNotFoundError) answer(res, 404, { error: 'no such approval' });
      else if (err instanceof TypeError) answer(res, 400, { error: err.message });
      else throw err;
    }
    return true;
  };
}
