import { describe, expect, it } from 'vitest';
import { REDACTED, redactSecrets, redactSecretsDeep, viewTextsForTest, WITHHELD_SHORT_SECRET } from '../../../src/send/secretRedaction.ts';
import { echoForms, leaksIn } from '../../support/secretForms.ts';

/** `/`, `+` and `=` change under JSON, percent and entity encoding; base64 changes everything. */
const TOKEN = 'sk+live/9f8e7d6c5b4a=';
const SECRETS = [TOKEN, `Bearer ${TOKEN}`];

describe('LEAK-1 (W7): one redaction finds a secret in every common encoding', () => {
  for (const [name, form] of Object.entries(echoForms(TOKEN))) {
    it(`LEAK-1 (W7): ${name} (${form.slice(0, 40)}) is redacted wherever it sits in a body`, () => {
      const body = `{"error":"bad token","got":"${form}","n":1}`;
      const out = redactSecrets(body, SECRETS);
      expect(leaksIn(out, TOKEN)).toEqual([]);
      expect(out).toContain(REDACTED);
      expect(out).toContain('"error":"bad token"');
      expect(out.endsWith('"n":1}')).toBe(true);
    });
  }

  it('LEAK-1 (W7): the whole header value as sent (Bearer …) goes as one, in JSON with PHP-escaped slashes', () => {
    const body = JSON.stringify({ auth: `Bearer ${TOKEN}` }).replace(/\//g, '\\/');
    expect(redactSecrets(body, SECRETS)).toBe(`{"auth":"${REDACTED}"}`);
  });

  it('LEAK-1 (W7): a percent-encoded URL inside a JSON string (both layers) and a twice-encoded one are redacted', () => {
    const quoted = encodeURIComponent(TOKEN).replace(/%2F/g, '/');
    const body = JSON.stringify({ next: `https://rx.example/cb?token=${quoted}` }).replace(/\//g, '\\/');
    expect(leaksIn(redactSecrets(body, SECRETS), TOKEN)).toEqual([]);
    const twice = encodeURIComponent(encodeURIComponent(TOKEN));
    expect(redactSecrets(`t=${twice}`, SECRETS)).toBe(`t=${REDACTED}`);
  });

  it('LEAK-1 (W7): an excerpt cut inside an encoded secret loses that tail (raw, percent-encoded, JSON \\u escape, hex)', () => {
    expect(redactSecrets(`{"e":"${TOKEN.slice(0, 5)}`, SECRETS)).toBe(`{"e":"${REDACTED}`);
    expect(redactSecrets(`{"e":"${encodeURIComponent(TOKEN).slice(0, 6)}`, SECRETS)).toBe(`{"e":"${REDACTED}`);
    expect(redactSecrets(`{"e":"sk\\u002Bli\\u00`, SECRETS)).toBe(`{"e":"${REDACTED}`);
    expect(redactSecrets(`{"e":"${Buffer.from(TOKEN).toString('hex').slice(0, 9)}`, SECRETS)).toBe(`{"e":"${REDACTED}`);
  });

  it('LEAK-1 (W7): text without a secret is unchanged; no secret, nothing to do', () => {
    const body = '{"error":"unknown customer","hint":"see https:\\/\\/docs.example\\/e%20rrors &amp; more","hex":"deadbeef"}';
    expect(redactSecrets(body, SECRETS)).toBe(body);
    expect(redactSecrets('anything', [])).toBe('anything');
  });

  it('LEAK-1 (W7): a value too short to tell apart from other text withholds a text that shows it, with a marker saying why', () => {
    expect(redactSecrets('{"region":"eu1","ok":false}', ['eu1'])).toBe(WITHHELD_SHORT_SECRET);
    expect(WITHHELD_SHORT_SECRET).toMatch(/^\[withheld: .*shorter than 4 bytes/);
    // Not shown anywhere: kept as it is.
    expect(redactSecrets('{"ok":false}', ['eu1'])).toBe('{"ok":false}');
  });

  it('LEAK-1 (W7): deep redaction reaches keys and nested strings and keeps other values', () => {
    const value = { reason: `echo ${TOKEN}`, evidence: { [TOKEN]: [Buffer.from(TOKEN).toString('hex'), 3, null, true] } };
    const out = redactSecretsDeep(value, SECRETS);
    expect(leaksIn(JSON.stringify(out), TOKEN)).toEqual([]);
    expect(out).toEqual({ reason: `echo ${REDACTED}`, evidence: { [REDACTED]: [REDACTED, 3, null, true] } });
  });
});

describe('LEAK-1 (W7): the string-only views (searched first) are the mapped views', () => {
  const corpus = [
    'plain',
    '{"a":"x\\/y\\u003d\\n\\\\","b":"%2Bq%2fz+w%252B","c":"&plus;&#43;&#x2B;&amp;&notanentity;"}',
    'é€😀\ud800 %C3%A9 %E2%82%AC',
    'cut json \\u00',
    'cut json \\',
    'escaped backslash at end \\\\',
    'cut pct %2',
    'cut pct %',
    'cut entity &plu',
    'cut entity &#x2',
    '&amp;%2B\\u0026',
    '\\u0025\\u0032\\u0042 then &#37;2B',
  ];
  for (const text of corpus) {
    it(`LEAK-1 (W7): ${JSON.stringify(text).slice(0, 50)}`, () => {
      for (const spaces of [false, true]) {
        const { mapped, strings } = viewTextsForTest(text, spaces);
        expect(strings).toEqual(mapped);
      }
    });
  }
});
