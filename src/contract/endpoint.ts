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
 * The endpoint a webhook delivers to: the key its config names (`webhook.endpoint`), else the
 * URL's origin + path — never its query, so a token in `?key=` is not part of the key. The URL is
 * the stored, unresolved one (relative URLs keep their path: they resolve against APP_URL).
 */
export function endpointKey(webhook: { url: string; endpoint?: string | undefined }): string {
  if (webhook.endpoint !== undefined) return webhook.endpoint;
  const url = webhook.url;
  if (url.startsWith('/')) return `app:${stripQuery(url)}`;
  try {
    const parsed = new URL(url);
    return `${parsed.origin}${parsed.pathname}`;
  } catch {
    return stripQuery(url);
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
