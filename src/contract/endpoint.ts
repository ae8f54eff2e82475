import { DEFAULT_TENANT } from './tenant.ts';
import { DEFAULT_WEBHOOK_TIMEOUT_SECONDS } from './defaults.ts';

/**
 * Endpoint isolation (N2; docs/delivery.md, "Endpoint isolation"): which receiver a webhook goes to, the states a
 * receiver's circuit breaker can be in, and the port the decision path asks before it sends.
 * Pure: the Redis side lives in isolation/endpointGate.ts.
 */

/** Breaker states, plus `disabled` (operator or auto-disable; nothing is attempted). */
export const ENDPOINT_STATES = ['closed', 'open', 'half_open', 'disabled'] as const;
export type EndpointState = (typeof ENDPOINT_STATES)[number];

/** Longest endpoint key a hook config may name. */
export const MAX_ENDPOINT_KEY_LENGTH = 200;

/**
 * SEC-H6 + N4: the endpoint a webhook delivers to is named by its own URL, never by free text,
 * in one canonical form (`canonicalEndpoint`), so that every spelling of one receiver is one
 * endpoint: one breaker, one cap, one disable. `webhook.endpoint` is a label inside that origin:
 * the key is then `<origin>#<label>` (one breaker for several paths of one receiver), so no
 * config can name the breaker, cap, rate limit or disable state of another origin. The URL is the
 * stored, unresolved one: a relative URL's origin is `app:` (it resolves against APP_URL, the
 * operator's own). Every key is computed here: the producer, the worker, the decision guard, the
 * CLI and the console all call this.
 */
export function endpointKey(webhook: { url: string; endpoint?: string | undefined }): string {
  const { origin, path } = urlScope(webhook.url);
  return webhook.endpoint === undefined ? `${origin}${path}` : `${origin}#${webhook.endpoint}`;
}

/**
 * N4: the canonical endpoint an operator's text names (a URL, a relative `/path`, or a key as
 * `endpoints list` prints it, `<origin>#<label>` included): what `endpoints disable|limit|show`
 * and the console match on.
 */
export function canonicalEndpoint(text: string): string {
  const hash = text.indexOf('#');
  if (hash !== -1) {
    const label = text.slice(hash + 1);
    const { origin } = urlScope(text.slice(0, hash));
    return label === '' ? endpointKey({ url: text.slice(0, hash) }) : `${origin}#${label}`;
  }
  return endpointKey({ url: text });
}

/**
 * N4, rule by rule (docs/delivery.md says why each one):
 * - WHATWG parse: scheme and host lower-cased, punycode, default port dropped, IPv4 in any
 *   notation (`2130706433`, `0x7f.1`) written dotted, credentials, query and fragment not part of it;
 * - loopback is one host (`localhost`, `127.0.0.0/8`, `[::1]`, `0.0.0.0`, `[::]`, `[::ffff:7f00:1]` → `127.0.0.1`) and
 *   an IPv4-mapped IPv6 address is its IPv4 address; a trailing dot of a name is dropped;
 * - the path: `;params` cut from each segment, percent-encoded unreserved characters decoded,
 *   lower-cased, dot segments resolved, empty segments (duplicate and trailing slashes) dropped.
 */
function urlScope(url: string): { origin: string; path: string } {
  if (url.startsWith('/')) return { origin: 'app:', path: canonicalPath(stripQuery(url)) };
  try {
    const parsed = new URL(url);
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return { origin: parsed.origin, path: parsed.pathname };
    const port = parsed.port === '' ? '' : `:${parsed.port}`;
    return { origin: `${parsed.protocol}//${canonicalHost(parsed.hostname)}${port}`, path: canonicalPath(parsed.pathname) };
  } catch {
    // The URL schema refuses these before a key is needed; such text is no origin another hook can name.
    return { origin: stripQuery(url), path: '' };
  }
}

/** The one name of a host: loopback → 127.0.0.1, an IPv4-mapped IPv6 address → its IPv4 address. */
function canonicalHost(hostname: string): string {
  let host = hostname.toLowerCase();
  if (host.endsWith('.') && host.length > 1) host = host.slice(0, -1);
  // Loopback: every name and address a connection from this machine reaches the local host by
  // (127.0.0.0/8, ::1, and the unspecified 0.0.0.0 / :: that Linux connects to loopback).
  if (host === 'localhost' || host.endsWith('.localhost') || host === '[::1]' || host === '[::]' || host === '0.0.0.0') return '127.0.0.1';
  if (/^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host)) return '127.0.0.1';
  if (host.startsWith('[') && host.endsWith(']')) {
    const mapped = /^\[::ffff:(?:([0-9a-f]{1,4}):([0-9a-f]{1,4})|(\d+\.\d+\.\d+\.\d+))\]$/.exec(host);
    if (mapped) {
      if (mapped[3] !== undefined) return canonicalHost(mapped[3]);
      const hi = Number.parseInt(mapped[1]!, 16);
      const lo = Number.parseInt(mapped[2]!, 16);
      return canonicalHost([hi >> 8, hi & 255, lo >> 8, lo & 255].join('.'));
    }
  }
  return host;
}

/** `%XX` of an unreserved character (RFC 3986 section 2.3) is that character; any other escape stays (lower-cased with the path). */
function decodeUnreserved(segment: string): string {
  return segment.replace(/%([0-9a-fA-F]{2})/g, (encoded, hex: string) => {
    const ch = String.fromCharCode(Number.parseInt(hex, 16));
    return /[A-Za-z0-9\-._~]/.test(ch) ? ch : encoded;
  });
}

function canonicalPath(pathname: string): string {
  const out: string[] = [];
  for (const raw of pathname.split('/')) {
    const cut = raw.indexOf(';');
    const segment = decodeUnreserved(cut === -1 ? raw : raw.slice(0, cut)).toLowerCase();
    if (segment === '' || segment === '.') continue;
    if (segment === '..') out.pop();
    else out.push(segment);
  }
  return `/${out.join('/')}`;
}

function stripQuery(url: string): string {
  const cut = url.search(/[?#]/);
  return cut === -1 ? url : url.slice(0, cut);
}

/** N2: operator state (`endpoints disable|limit` without `--tenant`) that applies to every tenant. */
export const ALL_TENANTS = '*';
const SCOPE_TENANT = /^(?:\*|[A-Za-z0-9._:-]{1,128})$/;

/**
 * N2: the key of one tenant's state for one endpoint: `<tenant>|<endpoint>`, the default
 * tenant's the bare endpoint key (the state it had before tenants, kept). Unambiguous: an
 * endpoint key starts with a scheme, so `/` comes before any `|` in it, and a tenant has no `/`.
 */
export function scopedEndpointKey(tenant: string, endpoint: string): string {
  return tenant === DEFAULT_TENANT ? endpoint : `${tenant}|${endpoint}`;
}

/** The tenant (`*` = all) and endpoint of a scoped key. */
export function splitScopedKey(key: string): { tenant: string; endpoint: string } {
  const bar = key.indexOf('|');
  if (bar > 0) {
    const tenant = key.slice(0, bar);
    if (SCOPE_TENANT.test(tenant)) return { tenant, endpoint: key.slice(bar + 1) };
  }
  return { tenant: DEFAULT_TENANT, endpoint: key };
}

/**
 * What a decision webhook asks before it sends (and tells after): an open or disabled endpoint
 * yields an immediate control error handled by the control's onError — never an allow, never a
 * wait. `isOpen` is synchronous (a cached view), so the decision hot path gains no round trip.
 */
export type EndpointGuard = {
  /** The endpoint's breaker is open (or half-open with a probe under way) or it is disabled. */
  isOpen(key: string): boolean;
  /** Feed one decision round trip's outcome to the shared breaker (fire and forget). */
  record(key: string, ok: boolean): void;
  /**
   * Which opening of the endpoint `isOpen` is answering about: a number that changes each time it
   * opens (or is disabled) again; undefined while closed. Lets a caller say something once per opening.
   */
  opening?(key: string): number | undefined;
  /** N3: the endpoint's timeout floor an operator set (`endpoints limit --timeout-floor`); undefined: the default. */
  floorMs?(key: string): number | undefined;
};

/** N3: the timeout floor of an endpoint no operator set one for: the default webhook timeout. */
export const DEFAULT_TIMEOUT_FLOOR_MS = DEFAULT_WEBHOOK_TIMEOUT_SECONDS * 1000;

/** One failed round trip, as far as the breaker needs to know it. */
export type EndpointFailure = {
  /** `network_error` (refused, reset, DNS, TLS), `timeout`, `http_error`, or a local class. */
  errorClass: string;
  httpStatus?: number | undefined;
  /** The timeout the caller gave this round trip (its webhook's). */
  timeoutMs: number;
  /** The endpoint's floor: DEFAULT_TIMEOUT_FLOOR_MS, or what an operator set (`endpoints limit --timeout-floor`). */
  floorMs: number;
};

/**
 * N3: does this failure show the receiver unhealthy for everyone? Connection refused or reset,
 * DNS and TLS failures (`network_error`), 5xx, 429 and 408, and a timeout when the caller waited at
 * least the endpoint's floor. Every other 4xx is an answer (the receiver is up and said no to
 * this caller), and a timeout shorter than the floor is the caller's own impatience: neither is
 * the endpoint's failure, so no caller can open a breaker by asking badly.
 */
export function countsAgainstEndpoint(failure: EndpointFailure): boolean {
  switch (failure.errorClass) {
    case 'network_error':
      return true;
    case 'timeout':
      return failure.timeoutMs >= failure.floorMs;
    case 'http_error': {
      const status = failure.httpStatus;
      if (status === undefined) return true;
      return status >= 500 || status === 429 || status === 408;
    }
    default:
      return false;
  }
}
