import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { parseSigningSecrets, signatureHeaders } from '../../../src/send/signing.ts';

const secret = () => `whsec_${randomBytes(32).toString('base64')}`;

describe('Q6: Standard Webhooks signing', () => {
  const body = JSON.stringify({ hookId: 'h1', hookType: 'afterStep', text: 'héllo ✓' });
  const id = 'dlv_01J9Z8Y7X6W5V4T3S2R1Q0P9N8';

  it('Q1: webhook-id and webhook-timestamp are sent even without secrets; no signature then', () => {
    const headers = signatureHeaders({ id, timestampSeconds: 1_700_000_000.9, body, secrets: [] });
    expect(headers).toEqual({ 'webhook-id': id, 'webhook-timestamp': '1700000000' });
  });

  it('Q6: the signature verifies with the standardwebhooks library', () => {
    const s = secret();
    const now = Math.floor(Date.now() / 1000);
    const headers = signatureHeaders({ id, timestampSeconds: now, body, secrets: [s] });
    expect(headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    expect(new Webhook(s).verify(body, headers)).toEqual(JSON.parse(body));
  });

  it('Q6: two secrets (rotation) give two v1 entries and each secret verifies alone', () => {
    const [oldSecret, newSecret] = [secret(), secret()];
    const headers = signatureHeaders({ id, timestampSeconds: Math.floor(Date.now() / 1000), body, secrets: [oldSecret, newSecret] });
    expect(headers['webhook-signature']?.split(' ')).toHaveLength(2);
    expect(() => new Webhook(oldSecret).verify(body, headers)).not.toThrow();
    expect(() => new Webhook(newSecret).verify(body, headers)).not.toThrow();
    expect(() => new Webhook(secret()).verify(body, headers)).toThrow();
  });

  it('Q6: a changed body or id does not verify', () => {
    const s = secret();
    const headers = signatureHeaders({ id, timestampSeconds: Math.floor(Date.now() / 1000), body, secrets: [s] });
    expect(() => new Webhook(s).verify(`${body} `, headers)).toThrow();
    expect(() => new Webhook(s).verify(body, { ...headers, 'webhook-id': 'dlv_other' })).toThrow();
  });

  it('Q6: HOOKRELAY_SIGNING_SECRETS is space-separated; a bad entry is named by position, never shown', () => {
    const [a, b] = [secret(), secret()];
    expect(parseSigningSecrets(` ${a}  ${b} `)).toEqual([a, b]);
    expect(parseSigningSecrets(undefined)).toEqual([]);
    const bad = 'whsec_not base64!!';
    try {
      parseSigningSecrets(`${a} whsec_c2hvcnQ=`);
      throw new Error('expected a throw');
    } catch (error) {
      expect((error as Error).message).toMatch(/HOOKRELAY_SIGNING_SECRETS entry #2/);
      expect((error as Error).message).not.toContain('c2hvcnQ');
    }
    expect(() => parseSigningSecrets(bad)).toThrow(/entry #1/);
  });

  it('PERF-2 (Q6): keys made once per secrets list still sign with the list given — 20 lists in turn (past the cache bound), a rotated list, a bad list still refused', () => {
    const now = Math.floor(Date.now() / 1000);
    const lists = Array.from({ length: 20 }, () => [secret()]);
    for (let round = 0; round < 2; round++) {
      for (const [i, list] of lists.entries()) {
        const headers = signatureHeaders({ id: `${id}${i}`, timestampSeconds: now, body, secrets: list });
        expect(() => new Webhook(list[0] as string).verify(body, headers)).not.toThrow();
        const other = lists[(i + 1) % lists.length] as string[];
        expect(() => new Webhook(other[0] as string).verify(body, headers)).toThrow();
      }
    }
    const [a, b] = lists as [string[], string[]];
    const rotated = signatureHeaders({ id, timestampSeconds: now, body, secrets: [...a, ...b] });
    expect(rotated['webhook-signature']?.split(' ')).toHaveLength(2);
    expect(() => new Webhook(b[0] as string).verify(body, rotated)).not.toThrow();
    expect(() => signatureHeaders({ id, timestampSeconds: now, body, secrets: ['whsec_c2hvcnQ='] })).toThrow(/entry #1/);
    expect(() => signatureHeaders({ id, timestampSeconds: now, body, secrets: ['whsec_c2hvcnQ='] })).toThrow(/entry #1/);
  });
});
