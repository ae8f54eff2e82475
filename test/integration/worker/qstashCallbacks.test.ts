import { afterEach, describe, expect, it, vi } from 'vitest';
import { createHmac } from 'node:crypto';
import { parseQStashCallbackBody, verifyQStashCallback } from '../../../src/worker/qstash/verifyCallback.ts';
import { QSTASH_DEV_CREDENTIALS, signQStashJwt } from '../../support/qstashServer.ts';

const CURRENT = 'sig_test_current_key_1';
const NEXT = 'sig_test_next_key_2';
const URL_ = 'http://127.0.0.1:9/qstash/callback';

function callbackBody(overrides: Record<string, unknown> = {}): string {
  return JSON.stringify({
    status: 200,
    header: { 'Content-Type': ['text/plain'] },
    body: Buffer.from('all good').toString('base64'),
    retried: 0,
    maxRetries: 3,
    sourceMessageId: 'msg_source_1',
    topicName: '',
    endpointName: '',
    url: 'http://127.0.0.1:9/hook',
    method: 'POST',
    sourceHeader: {},
    sourceBody: Buffer.from('{"a":1}').toString('base64'),
    notBefore: '1700000000000',
    createdAt: '1700000000000',
    scheduleId: '',
    callerIP: '127.0.0.1',
    ...overrides,
  });
}

function verify(body: string, signature: string | undefined, extra: Partial<Parameters<typeof verifyQStashCallback>[0]> = {}) {
  return verifyQStashCallback({ signature, body, url: URL_, currentSigningKey: CURRENT, nextSigningKey: NEXT, ...extra });
}

/** A JWT with arbitrary claims, signed like QStash does (HS256, key as UTF-8 bytes). */
function rawJwt(key: string, claims: Record<string, unknown>): string {
  const enc = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
  const input = `${enc({ alg: 'HS256', typ: 'JWT' })}.${enc(claims)}`;
  return `${input}.${createHmac('sha256', key).update(input).digest('base64url')}`;
}

afterEach(() => {
  vi.unstubAllEnvs();
  vi.restoreAllMocks();
});

describe('QStash callback verification (real Receiver)', () => {
  it('Q7: a signed callback verifies and yields sourceMessageId, destination status and ok', async () => {
    const body = callbackBody();
    const result = await verify(body, signQStashJwt({ key: CURRENT, url: URL_, body }));
    expect(result).toEqual({
      valid: true,
      callback: {
        sourceMessageId: 'msg_source_1',
        status: 200,
        ok: true,
        retried: 0,
        maxRetries: 3,
        url: 'http://127.0.0.1:9/hook',
        responseBodyExcerpt: 'all good',
      },
    });
  });

  it('Q7: both signing keys are accepted (rotation), any other key is not', async () => {
    const body = callbackBody({ status: 500, dlqId: '1700000000000-1' });
    const byNext = await verify(body, signQStashJwt({ key: NEXT, url: URL_, body }));
    expect(byNext).toEqual({ valid: true, callback: expect.objectContaining({ status: 500, ok: false, dlqId: '1700000000000-1' }) });
    expect(await verify(body, signQStashJwt({ key: 'sig_someone_else', url: URL_, body }))).toEqual({
      valid: false,
      reason: 'invalid_signature',
    });
  });

  it('Q7: a tampered body, another callback URL, an expired token or a token without body hash is invalid_signature', async () => {
    const body = callbackBody();
    const signature = signQStashJwt({ key: CURRENT, url: URL_, body });
    expect(await verify(callbackBody({ status: 201 }), signature)).toEqual({ valid: false, reason: 'invalid_signature' });
    expect(await verify(body, signature, { url: 'http://127.0.0.1:9/qstash/other' })).toEqual({ valid: false, reason: 'invalid_signature' });
    const expired = signQStashJwt({ key: CURRENT, url: URL_, body, nowSeconds: Math.floor(Date.now() / 1000) - 3600 });
    expect(await verify(body, expired)).toEqual({ valid: false, reason: 'invalid_signature' });
    const now = Math.floor(Date.now() / 1000);
    const noBodyClaim = rawJwt(CURRENT, { iss: 'Upstash', sub: URL_, iat: now, nbf: now, exp: now + 300 });
    expect(await verify(body, noBodyClaim)).toEqual({ valid: false, reason: 'invalid_signature' });
    const wrongIssuer = rawJwt(CURRENT, { iss: 'NotUpstash', sub: URL_, exp: now + 300, body: 'x' });
    expect(await verify(body, wrongIssuer)).toEqual({ valid: false, reason: 'invalid_signature' });
    expect(await verify(body, 'not-a-jwt')).toEqual({ valid: false, reason: 'invalid_signature' });
  });

  it('Q7: a missing signature header is missing_signature; missing signing keys are a configuration failure', async () => {
    const body = callbackBody();
    expect(await verify(body, undefined)).toEqual({ valid: false, reason: 'missing_signature' });
    expect(await verify(body, '  ')).toEqual({ valid: false, reason: 'missing_signature' });
    const signature = signQStashJwt({ key: CURRENT, url: URL_, body });
    expect(await verify(body, signature, { nextSigningKey: undefined })).toEqual({ valid: false, reason: 'configuration' });
    expect(await verify(body, signature, { currentSigningKey: '' })).toEqual({ valid: false, reason: 'configuration' });
  });

  it('Q7: the verifier never falls back to QSTASH_* environment keys or dev mode', async () => {
    vi.spyOn(console, 'warn').mockImplementation(() => undefined);
    const body = callbackBody();
    // Env keys present: still refused when the explicit keys are missing.
    vi.stubEnv('QSTASH_CURRENT_SIGNING_KEY', CURRENT);
    vi.stubEnv('QSTASH_NEXT_SIGNING_KEY', NEXT);
    const signature = signQStashJwt({ key: CURRENT, url: URL_, body });
    expect(await verify(body, signature, { currentSigningKey: undefined, nextSigningKey: undefined })).toEqual({
      valid: false,
      reason: 'configuration',
    });
    // QSTASH_DEV=true must not swap in the public dev keys.
    vi.stubEnv('QSTASH_DEV', 'true');
    const devSigned = signQStashJwt({ key: QSTASH_DEV_CREDENTIALS.currentSigningKey, url: URL_, body });
    expect(await verify(body, devSigned)).toEqual({ valid: false, reason: 'invalid_signature' });
    expect(await verify(body, signature)).toEqual({ valid: true, callback: expect.objectContaining({ sourceMessageId: 'msg_source_1' }) });
  });

  it('Q7: a correctly signed body that is not a callback is invalid_body', async () => {
    for (const body of ['not json', '[]', '{}', JSON.stringify({ status: 200 }), JSON.stringify({ sourceMessageId: 'm', status: 'x' })]) {
      expect(await verify(body, signQStashJwt({ key: CURRENT, url: URL_, body }))).toEqual({ valid: false, reason: 'invalid_body' });
    }
  });

  it('Q7: the callback parser accepts the documented spelling variants and caps the response excerpt at 2 KiB', () => {
    const typo = parseQStashCallbackBody(JSON.stringify({ sourceMessasgeId: 'msg_typo', status: '503', retried: '2', maxRetries: '3' }));
    expect(typo).toEqual({ valid: true, callback: { sourceMessageId: 'msg_typo', status: 503, ok: false, retried: 2, maxRetries: 3 } });
    const big = parseQStashCallbackBody(callbackBody({ body: Buffer.from('x'.repeat(10_000)).toString('base64') }));
    expect(big.valid && big.callback.responseBodyExcerpt?.length).toBe(2048);
    const noResponse = parseQStashCallbackBody(JSON.stringify({ sourceMessageId: 'm', status: 0 }));
    expect(noResponse).toEqual({ valid: true, callback: { sourceMessageId: 'm', status: 0, ok: false } });
  });
});
