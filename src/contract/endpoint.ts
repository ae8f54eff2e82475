/**
 * Endpoint isolation (§ endpoints in the README): which receiver a webhook goes to, the states a
 * receiver's circuit breaker can be in, and the port the decision path asks before it sends.
 * Pure: the Redis side lives in isolation/endpointGate.ts.
 */

/** Breaker states, plus `disabled` (operator or auto-disable; nothing is attempted). */
export const ENDPOINT_STATES = ['closed', 'open', 'half_open', 'disabled'] as const;
export type EndpointState = (typeof ENDPOINT_STATES)[number];

/** Longest endpoint key a hook config may name. */
export const MAX_ENDPOINT_KEY_LENGTH = 200;

/**
 * SEC-H6: the endpoint a webhook delivers to is named by its own URL, never by free text: the
 * URL's origin (scheme, host, port as the WHATWG URL parser normalises them: lower-cased host,
 * punycode, default port dropped, no credentials) + path — never its query, so a token in `?key=`
 * is not part of the key. `webhook.endpoint` is a label inside that origin: the key is then
 * `<origin>#<label>` (one breaker for several paths of one receiver), so no config can name the
 * breaker, cap, rate limit or disable state of another origin. The URL is the stored, unresolved
 * one: a relative URL's origin is `app:` (it resolves against APP_URL, the operator's own).
 * Every key is computed here: the producer, the worker and the decision guard all call this.
 */
export function endpointKey(webhook: { url: string; endpoint?: string | undefined }): string {
  const { origin, path } = urlScope(webhook.url);
  return webhook.endpoint === undefined ? `${origin}${path}` : `${origin}#${webhook.endpoint}`;
}

/** The origin and path a key is made of; `#` never occurs in either (the fragment is cut off). */
function urlScope(url: string): { origin: string; path: string } {
  if (url.startsWith('/')) return { origin: 'app:', path: stripQuery(url) };
  try {
    const parsed = new URL(url);
    return { origin: parsed.origin, path: parsed.pathname };
  } catch {
    // The URL schema refuses these before a key is needed; such text is no origin another hook can name.
    return { origin: stripQuery(url), path: '' };
  }
}

function stripQuery(url: string): string {
  const cut = url.search(/[?#]/);
  return cut === -1 ? url : url.slice(0, cut);
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
};
