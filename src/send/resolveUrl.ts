/**
 * W1 / Q5: where a webhook is sent (port 0 refused: it never names a real listener). An absolute URL stays as written (untrusted: SSRF-guarded);
 * a path `/…` is appended to the application base URL (APP_URL / appUrl), which the operator
 * configured, so it is trusted. A relative URL with no base is a configuration error.
 */
import { DeliveryConfigError } from '../contract/errors.ts';

export type ResolvedUrl = { url: string; trusted: boolean };

export function resolveWebhookUrl(url: string, appUrl: string | undefined): ResolvedUrl {
  if (!url.startsWith('/')) {
    if (!isHttpUrl(url)) throw new DeliveryConfigError('webhook url must be an http(s) URL or a path starting with "/"');
    if (new URL(url).port === '0') throw new DeliveryConfigError('webhook url must not use port 0');
    return { url, trusted: false };
  }
  if (url.startsWith('//')) throw new DeliveryConfigError('a relative webhook url must start with exactly one "/"');
  if (appUrl === undefined || appUrl.trim() === '') {
    throw new DeliveryConfigError('webhook url is relative but no application base URL (APP_URL / appUrl) is configured');
  }
  if (!isHttpUrl(appUrl)) throw new DeliveryConfigError('APP_URL / appUrl must be an absolute http(s) URL');
  const base = new URL(appUrl);
  if (base.port === '0') throw new DeliveryConfigError('APP_URL / appUrl must not use port 0');
  // The base path is kept: APP_URL=https://app.example/api + /hooks → https://app.example/api/hooks
  const joined = new URL(`${base.origin}${base.pathname.replace(/\/+$/, '')}${url}`);
  return { url: joined.toString(), trusted: true };
}

/** How many (url, appUrl) answers resolveWebhookUrlCached keeps (the set is dropped when full). */
const RESOLVED_URL_CACHE_LIMIT = 512;
const resolvedUrls = new Map<string, Readonly<ResolvedUrl>>();

/**
 * resolveWebhookUrl, remembered: it is pure in (url, appUrl), and a `new URL()` per request was
 * the delivery and decision paths' largest single cost. Errors are not remembered (they throw
 * again). The answer is frozen: callers share it.
 */
export function resolveWebhookUrlCached(url: string, appUrl: string | undefined): Readonly<ResolvedUrl> {
  const key = appUrl === undefined ? url : `${url}\n${appUrl}`;
  let resolved = resolvedUrls.get(key);
  if (resolved === undefined) {
    resolved = Object.freeze(resolveWebhookUrl(url, appUrl));
    if (resolvedUrls.size >= RESOLVED_URL_CACHE_LIMIT) resolvedUrls.clear();
    resolvedUrls.set(key, resolved);
  }
  return resolved;
}

function isHttpUrl(value: string): boolean {
  try {
    const parsed = new URL(value);
    return (parsed.protocol === 'http:' || parsed.protocol === 'https:') && parsed.username === '' && parsed.password === '';
  } catch {
    return false;
  }
}
