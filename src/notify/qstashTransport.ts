/**
 * Q7 / D7: publish one webhook delivery to QStash with the real `@upstash/qstash` client.
 *
 * One `publish` is exactly one HTTP request to QStash: the client's own network retry is off
 * (`retry: false`; it never retries HTTP statuses anyway), dev mode and telemetry are off, and
 * both `baseUrl` and `token` are always passed so the client never falls back to `QSTASH_*`
 * environment variables. Failures come back as values with a closed error class and, for HTTP
 * errors, the status — never the SDK's message, the remote body or the token.
 *
 * Wire facts this relies on (read from @upstash/qstash 2.12.0 `index.js`):
 * - `POST <baseUrl>/v2/publish/<destination>` with the destination pasted raw into the path;
 * - user headers not starting with `content-type` / `upstash-` are renamed `Upstash-Forward-<name>`
 *   by the SDK, `upstash-*` ones would pass through as raw control headers — so we prefix every
 *   header ourselves (except `Content-Type`) and a forwarded header can never act as a control
 *   header; hop-by-hop headers (`host`, `content-length`, `connection`, …) describe the publish
 *   hop, not the message, and are dropped;
 * - `deduplicationId` → `Upstash-Deduplication-Id`, `retries` → `Upstash-Retries` (`toFixed(0)`),
 *   `timeout: number` → `Upstash-Timeout: <n>s`, `callback` / `failureCallback` →
 *   `Upstash-Callback` / `Upstash-Failure-Callback`;
 * - non-2xx answers throw `QstashError` (or a 429 subclass) carrying `status`; a failed `fetch`
 *   throws its own error (a `TypeError`); the SDK accepts no `AbortSignal`, so the publish
 *   deadline is enforced by racing it (the abandoned request is left to finish on its own).
 */
import { Client, QstashError } from '@upstash/qstash';
import { canonicalQStashDestination } from '../contract/qstashDestination.ts';
import { startDeadline } from '../send/deadline.ts';
import type { QStashPublisher, QStashPublishRequest, QStashPublishResult } from '../send/types.ts';
import { withDefined } from '../util/withDefined.ts';
import { isObject } from '../util/isObject.ts';

export type { QStashPublisher, QStashPublishRequest, QStashPublishResult } from '../send/types.ts';

export type QStashPublisherOptions = {
  /** QStash base URL (`QSTASH_URL`). Default `https://qstash.upstash.io`. */
  url?: string;
  /** QStash token (`QSTASH_TOKEN`). Missing or blank: every publish is a `configuration` failure. */
  token?: string;
  /** Default `Upstash-Retries` when a request does not set one. Default 3 (SPEC Q7). */
  retries?: number;
  /** Deadline for the publish request itself (not the webhook). Default 10 000 ms. */
  publishTimeoutMs?: number;
};

export const DEFAULT_QSTASH_URL = 'https://qstash.upstash.io';
export const DEFAULT_QSTASH_RETRIES = 3;
export const DEFAULT_QSTASH_PUBLISH_TIMEOUT_MS = 10_000;
/** The real service rejects larger values; keep requests within the documented plan maxima. */
const MAX_QSTASH_RETRIES = 100;

const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** CR, LF, NUL and anything `Headers` cannot carry as a ByteString (the SDK would throw TypeError). */
const BAD_HEADER_VALUE = /[^\t\x20-\x7e\x80-\xff]/;
/** Headers that describe the publish hop, not the message: never forwarded. */
const HOP_BY_HOP = new Set(['host', 'content-length', 'connection', 'keep-alive', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'expect']);

const CONFIGURATION: QStashPublishResult = { ok: false, errorClass: 'configuration' };

export function createQStashPublisher(options: QStashPublisherOptions = {}): QStashPublisher {
  const token = options.token?.trim() ?? '';
  const baseUrl = normaliseBaseUrl(options.url);
  const defaultRetries = options.retries ?? DEFAULT_QSTASH_RETRIES;
  const publishTimeoutMs = options.publishTimeoutMs ?? DEFAULT_QSTASH_PUBLISH_TIMEOUT_MS;
  const configured = token !== '' && baseUrl !== undefined && isValidRetries(defaultRetries) && Number.isFinite(publishTimeoutMs) && publishTimeoutMs > 0;

  const client = configured ? new Client({ baseUrl, token, retry: false, enableTelemetry: false, devMode: false }) : undefined;

  return {
    async publish(req: QStashPublishRequest): Promise<QStashPublishResult> {
      if (client === undefined || baseUrl === undefined) return CONFIGURATION;
      const prepared = prepare(req, defaultRetries, baseUrl);
      if (prepared === undefined) return CONFIGURATION;

      const deadline = startDeadline(publishTimeoutMs, req.signal);
      if (deadline.cause() !== undefined) {
        deadline.dispose();
        // Cancelled before anything was sent. The result type has no `cancelled`; `timeout`
        // is the closest class (the caller decides whether a fallback still makes sense).
        return { ok: false, errorClass: 'timeout' };
      }
      const publishing = client.publish({
        url: prepared.destination,
        body: req.body,
        headers: prepared.headers,
        method: 'POST',
        deduplicationId: req.deduplicationId,
        retries: prepared.retries,
        timeout: prepared.timeoutSeconds,
        ...withDefined({ callback: req.callbackUrl, failureCallback: req.failureCallbackUrl }),
      });
      const aborted = new Promise<'aborted'>((resolve) => {
        deadline.signal.addEventListener('abort', () => resolve('aborted'), { once: true });
      });
      try {
        const outcome = await Promise.race([publishing, aborted]);
        if (outcome === 'aborted') {
          // The SDK cannot be aborted: let the request finish and swallow its result.
          publishing.catch(() => undefined);
          return { ok: false, errorClass: 'timeout' };
        }
        return toSuccess(outcome);
      } catch (error) {
        return classifyError(error);
      } finally {
        deadline.dispose();
      }
    },
  };
}

type Prepared = { destination: string; headers: Record<string, string>; retries: number; timeoutSeconds: number };

/** Validates the request (a config error is raised before any attempt, D7) and builds the headers. */
function prepare(req: QStashPublishRequest, defaultRetries: number, baseUrl: string): Prepared | undefined {
  // Q5/Q7: the request the SDK builds must land on exactly <base>/v2/publish/<destination>:
  // dot segments, a query, userinfo, … are refused; the canonical form is what is published.
  const destination = canonicalQStashDestination(req.destination, baseUrl);
  if (!destination.ok) return undefined;
  if (req.callbackUrl !== undefined && !isHttpUrl(req.callbackUrl)) return undefined;
  if (req.failureCallbackUrl !== undefined && !isHttpUrl(req.failureCallbackUrl)) return undefined;
  // QStash rejects ':' in deduplication ids with 400; it would never succeed on retry.
  if (req.deduplicationId.trim() === '' || req.deduplicationId.includes(':') || BAD_HEADER_VALUE.test(req.deduplicationId)) {
    return undefined;
  }
  const retries = req.retries ?? defaultRetries;
  if (!isValidRetries(retries)) return undefined;
  if (!Number.isFinite(req.timeoutMs) || req.timeoutMs <= 0) return undefined;

  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (!HEADER_NAME.test(name) || BAD_HEADER_VALUE.test(value)) return undefined;
    const lower = name.toLowerCase();
    if (HOP_BY_HOP.has(lower)) continue;
    if (lower === 'content-type') headers['Content-Type'] = value;
    else if (lower.startsWith('upstash-forward-')) headers[name] = value;
    else headers[`Upstash-Forward-${name}`] = value;
  }
  // `Upstash-Timeout` is sent as `${n}s` without rounding; whole seconds, rounded up, never 0.
  const timeoutSeconds = Math.max(1, Math.ceil(req.timeoutMs / 1000));
  return { destination: destination.destination, headers, retries, timeoutSeconds };
}

function toSuccess(response: unknown): QStashPublishResult {
  if (isObject(response)) {
    const { messageId, deduplicated } = response as { messageId?: unknown; deduplicated?: unknown };
    if (typeof messageId === 'string' && messageId !== '') {
      return { ok: true, messageId, deduplicated: deduplicated === true };
    }
  }
  // A 2xx that is not a publish answer: QStash spoke, but not the protocol we know.
  return { ok: false, errorClass: 'http_error' };
}

/** Maps an SDK/fetch failure to a closed class; nothing of the error's text survives. */
function classifyError(error: unknown): QStashPublishResult {
  if (error instanceof QstashError) {
    const status = (error as { status?: unknown }).status;
    return typeof status === 'number' && Number.isInteger(status)
      ? { ok: false, errorClass: 'http_error', httpStatus: status }
      : { ok: false, errorClass: 'http_error' };
  }
  // A 2xx with an empty or non-JSON body makes the SDK's `response.json()` throw SyntaxError.
  if (error instanceof SyntaxError) return { ok: false, errorClass: 'http_error' };
  // `fetch` failures (refused, reset, DNS, TLS) surface as TypeError("fetch failed", { cause }).
  return { ok: false, errorClass: 'network_error' };
}

function normaliseBaseUrl(url: string | undefined): string | undefined {
  const value = url?.trim() ?? '';
  if (value === '') return DEFAULT_QSTASH_URL;
  return isHttpUrl(value) ? value : undefined;
}

function isHttpUrl(value: string): boolean {
  try {
    const parsed = new URL(value);
    return parsed.protocol === 'http:' || parsed.protocol === 'https:';
  } catch {
    return false;
  }
}

function isValidRetries(value: number): boolean {
  return Number.isInteger(value) && value >= 0 && value <= MAX_QSTASH_RETRIES;
}
