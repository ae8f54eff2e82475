/**
 * Q1 / Q6: Standard Webhooks headers. `webhook-id` and `webhook-timestamp` on every attempt;
 * with secrets, `webhook-signature` = space-separated `v1,<base64 HMAC-SHA256(id.timestamp.body)>`,
 * one entry per secret (rotation).
 */
import { createHmac, createSecretKey, type KeyObject } from 'node:crypto';
import { decodeSigningSecrets } from '../config/signingSecrets.ts';
import { DeliveryConfigError } from '../contract/errors.ts';
const SIGNATURE_VERSION = 'v1';

export type SignatureInput = { id: string; timestampSeconds: number; body: string; secrets: readonly string[] };

const toConfigError = (message: string) => new DeliveryConfigError(message);

/**
 * Q6: the decoded key objects of a secrets list, made once per list instead of once per delivery
 * (validate, base64-decode, import). In memory only, like the settings that hold the secrets;
 * bounded (a process signs with a handful of lists: the worker's, a remote interceptor's).
 */
const keyCache = new Map<string, KeyObject[]>();
const KEY_CACHE_MAX = 16;

/** The same, by the list itself: a worker signs every delivery with one settings array. */
const keysByList = new WeakMap<readonly string[], KeyObject[]>();

function signingKeys(secrets: readonly string[]): KeyObject[] {
  const known = keysByList.get(secrets);
  if (known !== undefined) return known;
  const keys = signingKeysOf(secrets);
  // Frozen lists only: a list that may change later is looked up by its text each time.
  if (Object.isFrozen(secrets)) keysByList.set(secrets, keys);
  return keys;
}

function signingKeysOf(secrets: readonly string[]): KeyObject[] {
  const joined = secrets.join(' ');
  let keys = keyCache.get(joined);
  if (!keys) {
    keys = decodeSigningSecrets(joined, toConfigError).map(({ key }) => createSecretKey(key));
    if (keyCache.size >= KEY_CACHE_MAX) keyCache.clear();
    keyCache.set(joined, keys);
  }
  return keys;
}

export function signatureHeaders(input: SignatureInput): Record<string, string> {
  return addSignatureHeaders({}, input.id, input.timestampSeconds, input.body, input.secrets);
}

/** The same headers set on `headers` (in this order), which is returned: no object of their own per request. */
export function addSignatureHeaders(
  headers: Record<string, string>,
  id: string,
  timestampSeconds: number,
  body: string,
  secrets: readonly string[],
): Record<string, string> {
  const timestamp = String(Math.floor(timestampSeconds));
  headers['webhook-id'] = id;
  headers['webhook-timestamp'] = timestamp;
  if (secrets.length === 0) return headers;
  // The signed content `id.timestamp.body` is fed in parts: no copy of the body per secret.
  const prefix = `${id}.${timestamp}.`;
  const keys = signingKeys(secrets);
  let signature = '';
  for (const key of keys) {
    const entry = `${SIGNATURE_VERSION},${createHmac('sha256', key).update(prefix).update(body).digest('base64')}`;
    signature = signature === '' ? entry : `${signature} ${entry}`;
  }
  headers['webhook-signature'] = signature;
  return headers;
}

/** Splits HOOKRELAY_SIGNING_SECRETS (space-separated) and validates each entry (the one parser); errors never show a secret. */
export function parseSigningSecrets(value: string | undefined): string[] {
  return decodeSigningSecrets(value, toConfigError).map((s) => s.secret);
}
