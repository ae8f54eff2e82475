/**
 * Q5/Q7: what a `delivery: 'qstash'` destination may look like.
 *
 * `@upstash/qstash` pastes the destination raw into `<baseUrl>/v2/publish/<destination>` and
 * parses the result as one URL, so anything in the destination that URL parsing acts on steers
 * the request hookrelay makes to QStash with the operator's token: dot segments (raw or
 * percent-encoded) climb out of `/v2/publish/` to other API routes, a `?query` becomes the API
 * request's query and a `#fragment` is dropped. A destination is therefore refused unless it is
 * an http(s) URL (or an APP_URL-relative path) with:
 * - no control characters (the URL parser deletes tabs and newlines, which could join `.` `.`);
 * - no userinfo (`user:pass@`, or a bare `@`);
 * - no query and no fragment, raw or percent-encoded (QStash has no encoding that keeps a
 *   destination query apart from its own API parameters, so hookrelay does not guess one);
 * - no path segment that is `.` or `..` once percent-decoded, however many times it was encoded,
 *   with `/` and `\` (raw or encoded) both counted as separators.
 * Before publishing, the destination is canonicalised (`new URL(d).href`) and the URL the SDK
 * will build is computed and compared: its path must be exactly `<base path>/v2/publish/<destination>`.
 */

/** The SDK's default API base (`@upstash/qstash` 2.12.0). */
const QSTASH_DEFAULT_BASE_URL = 'https://qstash.upstash.io';
/** Percent-decoding rounds tried before an encoding is called too deep to check. */
const MAX_DECODE_ROUNDS = 8;
const FIRST_PRINTABLE = 0x20;
const DEL = 0x7f;

/** C0 controls and DEL: the URL parser strips or deletes some of them (tab, LF, CR). */
function hasControlCharacter(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < FIRST_PRINTABLE || c === DEL) return true;
  }
  return false;
}
const SCHEME_AND_AUTHORITY = /^[a-zA-Z][a-zA-Z0-9+.-]*:\/\/([^/]*)/;
const PERCENT_ESCAPE = /%([0-9a-fA-F]{2})/g;
const HAS_PERCENT_ESCAPE = /%[0-9a-fA-F]{2}/;

/** Decodes `%XX` escapes byte-wise until nothing changes; undefined when still changing after the bound. */
function fullyDecoded(text: string): string | undefined {
  let current = text;
  for (let round = 0; round < MAX_DECODE_ROUNDS; round++) {
    const next = current.replace(PERCENT_ESCAPE, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)));
    if (next === current) return current;
    current = next;
  }
  return HAS_PERCENT_ESCAPE.test(current) ? undefined : current;
}

/**
 * The problem with `url` as a QStash destination (absolute, or a path resolved against APP_URL),
 * or undefined. Messages name the rule, never the URL (a URL may carry a secret path).
 */
export function qstashDestinationProblem(url: string): string | undefined {
  if (hasControlCharacter(url)) return 'a qstash destination must not contain control characters';
  if (url.includes('?') || url.includes('#')) return 'a qstash destination must not have a query or a fragment';
  let path = url;
  if (!url.startsWith('/')) {
    const match = SCHEME_AND_AUTHORITY.exec(url);
    if (!match) return 'a qstash destination must be an http(s) URL or a path starting with "/"';
    if ((match[1] ?? '').includes('@')) return 'a qstash destination must not contain userinfo';
    path = url.slice(match[0].length);
  }
  const decoded = fullyDecoded(path);
  if (decoded === undefined) return 'a qstash destination must not be percent-encoded this many times';
  if (hasControlCharacter(decoded)) return 'a qstash destination must not contain control characters';
  if (decoded.includes('?') || decoded.includes('#')) return 'a qstash destination must not have a query or a fragment (percent-encoded)';
  if (decoded.split(/[/\\]/).some((segment) => segment === '.' || segment === '..')) {
    return 'a qstash destination must not contain dot segments ("." or "..", raw or percent-encoded)';
  }
  return undefined;
}

/** The API base as the SDK keeps it: one trailing `/` stripped, twice over (credentials check, then HttpClient). */
function sdkBase(baseUrl: string): string {
  return baseUrl.replace(/\/$/, '').replace(/\/$/, '');
}

/** The URL `@upstash/qstash` 2.12.0 builds for `publish({ url: destination })`. */
export function sdkPublishUrl(baseUrl: string, destination: string): URL {
  return new URL([sdkBase(baseUrl), 'v2', 'publish', destination].join('/'));
}

export type CanonicalDestination = { ok: true; destination: string } | { ok: false; problem: string };

/**
 * The destination to hand the SDK (canonical: what URL parsing would make of it anyway), after
 * checking it and checking that the SDK's request lands exactly on `<base path>/v2/publish/<destination>`
 * of the configured base, with no query and no fragment.
 */
export function canonicalQStashDestination(url: string, baseUrl: string = QSTASH_DEFAULT_BASE_URL): CanonicalDestination {
  const problem = qstashDestinationProblem(url);
  if (problem) return { ok: false, problem };
  let canonical: URL;
  let base: URL;
  let built: URL;
  try {
    canonical = new URL(url);
    base = new URL(sdkBase(baseUrl));
    built = sdkPublishUrl(baseUrl, canonical.href);
  } catch {
    return { ok: false, problem: 'a qstash destination must be an absolute http(s) URL' };
  }
  if (canonical.protocol !== 'http:' && canonical.protocol !== 'https:') return { ok: false, problem: 'a qstash destination must use http or https' };
  if (canonical.username !== '' || canonical.password !== '') return { ok: false, problem: 'a qstash destination must not contain userinfo' };
  const basePath = base.pathname === '/' ? '' : base.pathname;
  const exact = built.origin === base.origin && built.pathname === `${basePath}/v2/publish/${canonical.href}` && built.search === '' && built.hash === '';
  if (!exact) return { ok: false, problem: 'a qstash destination must be published to exactly /v2/publish/<destination>' };
  return { ok: true, destination: canonical.href };
}
