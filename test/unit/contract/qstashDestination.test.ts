/**
 * SEC-H1 (issue 24): a `delivery: 'qstash'` destination must stay one destination inside
 * `/v2/publish/` of the QStash API. The SDK builds `new URL(base + '/v2/publish/' + destination)`,
 * so dot segments (raw or percent-encoded), a query or a fragment in the destination would steer
 * the request that carries the operator's QSTASH_TOKEN.
 */
import { describe, expect, it } from 'vitest';
import { HookDispatcher } from '../../../src/dispatch/hookDispatcher.ts';
import { HookConfigError } from '../../../src/contract/errors.ts';
import { canonicalQStashDestination, qstashDestinationProblem, sdkPublishUrl } from '../../../src/contract/qstashDestination.ts';
import { parseHookBatch, parseSerializedHooks } from '../../../src/contract/validate.ts';
import { WebhookConfigSchema } from '../../../src/contract/webhook.ts';
import { silentLogger } from '../../../src/observability/logger.ts';
import { accepts, hookConfigError, rejects } from './helpers.ts';

const PUBLIC = 'https://93.184.216.34';

/** The issue's reproductions and the encodings around them. */
const TRAVERSALS: readonly string[] = [
  `${PUBLIC}/x/../../../../../../v2/keys/rotate`,
  `${PUBLIC}/x/%2e%2e/%2e%2e/%2e%2e/v2/keys/rotate`,
  `${PUBLIC}/x/%2E%2E/%2E%2E/v2/keys/rotate`,
  `${PUBLIC}/x/.%2e/.%2E/v2/keys/rotate`,
  `${PUBLIC}/x/%2e./%2E./v2/keys`,
  `${PUBLIC}/x/%252e%252e/%252e%252e/v2/keys/rotate`,
  `${PUBLIC}/x/%25252e%25252e/v2/keys`,
  `${PUBLIC}/x%2f..%2f..%2f..%2fv2%2fkeys%2frotate`,
  `${PUBLIC}/x/..%2F..%2Fv2/keys`,
  `${PUBLIC}/x/..%5c..%5cv2/keys`,
  `${PUBLIC}/x/./../../../v2/topics/victims/endpoints`,
  `${PUBLIC}/x/../../../v2/publish/http://169.254.169.254/latest/meta-data/`,
  `${PUBLIC}/x/..`,
  `${PUBLIC}/x/.`,
  `${PUBLIC}/%2e`,
];
const QUERY_OR_FRAGMENT: readonly string[] = [
  `${PUBLIC}/x?qstash_token=stolen`,
  `${PUBLIC}/x?`,
  `${PUBLIC}/x#frag`,
  `${PUBLIC}/x%3Fupstash=1`,
  `${PUBLIC}/x%23frag`,
  `${PUBLIC}/x%253Fq=1`,
];
const OTHER_BAD: readonly string[] = [
  'https://user:pass@93.184.216.34/x',
  'https://@93.184.216.34/x',
  `${PUBLIC}/x/.\t./v2/keys`,
  `${PUBLIC}/x/.\n./v2/keys`,
  'https://../v2/keys',
  'https://%2e%2e/v2/keys',
];
const GOOD: readonly string[] = [
  'https://hooks.example.com/receive',
  'https://hooks.example.com',
  'https://hooks.example.com/a..b/.well-known/x.y/...',
  'https://[2606:4700::1111]:8443/in',
  'http://127.0.0.1:3000/q',
  'https://hooks.example.com/a%20b/%2Dx',
];

const qstash = (url: string) => ({ url, delivery: 'qstash' as const });

describe('SEC-H1 QStash destination rules (contract)', () => {
  it.each(TRAVERSALS)('SEC-H1 QStash destination: dot segments refused (%s)', (url) => {
    expect(qstashDestinationProblem(url)).toMatch(/dot segments/);
    const issues = rejects(WebhookConfigSchema, qstash(url));
    expect(issues).toEqual([{ path: 'url', message: expect.stringMatching(/dot segments/) }]);
  });

  it.each(QUERY_OR_FRAGMENT)('SEC-H1 QStash destination: query and fragment refused, raw or encoded (%s)', (url) => {
    expect(rejects(WebhookConfigSchema, qstash(url))).toEqual([{ path: 'url', message: expect.stringMatching(/query or a fragment/) }]);
  });

  it.each(OTHER_BAD)('SEC-H1 QStash destination: userinfo, control characters and odd hosts refused (%j)', (url) => {
    expect(canonicalQStashDestination(url).ok).toBe(false);
    expect(rejects(WebhookConfigSchema, qstash(url)).map((i) => i.path)).toContain('url');
  });

  it('SEC-H1 QStash destination: a relative URL (resolved against APP_URL) is checked as a path', () => {
    expect(rejects(WebhookConfigSchema, qstash('/hooks/../../v2/keys'))).toEqual([{ path: 'url', message: expect.stringMatching(/dot segments/) }]);
    expect(rejects(WebhookConfigSchema, qstash('/hooks/x?y=1'))).toEqual([{ path: 'url', message: expect.stringMatching(/query/) }]);
    expect(accepts(WebhookConfigSchema, qstash('/hooks/x')).url).toBe('/hooks/x');
  });

  it.each(GOOD)('SEC-H1 QStash destination: an ordinary destination is accepted and lands on exactly /v2/publish/<destination> (%s)', (url) => {
    expect(accepts(WebhookConfigSchema, qstash(url)).url).toBe(url);
    const checked = canonicalQStashDestination(url);
    if (!checked.ok) throw new Error(checked.problem);
    const built = sdkPublishUrl('https://qstash.upstash.io', checked.destination);
    expect(built.pathname).toBe(`/v2/publish/${checked.destination}`);
    expect(built.search).toBe('');
  });

  it('SEC-H1 QStash destination: the exact-path check uses the configured base (a path prefix is kept)', () => {
    expect(canonicalQStashDestination('https://hooks.example.com/in', 'http://127.0.0.1:8080/prefix/')).toEqual({
      ok: true,
      destination: 'https://hooks.example.com/in',
    });
    expect(sdkPublishUrl('http://127.0.0.1:8080/prefix/', 'https://hooks.example.com/in').pathname).toBe('/prefix/v2/publish/https://hooks.example.com/in');
  });

  it('SEC-H1 QStash destination: the same URLs stay valid for fetch hooks (the rule is QStash-only)', () => {
    expect(accepts(WebhookConfigSchema, { url: `${PUBLIC}/x?y=1#f` }).delivery).toBe('fetch');
  });

  it('SEC-H1 QStash destination: register, parseHookBatch (createOperation) and parseSerializedHooks (producer, worker) all refuse with a HookConfigError naming webhook.url', () => {
    const hook = { id: 'steal', type: 'onComplete', webhook: qstash(`${PUBLIC}/x/../../../../v2/keys/rotate`) };
    const d = new HookDispatcher({ mode: 'local', env: {}, logger: silentLogger() });
    for (const error of [
      hookConfigError(() => d.register('op-h1', [hook as never])),
      hookConfigError(() => parseHookBatch([hook])),
      hookConfigError(() => parseSerializedHooks([hook])),
      hookConfigError(() => parseSerializedHooks([hook], { allowEnvironmentIds: true })),
    ]) {
      expect(error).toBeInstanceOf(HookConfigError);
      expect(error.hookId).toBe('steal');
      expect(error.issues).toEqual([{ path: 'webhook.url', message: expect.stringMatching(/dot segments/) }]);
      // Names the rule, never the URL.
      expect(error.message).not.toContain('v2/keys');
    }
  });
});
