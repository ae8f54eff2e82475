/**
 * A3: `POST /approvals/answer` on the worker's HTTP port — what a chat button calls with the
 * answer token from `approval.requested` (JSON `{ "token", "reason"?, "by"? }` or the same as a
 * form). The token is the credential: signed (HOOKRELAY_APPROVAL_SECRETS), bound to one request
 * and one answer, spent by the first decision of its request. A route of the worker's server:
 * another content type is refused before any body byte is read (415), a body over 4 KiB too (413),
 * within the server's budget for unauthenticated bodies. Answers are JSON: 200 decided, 400 bad
 * input, 403 token refused, 404 no such approval, 409 no longer pending.
 */
import type { IncomingMessage } from 'node:http';
import type { Logger } from '../observability/logger.ts';
import type { PostRoute, RouteAnswer } from '../observability/httpServer.ts';
import { toApproval, type ApprovalRow } from '../store/approvalsRepo.ts';
import type { Db } from '../store/db.ts';
import { verifyAnswerToken } from './answerToken.ts';
import { decideApproval } from './decideApproval.ts';
import { ApprovalNotFoundError, ApprovalNotPendingError, ApprovalTokenError } from '../contract/errors.ts';
import { isObject } from '../util/isObject.ts';

export const APPROVAL_ANSWER_PATH = '/approvals/answer';
/** Largest body read: a token, a reason and a name. */
const MAX_ANSWER_BODY_BYTES = 4_096;
const JSON_HEADERS = { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' } as const;

export type ApprovalAnswerRouteOptions = {
  db: Db;
  secrets: readonly string[];
  logger: Logger;
  /** A decision was made (the worker announces `approval.resolved`). */
  onDecided?: (row: ApprovalRow) => void;
};

function answer(status: number, body: Record<string, unknown>): RouteAnswer {
  return { status, body: JSON.stringify(body), headers: JSON_HEADERS };
}

function contentTypeOf(req: IncomingMessage): string {
  return (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
}

function fieldsOf(type: string, body: string): Record<string, unknown> | undefined {
  if (type === 'application/x-www-form-urlencoded') return Object.fromEntries(new URLSearchParams(body));
  try {
    const parsed: unknown = JSON.parse(body);
    return isObject(parsed) ? parsed : undefined;
  } catch {
    return undefined;
  }
}

export function createApprovalAnswerRoute(options: ApprovalAnswerRouteOptions): PostRoute {
  const decide = async (fields: Record<string, unknown>): Promise<RouteAnswer> => {
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
      return answer(200, { approvalId: decided.id, status: decided.status, decidedBy: decided.decidedBy, decidedAt: decided.decidedAt?.toISOString() ?? null });
    } catch (err) {
      if (err instanceof ApprovalTokenError) return answer(403, { error: err.message });
      if (err instanceof ApprovalNotPendingError) return answer(409, { error: err.message, status: err.status });
      if (err instanceof ApprovalNotFoundError) return answer(404, { error: 'no such approval' });
      if (err instanceof TypeError) return answer(400, { error: err.message });
      throw err;
    }
  };
  return {
    maxBodyBytes: MAX_ANSWER_BODY_BYTES,
    async admit(req) {
      const type = contentTypeOf(req);
      if (type !== 'application/json' && type !== 'application/x-www-form-urlencoded') {
        return { ok: false, answer: answer(415, { error: 'send application/json or application/x-www-form-urlencoded' }) };
      }
      return {
        ok: true,
        handle: async (body) => {
          const fields = fieldsOf(type, body);
          return fields === undefined ? answer(400, { error: 'the body is not a JSON object' }) : decide(fields);
        },
      };
    },
  };
}
