import { describe, expect, it } from 'vitest';
import { ENDPOINT_STATES, endpointKey, MAX_ENDPOINT_KEY_LENGTH } from '../../../src/contract/endpoint.ts';
import { WebhookConfigSchema } from '../../../src/contract/webhook.ts';
import type { NotificationFailure, NotificationResult, NotificationSuccess } from '../../../src/notify/deliver.ts';
import { breakerOutcome } from '../../../src/isolation/endpointIsolation.ts';
import { accepts, paths, rejects } from './helpers.ts';

const URL_OK = 'https://hooks.example.com/receive';
const wh = (extra: Record<string, unknown> = {}) => ({ url: URL_OK, ...extra });

describe('endpointKey: which endpoint a webhook delivers to', () => {
  it.each([
    ['https://hooks.example.com/receive', 'https://hooks.example.com/receive'],
    ['https://hooks.example.com/receive?token=secret', 'https://hooks.example.com/receive'],
    ['https://hooks.example.com/receive#frag', 'https://hooks.example.com/receive'],
    ['https://hooks.example.com/receive?token=secret&x=1#frag', 'https://hooks.example.com/receive'],
    ['http://hooks.example.com:8080/a/b', 'http://hooks.example.com:8080/a/b'],
    ['https://hooks.example.com', 'https://hooks.example.com/'],
    // N4: the path is lower-cased too (one receiver's /Path and /path are one endpoint).
    ['HTTPS://HOOKS.EXAMPLE.COM:443/Path', 'https://hooks.example.com/path'],
    ['https://[2001:db8::1]/x?y=1', 'https://[2001:db8::1]/x'],
  ])('an absolute URL %j keys by origin + path: %j', (url, key) => {
    expect(endpointKey({ url })).toBe(key);
  });

  it('two URLs that differ only in their query or fragment share one endpoint', () => {
    expect(endpointKey({ url: `${URL_OK}?a=1` })).toBe(endpointKey({ url: `${URL_OK}?b=2#c` }));
    expect(endpointKey({ url: `${URL_OK}?a=1` })).toBe(endpointKey({ url: URL_OK }));
  });

  it('different paths on one origin are different endpoints', () => {
    expect(endpointKey({ url: 'https://hooks.example.com/a' })).not.toBe(endpointKey({ url: 'https://hooks.example.com/b' }));
  });

  it('the query never leaks into the key (a token in ?key= is not part of it)', () => {
    expect(endpointKey({ url: 'https://hooks.example.com/r?key=sk_live_123' })).not.toContain('sk_live_123');
    expect(endpointKey({ url: '/api/hooks?key=sk_live_123' })).not.toContain('sk_live_123');
  });

  it('SEC-T1 (SEC-H6): webhook.endpoint is a label inside the URL origin: <origin>#<label>', () => {
    expect(endpointKey({ url: URL_OK, endpoint: 'billing-receiver' })).toBe('https://hooks.example.com#billing-receiver');
    expect(endpointKey({ url: 'https://hooks.example.com/other?x=1', endpoint: 'billing-receiver' })).toBe('https://hooks.example.com#billing-receiver');
    expect(endpointKey({ url: '/api/hooks?x=1', endpoint: 'app-hooks' })).toBe('app:#app-hooks');
  });

  it.each([
    ['https://victim.example/policy'],
    ['https://victim.example/policy?q=1'],
    ['https://VICTIM.example:443/policy'],
    ['app:/hooks'],
    ['victim.example'],
    ['https://victim.example#label'],
  ])('SEC-T1 (SEC-H6): an endpoint %j can never name the state of another origin', (endpoint) => {
    const victims = [
      endpointKey({ url: 'https://victim.example/policy' }),
      endpointKey({ url: 'https://victim.example/policy', endpoint: 'label' }),
      endpointKey({ url: '/hooks' }),
    ];
    const key = endpointKey({ url: 'https://attacker.example/x', endpoint });
    expect(key.startsWith('https://attacker.example#')).toBe(true);
    expect(victims).not.toContain(key);
  });

  it('SEC-T1 (SEC-H6): the origin is normalised (case, default port, credentials) so one receiver is one key', () => {
    expect(endpointKey({ url: 'HTTPS://Hooks.Example.COM:443/receive', endpoint: 'l' })).toBe('https://hooks.example.com#l');
    expect(endpointKey({ url: 'http://hooks.example.com:80/receive', endpoint: 'l' })).toBe('http://hooks.example.com#l');
    expect(endpointKey({ url: 'https://hooks.example.com:8443/receive', endpoint: 'l' })).toBe('https://hooks.example.com:8443#l');
    expect(endpointKey({ url: 'https://bücher.example/receive' })).toBe('https://xn--bcher-kva.example/receive');
  });

  it('an endpoint given as undefined falls back to the URL', () => {
    expect(endpointKey({ url: `${URL_OK}?x=1`, endpoint: undefined })).toBe(URL_OK);
  });

  it.each([
    ['/api/hooks', 'app:/api/hooks'],
    ['/api/hooks?x=1', 'app:/api/hooks'],
    ['/api/hooks#frag', 'app:/api/hooks'],
    ['/api/hooks?x=1#frag', 'app:/api/hooks'],
    ['/', 'app:/'],
  ])('a relative URL %j keys as %j (it resolves against APP_URL later)', (url, key) => {
    expect(endpointKey({ url })).toBe(key);
  });

  it('a string that is not a URL keeps its text before any ? or #', () => {
    expect(endpointKey({ url: 'not a url?x=1' })).toBe('not a url');
    expect(endpointKey({ url: 'plain' })).toBe('plain');
  });

  it('the endpoint states are closed, open, half_open and disabled; keys are at most 200 characters', () => {
    expect([...ENDPOINT_STATES]).toEqual(['closed', 'open', 'half_open', 'disabled']);
    expect(MAX_ENDPOINT_KEY_LENGTH).toBe(200);
  });
});

describe('breakerOutcome: what an attempt tells the circuit breaker', () => {
  const success: NotificationSuccess = { ok: true, transport: 'fetch', httpStatus: 200, fellBack: false, durationMs: 3 };
  const failure = (errorClass: string): NotificationFailure =>
    ({ ok: false, errorClass, permanent: false, critical: false, transport: 'fetch', fellBack: false, durationMs: 3 }) as NotificationFailure;

  it('a success → ok (also via QStash)', () => {
    expect(breakerOutcome(success)).toBe('ok');
    expect(breakerOutcome({ ...success, transport: 'qstash', messageId: 'msg_1', httpStatus: 201 })).toBe('ok');
  });

  it.each(['timeout', 'network_error', 'http_error'])('a %s failure is the endpoint’s → fail', (errorClass) => {
    expect(breakerOutcome(failure(errorClass))).toBe('fail');
  });

  it('TEN-3 (N3): an answer such as 401, 404 or 422 is not the endpoint’s failure → none; 5xx, 429 and 408 are → fail', () => {
    for (const httpStatus of [401, 404, 422]) expect(breakerOutcome({ ...failure('http_error'), httpStatus, permanent: true })).toBe('none');
    for (const httpStatus of [500, 503, 429, 408]) expect(breakerOutcome({ ...failure('http_error'), httpStatus })).toBe('fail');
  });

  it('TEN-1c (N3): a timeout counts only when the caller waited at least the endpoint’s floor', () => {
    expect(breakerOutcome(failure('timeout'), 1, 30_000)).toBe('none');
    expect(breakerOutcome(failure('timeout'), 30_000, 30_000)).toBe('fail');
    expect(breakerOutcome(failure('timeout'), 500, 200)).toBe('fail'); // an operator's lower floor
  });

  it.each(['configuration', 'cancelled', 'ssrf_blocked', 'payload_too_large'])('a %s failure is a local problem → none', (errorClass) => {
    expect(breakerOutcome(failure(errorClass))).toBe('none');
  });

  it("an unexpected error of hookrelay's own (local: true, recorded as network_error) is not the endpoint's → none", () => {
    expect(breakerOutcome({ ...failure('network_error'), local: true })).toBe('none');
    expect(breakerOutcome(failure('network_error'))).toBe('fail');
  });

  it('no result at all → none', () => {
    expect(breakerOutcome(undefined as NotificationResult | undefined)).toBe('none');
  });
});

describe('webhook config: endpoint and rateLimit fields', () => {
  it('both are optional and stay absent when not given', () => {
    const parsed = accepts(WebhookConfigSchema, wh());
    expect('endpoint' in parsed).toBe(false);
    expect('rateLimit' in parsed).toBe(false);
  });

  it.each(['billing', 'https://hooks.example.com/receive', 'tenant:42/orders', '!~', 'x'.repeat(MAX_ENDPOINT_KEY_LENGTH)])(
    'endpoint %j (printable ASCII, 1–200 characters) is accepted as given',
    (endpoint) => {
      expect(accepts(WebhookConfigSchema, wh({ endpoint })).endpoint).toBe(endpoint);
    },
  );

  it.each([
    ['empty', ''],
    ['too long (201 characters)', 'x'.repeat(MAX_ENDPOINT_KEY_LENGTH + 1)],
    ['with a space', 'my endpoint'],
    ['with a tab', 'a\tb'],
    ['with a newline', 'a\nb'],
    ['non-ASCII', 'café'],
    ['a number', 42],
    ['null', null],
  ])('endpoint %s is rejected naming endpoint', (_label, endpoint) => {
    expect(new Set(paths(rejects(WebhookConfigSchema, wh({ endpoint }))))).toEqual(new Set(['endpoint']));
  });

  it('the endpoint length message names the limit', () => {
    const issues = rejects(WebhookConfigSchema, wh({ endpoint: 'x'.repeat(MAX_ENDPOINT_KEY_LENGTH + 1) }));
    expect(issues[0]?.message).toContain('200');
  });

  it.each([0.1, 0.5, 1, 5, 2.5, 100_000])('rateLimit %d per second is accepted as given', (rateLimit) => {
    expect(accepts(WebhookConfigSchema, wh({ rateLimit })).rateLimit).toBe(rateLimit);
  });

  it.each([
    ['zero', 0],
    ['negative', -1],
    ['above 100000', 100_001],
    ['Infinity', Number.POSITIVE_INFINITY],
    ['NaN', Number.NaN],
    ['a numeric string', '5'],
    ['null', null],
  ])('rateLimit %s is rejected naming rateLimit', (_label, rateLimit) => {
    expect(new Set(paths(rejects(WebhookConfigSchema, wh({ rateLimit }))))).toEqual(new Set(['rateLimit']));
  });

  it('endpoint and rateLimit together are accepted, also on a control webhook', () => {
    expect(accepts(WebhookConfigSchema, wh({ endpoint: 'ctl', rateLimit: 3, responseHandling: 'toolCall' }))).toMatchObject({
      endpoint: 'ctl',
      rateLimit: 3,
      responseHandling: 'toolCall',
    });
  });

  it('a bad endpoint and a bad rateLimit are each named', () => {
    expect(new Set(paths(rejects(WebhookConfigSchema, wh({ endpoint: '', rateLimit: 0 }))))).toEqual(new Set(['endpoint', 'rateLimit']));
  });
});
