import { describe, expect, it } from 'vitest';
import { resolvedTemplateValues, sentHeadersAsConfigured } from '../../../src/send/attemptEvidence.ts';
import { redactSecrets } from '../../../src/send/secretRedaction.ts';

const configured = { Authorization: 'Bearer ${TOKEN}', 'x-tenant': 'acme', 'x-pair': '${A}:${B}' };
const sent = {
  authorization: 'Bearer s3cr+t/v=',
  'x-tenant': 'acme',
  'x-pair': 'left-one:right-two',
  'content-type': 'application/json',
  'webhook-id': 'dlv_1',
  'webhook-signature': 'v1,abc',
};
const env = { TOKEN: 's3cr+t/v=', A: 'left-one', B: 'right-two', OTHER: 'unused-value' };

describe('UX-2 attempt evidence (Q8): headers as configured, secrets out of the excerpt', () => {
  it('UX-2 templates are shown as templates, literal values as sent, the signature elided, the user agent added', () => {
    const h = sentHeadersAsConfigured(configured, sent);
    expect(h).toMatchObject({
      authorization: 'Bearer ${TOKEN}',
      'x-tenant': 'acme',
      'x-pair': '${A}:${B}',
      'webhook-id': 'dlv_1',
      'webhook-signature': '(elided)',
    });
    expect(h['user-agent']).toMatch(/^hookrelay/);
    expect(JSON.stringify(h)).not.toContain('s3cr');
    expect(JSON.stringify(h)).not.toContain('left-one');
  });
  it('UX-2 the secrets are every resolved template value and each variable in it, never an unused variable', () => {
    expect(resolvedTemplateValues(configured, sent, env).sort()).toEqual(
      ['Bearer s3cr+t/v=', 'left-one', 'left-one:right-two', 'right-two', 's3cr+t/v='].sort(),
    );
  });
  it('UX-2 an echoed secret is redacted raw, JSON-escaped, URL-encoded and base64; a cut excerpt ending inside one loses that tail', () => {
    const secrets = resolvedTemplateValues(configured, sent, env);
    const b64 = Buffer.from('s3cr+t/v=').toString('base64');
    const text = `{"a":"Bearer s3cr+t/v=","b":"${encodeURIComponent('s3cr+t/v=')}","c":"${b64}","d":"left-one"}`;
    const out = redactSecrets(text, secrets);
    expect(out).toBe('{"a":"[redacted]","b":"[redacted]","c":"[redacted]","d":"[redacted]"}');
    expect(redactSecrets('{"error":"token s3cr+', secrets)).toBe('{"error":"token [redacted]');
    expect(redactSecrets('{"error":"unknown customer"}', secrets)).toBe('{"error":"unknown customer"}');
    expect(redactSecrets('anything', [])).toBe('anything');
  });
});
