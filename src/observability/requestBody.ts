/**
 * Reading a request body with its route's cap and, for callers not yet known to be who they say
 * (a QStash callback before its body hash is checked, a sign-in form), within one budget of memory
 * shared by every such body on the server. What a body may hold is reserved before its first byte
 * is read — its Content-Length, or the route's cap when it is chunked — so a thousand connections
 * that each promise a megabyte and then stall hold the budget, not a gigabyte: past it they are
 * answered 503 at once. A Content-Length over the cap is answered 413 without reading.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

/** Bytes of request bodies held at once for unauthenticated callers, shared by every route. */
export type BodyBudget = {
  /** Holds `bytes` if they fit (true), else nothing (false). */
  reserve(bytes: number): boolean;
  release(bytes: number): void;
  /** Bytes held now. */
  held(): number;
};

export function createBodyBudget(totalBytes: number): BodyBudget {
  let held = 0;
  return {
    reserve(bytes) {
      if (held + bytes > totalBytes) return false;
      held += bytes;
      return true;
    },
    release(bytes) {
      held = Math.max(0, held - bytes);
    },
    held: () => held,
  };
}

/** Why a body was not read: too large for its route, over the shared budget, or the client went away. */
export type BodyRefusal = 'body_too_large' | 'body_budget' | 'body_aborted';

export type BodyRead = { ok: true; body: Buffer } | { ok: false; reason: BodyRefusal };

export type ReadBodyOptions = {
  /** The route's cap: what its largest legitimate body needs. */
  maxBytes: number;
  /** Set for callers not authenticated yet: the body is held within this budget. */
  budget?: BodyBudget;
};

/** The declared Content-Length (Node's parser has already refused a malformed one), or undefined when chunked. */
export function declaredLength(req: IncomingMessage): number | undefined {
  const raw = req.headers['content-length'];
  return raw === undefined ? undefined : Number(raw);
}

export async function readRequestBody(req: IncomingMessage, res: ServerResponse, options: ReadBodyOptions): Promise<BodyRead> {
  const declared = declaredLength(req);
  if (declared !== undefined && declared > options.maxBytes) return { ok: false, reason: 'body_too_large' };
  const reserved = declared ?? options.maxBytes;
  if (options.budget && !options.budget.reserve(reserved)) return { ok: false, reason: 'body_budget' };
  try {
    // A client that asked first (Expect: 100-continue) sends its body only now that it is wanted.
    if (/100-continue/i.test(req.headers.expect ?? '')) res.writeContinue();
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req) {
      size += (chunk as Buffer).length;
      if (size > options.maxBytes) return { ok: false, reason: 'body_too_large' };
      chunks.push(chunk as Buffer);
    }
    return { ok: true, body: Buffer.concat(chunks, size) };
  } catch {
    // The connection closed (or timed out) mid-body: nobody is left to answer.
    return { ok: false, reason: 'body_aborted' };
  } finally {
    options.budget?.release(reserved);
  }
}
