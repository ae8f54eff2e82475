/**
 * A3: the signed single-use answer token behind a chat button ("Approve" / "Reject"):
 * `hra1.<claims>.<mac>`, claims = base64url JSON { a: approval id, t: tenant, d: approve|reject,
 * n: the request's nonce, e: expiry (unix seconds) }, mac = base64url HMAC-SHA256 over
 * `hra1.<claims>` with the first of HOOKRELAY_APPROVAL_SECRETS (any of them verifies, for
 * rotation). Single use: a decision clears the request's nonce, so every token of the request —
 * the other button included — is spent with it.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { ApprovalAnswerSchema, type ApprovalAnswer } from '../contract/approval.ts';
import { ApprovalTokenError } from '../contract/errors.ts';

const VERSION = 'hra1';
/** Longest token read (a button's payload; anything longer is not one of ours). */
const MAX_ANSWER_TOKEN_LENGTH = 1_024;

const ClaimsSchema = z.strictObject({
  a: z.string().min(1).max(64),
  t: z.string().min(1).max(128),
  d: ApprovalAnswerSchema,
  n: z.string().min(1).max(64),
  e: z.number().int().positive(),
});

export type AnswerClaims = { approvalId: string; tenant: string; answer: ApprovalAnswer; nonce: string; expiresAt: Date };

function mac(secret: string, signed: string): Buffer {
  return createHmac('sha256', secret).update(signed, 'utf8').digest();
}

export function signAnswerToken(claims: AnswerClaims, secret: string): string {
  const body = Buffer.from(
    JSON.stringify({ a: claims.approvalId, t: claims.tenant, d: claims.answer, n: claims.nonce, e: Math.floor(claims.expiresAt.getTime() / 1000) }),
  ).toString('base64url');
  const signed = `${VERSION}.${body}`;
  return `${signed}.${mac(secret, signed).toString('base64url')}`;
}

/** The token's claims when one of `secrets` signed it and it has not expired; else ApprovalTokenError (nothing said about which check failed). */
export function verifyAnswerToken(token: unknown, secrets: readonly string[], now = Date.now()): AnswerClaims {
  const refused = () => new ApprovalTokenError('this answer link is not valid (malformed, forged or expired); nothing changed');
  if (typeof token !== 'string' || token.length > MAX_ANSWER_TOKEN_LENGTH || secrets.length === 0) throw refused();
  const parts = token.split('.');
  if (parts.length !== 3 || parts[0] !== VERSION) throw refused();
  const [version, body, given] = parts as [string, string, string];
  const signed = `${version}.${body}`;
  const givenMac = Buffer.from(given, 'base64url');
  if (!secrets.some((s) => givenMac.length === 32 && timingSafeEqual(givenMac, mac(s, signed)))) throw refused();
  let claims: z.infer<typeof ClaimsSchema>;
  try {
    claims = ClaimsSchema.parse(JSON.parse(Buffer.from(body, 'base64url').toString('utf8')));
  } catch {
    throw refused();
  }
  if (claims.e * 1000 <= now) throw refused();
  return { approvalId: claims.a, tenant: claims.t, answer: claims.d, nonce: claims.n, expiresAt: new Date(claims.e * 1000) };
}
