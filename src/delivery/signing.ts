/**
 * Q1 / Q6: Standard Webhooks headers. `webhook-id` and `webhook-timestamp` on every attempt;
 * with secrets, `webhook-signature` = space-separated `v1,<base64 HMAC-SHA256(id.timestamp.body)>`,
 * one entry per secret (rotation).
 */
import { createHmac } from 'node:crypto';
import { DeliveryConfigError } from './errors.ts';

export const SIGNING_SECRETS_ENV = 'HOOKRELAY_SIGNING_SECRETS';
const SECRET_PREFIX = 'whsec_';
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
/** Standard Webhooks: symmetric secrets are 24–64 random bytes. */
export const MIN_SECRET_BYTES = 24;
export const MAX_SECRET_BYTES = 64;
const SIGNATURE_VERSION = 'v1';

export type SignatureInput = { id: string; timestampSeconds: number; body: string; secrets: readonly string[] };

export function signatureHeaders(input: SignatureInput): Record<string, string> {
  const timestamp = String(Math.floor(input.timestampSeconds));
  const headers: Record<string, string> = { 'webhook-id': input.id, 'webhook-timestamp': timestamp };
  if (input.secrets.length === 0) return headers;
  const signed = `${input.id}.${timestamp}.${input.body}`;
  headers['webhook-signature'] = input.secrets
    .map((secret, index) => `${SIGNATURE_VERSION},${createHmac('sha256', secretKey(secret, index)).update(signed).digest('base64')}`)
    .join(' ');
  return headers;
}

/** Splits HOOKRELAY_SIGNING_SECRETS (space-separated) and validates each entry; errors never show a secret. */
export function parseSigningSecrets(value: string | undefined): string[] {
  const secrets = (value ?? '').split(/\s+/).filter((s) => s !== '');
  secrets.forEach((secret, index) => secretKey(secret, index));
  return secrets;
}

function secretKey(secret: string, index: number): Buffer {
  const encoded = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  const where = `${SIGNING_SECRETS_ENV} entry #${index + 1}`;
  if (!BASE64.test(encoded)) throw new DeliveryConfigError(`${where} is not a ${SECRET_PREFIX}<base64> secret`);
  const key = Buffer.from(encoded, 'base64');
  if (key.length < MIN_SECRET_BYTES || key.length > MAX_SECRET_BYTES) {
    throw new DeliveryConfigError(`${where} must decode to ${MIN_SECRET_BYTES}–${MAX_SECRET_BYTES} bytes`);
  }
  return key;
}
