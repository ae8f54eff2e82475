/**
 * Q7: QStash's callback / failure-callback requests to the worker.
 *
 * Each is an ordinary QStash delivery (POST, JSON body, `Upstash-Signature` JWT whose `sub` is the
 * callback URL), verified here with the real `Receiver` and both signing keys (current, then
 * next, for rotation). The body is parsed into the few fields the ledger needs.
 *
 * Receiver facts this relies on (@upstash/qstash 2.12.0): it uses the configured keys only when
 * BOTH are given (otherwise it reads `QSTASH_*` env vars), `devMode: true` or `QSTASH_DEV` would
 * swap in the dev keys, so we pass `devMode: false` and refuse to verify without both keys;
 * `verify` resolves `true` or throws (SignatureError, or TypeError for a token without a `body`
 * claim); the `sub` check is an exact string compare against `url`.
 *
 * Before the body is read, `verifyQStashSignatureHeader` makes the Receiver's own token check
 * (jose's `jwtVerify`: HS256/384/512 under either key, issuer `Upstash`, `sub` = the URL, `exp`
 * and `nbf`) on the header alone, so a stranger without the signing keys is answered before a
 * byte of body is read; the full check (body hash included) follows the body, by the Receiver.
 */
import { Receiver } from '@upstash/qstash';
import { jwtVerify } from 'jose';
import { sanitizeStorableText } from '../../contract/storableText.ts';
import { withDefined } from '../../util/withDefined.ts';
import { isObject } from '../../util/isObject.ts';

/** What a verified callback tells about the source message's delivery attempt. */
export type QStashCallback = {
  /** The QStash message id returned by the publish. */
  sourceMessageId: string;
  /** HTTP status the destination answered; 0 when there was no HTTP answer. */
  status: number;
  /** The destination answered 2xx. */
  ok: boolean;
  /** 0-based attempt number, when QStash sent it. */
  retried?: number;
  maxRetries?: number;
  /** Present on failure callbacks (the message went to the DLQ). */
  dlqId?: string;
  /** The destination the source message was sent to. */
  url?: string;
  /** The destination's response body (decoded from base64, UTF-8), cut to a short excerpt. */
  responseBodyExcerpt?: string;
};

type QStashCallbackFailure =
  /** No (or an empty) `Upstash-Signature` header. */
  | 'missing_signature'
  /** Current and next signing keys are not both configured: nothing can be verified. */
  | 'configuration'
  /** The signature, its issuer, expiry, subject (URL) or body hash did not verify. */
  | 'invalid_signature'
  /** Signed correctly but not a callback body we understand. */
  | 'invalid_body'
  /** A token already accepted (or being read now): a replay, which changes nothing. */
  | 'replayed';

export type QStashCallbackResult = { valid: true; callback: QStashCallback } | { valid: false; reason: QStashCallbackFailure };

export type VerifyQStashCallbackInput = {
  /** The `Upstash-Signature` header value. */
  signature: string | undefined | null;
  /** The raw request body text, exactly as received (re-serialised JSON changes the hash). */
  body: string;
  /** The exact callback URL QStash was given (the JWT `sub`). */
  url: string;
  currentSigningKey: string | undefined;
  nextSigningKey: string | undefined;
  /** Seconds of clock skew tolerated on `exp`/`nbf`. Default 0 (the Receiver's default). */
  clockToleranceSeconds?: number;
};

/** What the header check learnt of a token that verified: its id and end (the replay memory's key and lifetime). */
export type QStashTokenClaims = { jti?: string; exp: number };

/** HMAC algorithms the Receiver accepts (any HS); never `none` or a public-key one. */
const TOKEN_ALGORITHMS = ['HS256', 'HS384', 'HS512'];
/** A real token is a few hundred bytes; a longer header is not parsed. */
const MAX_TOKEN_LENGTH = 4_096;
/** QStash's tokens live 5 minutes; one claiming to live longer than a day is refused (its replay memory would have to live as long). */
const MAX_TOKEN_LIFETIME_SECONDS = 86_400;

/**
 * The token's own check, before the body is read: signed with the current or next key (HS256,
 * HS384 or HS512), issuer `Upstash`, subject the exact callback URL, an `exp` not passed and not
 * more than a day away, `nbf` passed, a `body` claim present. The body hash is checked later
 * (`verifyQStashCallback`, with the body).
 */
export async function verifyQStashSignatureHeader(
  input: Omit<VerifyQStashCallbackInput, 'body'> & { nowSeconds?: number },
): Promise<{ valid: true; claims: QStashTokenClaims } | { valid: false; reason: QStashCallbackFailure }> {
  const keys = [input.currentSigningKey?.trim() ?? '', input.nextSigningKey?.trim() ?? ''];
  if (keys.includes('')) return { valid: false, reason: 'configuration' };
  const signature = input.signature?.trim() ?? '';
  if (signature === '') return { valid: false, reason: 'missing_signature' };
  if (signature.length > MAX_TOKEN_LENGTH) return { valid: false, reason: 'invalid_signature' };
  const now = input.nowSeconds ?? Math.floor(Date.now() / 1000);
  for (const key of keys) {
    try {
      const { payload } = await jwtVerify(signature, new TextEncoder().encode(key), {
        algorithms: TOKEN_ALGORITHMS,
        issuer: 'Upstash',
        subject: input.url,
        requiredClaims: ['exp', 'body'],
        currentDate: new Date(now * 1000),
        ...withDefined({ clockTolerance: input.clockToleranceSeconds }),
      });
      const exp = payload.exp as number;
      if (typeof payload.body !== 'string' || exp - now > MAX_TOKEN_LIFETIME_SECONDS) return { valid: false, reason: 'invalid_signature' };
      return { valid: true, claims: { exp, ...(typeof payload.jti === 'string' && payload.jti !== '' ? { jti: payload.jti } : {}) } };
    } catch {
      // Not this key (or not a token at all): the next key, as the Receiver does.
    }
  }
  return { valid: false, reason: 'invalid_signature' };
}

/** Longest response excerpt kept from a callback (SPEC Q8: ≤ 2 KiB). */
const QSTASH_CALLBACK_EXCERPT_BYTES = 2048;

export async function verifyQStashCallback(input: VerifyQStashCallbackInput): Promise<QStashCallbackResult> {
  const currentSigningKey = input.currentSigningKey?.trim() ?? '';
  const nextSigningKey = input.nextSigningKey?.trim() ?? '';
  if (currentSigningKey === '' || nextSigningKey === '') return { valid: false, reason: 'configuration' };
  const signature = input.signature?.trim() ?? '';
  if (signature === '') return { valid: false, reason: 'missing_signature' };

  const receiver = new Receiver({ currentSigningKey, nextSigningKey, devMode: false });
  try {
    await receiver.verify({
      signature,
      body: input.body,
      url: input.url,
      ...withDefined({ clockTolerance: input.clockToleranceSeconds }),
    });
  } catch {
    return { valid: false, reason: 'invalid_signature' };
  }
  return parseQStashCallbackBody(input.body);
}

/**
 * Parses the documented callback body: `status`, `body` (base64), `sourceMessageId` (the docs
 * also spell it `sourceMessasgeId`; both are accepted), `retried`, `maxRetries`, `url`, and
 * `dlqId` on failure callbacks. Numbers given as strings are accepted.
 */
export function parseQStashCallbackBody(body: string): QStashCallbackResult {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return { valid: false, reason: 'invalid_body' };
  }
  if (!isObject(parsed)) return { valid: false, reason: 'invalid_body' };
  const record = parsed as Record<string, unknown>;

  const sourceMessageId = nonEmptyString(record.sourceMessageId) ?? nonEmptyString(record.sourceMessasgeId);
  const status = integer(record.status);
  if (sourceMessageId === undefined || status === undefined || status < 0 || status > 999) {
    return { valid: false, reason: 'invalid_body' };
  }
  const callback: QStashCallback = { sourceMessageId, status, ok: status >= 200 && status < 300 };
  const retried = integer(record.retried);
  if (retried !== undefined && retried >= 0) callback.retried = retried;
  const maxRetries = integer(record.maxRetries);
  if (maxRetries !== undefined && maxRetries >= 0) callback.maxRetries = maxRetries;
  const dlqId = nonEmptyString(record.dlqId);
  if (dlqId !== undefined) callback.dlqId = dlqId;
  const url = nonEmptyString(record.url);
  if (url !== undefined) callback.url = url;
  const excerpt = decodeExcerpt(record.body);
  if (excerpt !== undefined) callback.responseBodyExcerpt = excerpt;
  return { valid: true, callback };
}

function nonEmptyString(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

function integer(value: unknown): number | undefined {
  if (typeof value === 'number' && Number.isSafeInteger(value)) return value;
  if (typeof value === 'string' && /^\d{1,15}$/.test(value)) return Number(value);
  return undefined;
}

function decodeExcerpt(value: unknown): string | undefined {
  if (typeof value !== 'string' || value === '') return undefined;
  if (!/^[A-Za-z0-9+/_-]*={0,2}$/.test(value)) return undefined;
  const bytes = Buffer.from(value, 'base64').subarray(0, QSTASH_CALLBACK_EXCERPT_BYTES);
  // A cut inside a multi-byte character decodes to U+FFFD, which is fine for an excerpt; NUL
  // (which Postgres cannot store) becomes U+FFFD too.
  return sanitizeStorableText(bytes.toString('utf8'));
}
