import { describe, expect, it } from 'vitest';
import { signAnswerToken, verifyAnswerToken } from '../../../src/approvals/answerToken.ts';
import { ApprovalTokenError } from '../../../src/contract/errors.ts';
import { approvalSecretsProblem } from '../../../src/config/approvalSecrets.ts';

const A = 'a'.repeat(32);
const B = 'b'.repeat(40);
const claims = { approvalId: 'apr_1', tenant: 'acme', answer: 'approve' as const, nonce: 'n0nce', expiresAt: new Date(Date.now() + 60_000) };

describe('APR-5 (A3): answer tokens', () => {
  it('APR-5 (A3): a token verifies under its secret, and under the rotation list that still holds it', () => {
    const token = signAnswerToken(claims, A);
    expect(verifyAnswerToken(token, [A])).toMatchObject({ approvalId: 'apr_1', tenant: 'acme', answer: 'approve', nonce: 'n0nce' });
    expect(verifyAnswerToken(token, [B, A]).approvalId).toBe('apr_1');
  });

  it('APR-5 (A3): another secret, a changed claim (approve → reject), an expired or malformed token are refused alike', () => {
    const token = signAnswerToken(claims, A);
    expect(() => verifyAnswerToken(token, [B])).toThrow(ApprovalTokenError);
    const [v, body, mac] = token.split('.') as [string, string, string];
    const flipped = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(body, 'base64url').toString()), d: 'reject' })).toString('base64url');
    expect(() => verifyAnswerToken(`${v}.${flipped}.${mac}`, [A])).toThrow(ApprovalTokenError);
    expect(() => verifyAnswerToken(signAnswerToken({ ...claims, expiresAt: new Date(Date.now() - 1000) }, A), [A])).toThrow(ApprovalTokenError);
    for (const bad of ['', 'hra1..', 'x.y.z', `${token}.x`, `hra1.${'a'.repeat(2000)}`, 42, null])
      expect(() => verifyAnswerToken(bad, [A])).toThrow(ApprovalTokenError);
    expect(() => verifyAnswerToken(token, [])).toThrow(ApprovalTokenError);
  });

  it('APR-5 (A3): HOOKRELAY_APPROVAL_SECRETS refuses a short secret by its position, never echoing it', () => {
    expect(approvalSecretsProblem(`${A} short`)).toBe('secret 2 is shorter than 32 characters (e.g. openssl rand -hex 32)');
    expect(approvalSecretsProblem(`${A} ${B}`)).toBeUndefined();
  });
});
