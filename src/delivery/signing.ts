/**
 * Q1 / Q6: Standard Webhooks headers. `webhook-id` and `webhook-timestamp` on every attempt;
 * with secrets, `webhook-signature` = space-separated `v1,<base64 HMAC-SHA256(id.timestamp.body)>`,
 * one entry per secret (rotation).
 */
import { createHmac } from 'node:crypto';
import { decodeSigningSecrets } from '../contract/signingSecrets.ts';
import { DeliveryConfigError } from './errors.ts';
const SIGNATURE_VERSION = 'v1';

export type SignatureInput = { id: string; timestampSeconds: number; body: string; secrets: readonly string[] };

const toConfigError = (message: string) => new DeliveryConfigError(message);

export function signatureHeaders(input: SignatureInput): Record<string, string> {
  const timestamp = String(Math.floor(input.timestampSeconds));
  const headers: Record<string, string> = { 'webhook-id': input.id, 'webhook-timestamp': timestamp };
  if (input.secrets.length === 0) return headers;
  const signed = `${input.id}.${timestamp}.${input.body}`;
  headers['webhook-signature'] = decodeSigningSecrets(input.secrets.join(' '), toConfigError)
    .map(({ key }) => `${SIGNATURE_VERSION},${createHmac('sha256', key).update(signed).digest('base64')}`)
    .join(' ');
  return headers;
}

/** Splits HOOKRELAY_SIGNING_SECRETS (space-separated) and validates each entry (the one parser); errors never show a secret. */
export function parseSigningSecrets(value: string | undefined): string[] {
  return decodeSigningSecrets(value, toConfigError).map((s) => s.secret);
}
