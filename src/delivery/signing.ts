/**
 * Q1 / Q6: Standard Webhooks headers. `webhook-id` and `webhook-timestamp` on every attempt;
 * with secrets, `webhook-signature` = space-separated `v1,<base64 HMAC-SHA256(id.timestamp.body)>`,
 * one entry per secret (rotation).
 */
import { createHmac, createSecretKey, type KeyObject } from 'node:crypto';
import { decodeSigningSecrets } from '../contract/signingSecrets.ts';
import { DeliveryConfigError } from './errors.ts';
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

function signingKeys(secrets: readonly string[]): KeyObject[] {
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
  const timestamp = String(Math.floor(input.timestampSeconds));
  const headers: Record<string, string> = { 'webhook-id': input.id, 'webhook-timestamp': timestamp };
  if (input.secrets.length === 0) return headers;
  // The signed content `id.timestamp.body` is fed in parts: no copy of the body per secret.
  const prefix = `${input.id}.${timestamp}.`;
  headers['webhook-signature'] = signingKeys(input.secrets)
    .map((key) => `${SIGNATURE_VERSION},${createHmac('sha256', key).update(prefix).update(input.body).digest('base64')}`)
    .join(' ');
  return headers;
}

/** Splits HOOKRELAY_SIGNING_SECRETS (space-separated) and validates each entry (the one parser); errors never show a secret. */
export function parseSigningSecrets(value: string | undefined): string[] {
  return decodeSigningSecrets(value, toConfigError).map((s) => s.secret);
}
