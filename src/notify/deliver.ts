/**
 * The one function dispatch (local mode) and the worker both call to deliver a notification
 * webhook once: resolve URL and headers (configuration errors before any attempt, D7), sign
 * (Q1/Q6), then QStash with at most one fetch fallback (D7/Q7) or a direct fetch (W3/W4).
 */
import { canonicalQStashDestination, qstashDestinationProblem } from '../contract/qstashDestination.ts';
import { sanitizeStorableText } from '../contract/storableText.ts';
import type { TemplateEnvPattern } from '../contract/templateSources.ts';
import type { WebhookConfig } from '../contract/webhook.ts';
import { SEQUENCE_HEADER, timeoutMs } from '../contract/webhook.ts';
import type { Logger } from '../observability/logger.ts';
import { resolvedTemplateValues, sentHeadersAsConfigured } from '../send/attemptEvidence.ts';
import { DeliveryConfigError, SSRF_BLOCKED_HINT } from '../contract/errors.ts';
import type { FetchTransport, SendOutcome, SendRequest } from '../send/fetchTransport.ts';
import { resolveHeaderTemplates } from '../send/headerTemplates.ts';
import { type ResolvedUrl, resolveWebhookUrlCached } from '../send/resolveUrl.ts';
import { isPermanentStatus, parseRetryAfter } from './retryPolicy.ts';
import { redactSecrets } from '../send/secretRedaction.ts';
import { addSignatureHeaders } from '../send/signing.ts';
import type { QStashPublisher, QStashPublishRequest, QStashPublishResult, TransportErrorClass } from '../send/types.ts';

const MS_PER_SECOND = 1000;
/** Response excerpts are decoded with one decoder (U+FFFD for invalid UTF-8), not one per attempt. */
const UTF8 = new TextDecoder();

type NotificationErrorClass = TransportErrorClass | 'http_error';

export type DeliverNotificationInput = {
  /** Parsed webhook config (defaults applied). */
  webhook: WebhookConfig;
  /** For logs only. */
  hookId: string;
  /** The serialized payload (JSON), sent byte for byte and signed. */
  payload: string;
  /** `dlv_<ULID>`: the `webhook-id` of every attempt (Q1). */
  deliveryId: string;
  /** Replay generation: part of the QStash deduplication id (Q7). */
  generation: number;
  /** Environment that header templates resolve from (W2). */
  env: Record<string, string | undefined>;
  /** HOOKRELAY_TEMPLATE_ENV, parsed (W2); default `none` (no template resolves). */
  templateEnv?: TemplateEnvPattern;
  /** An environment hook built from `AGENT_HOOK_WEBHOOK_*` (E3): only it may read those variables (W2). */
  environmentHook?: boolean;
  appUrl?: string;
  /** Operator-trusted target (environment hooks): skips the SSRF guard. */
  trusted?: boolean;
  /** HOOKRELAY_SIGNING_SECRETS, already split and validated (`parseSigningSecrets`). */
  signingSecrets: readonly string[];
  /** Absent with delivery 'qstash' = no QStash configured (treated like a missing token). */
  qstash?: QStashPublisher;
  /** QStash `Upstash-Retries` (Q7); the publisher's default when absent. */
  qstashRetries?: number;
  fetchTransport: FetchTransport;
  logger: Logger;
  signal?: AbortSignal;
  /** Clock for `webhook-timestamp` and Retry-After dates. */
  nowMs?: () => number;
  /** Q8: keep up to this many bytes (≤ 2048) of a successful response as `responseExcerpt`. */
  excerptBytes?: number;
  /** W3C `traceparent` / `tracestate` of the attempt's span, so the receiver can join the trace. */
  traceHeaders?: Record<string, string> | undefined;
  /** An ordered delivery's sequence (SEC-H7), sent as `hookrelay-sequence` (unordered: no header). */
  sequence?: number | undefined;
};

type NotificationTransport = 'fetch' | 'qstash';

export type NotificationSuccess = {
  ok: true;
  transport: NotificationTransport;
  httpStatus?: number;
  messageId?: string;
  responseExcerpt?: string;
  fellBack: boolean;
  durationMs: number;
};

export type NotificationFailure = {
  ok: false;
  errorClass: NotificationErrorClass;
  httpStatus?: number;
  retryAfterMs?: number;
  /** Retrying cannot help (configuration, SSRF, 3xx, most 4xx: Q3). */
  permanent: boolean;
  /** The hook has `fallback: 'none'` (D6): the caller raises CriticalHookDeliveryError. */
  critical: boolean;
  transport: NotificationTransport;
  fellBack: boolean;
  /** A sanitized reason (names a header/variable/code, never a value or remote text). */
  detail?: string;
  /** The failure is hookrelay's own (an unexpected error before or while sending), not the receiver's. */
  local?: boolean;
  /** Q8: the first bytes of a non-2xx answer (with `excerptBytes`), resolved template values taken out. */
  responseExcerpt?: string;
  /** Q8: the headers a direct fetch sent, templates shown as templates and the signature elided (attemptEvidence.ts). */
  requestHeaders?: Record<string, string>;
  durationMs: number;
};

export type NotificationResult = NotificationSuccess | NotificationFailure;

export async function deliverNotification(input: DeliverNotificationInput): Promise<NotificationResult> {
  const startedAt = performance.now();
  const { webhook } = input;
  const critical = webhook.fallback === 'none';
  const now = input.nowMs ?? Date.now;
  let target: Readonly<ResolvedUrl>;
  let headers: Record<string, string>;
  try {
    target = resolveWebhookUrlCached(webhook.url, input.appUrl);
    headers = templatedHeaders(input);
  } catch (error) {
    if (!(error instanceof DeliveryConfigError)) throw error;
    return configurationFailure(webhook.delivery, error.message, critical, startedAt);
  }
  const trusted = input.trusted === true || target.trusted;
  const attemptTimeoutMs = timeoutMs(webhook);

  // The awaits stay here, the steps around them are plain functions: no promise per step on the hot path.
  if (webhook.delivery === 'qstash') {
    const destination = qstashDestination(webhook.url, target.url);
    if (!destination.ok) return configurationFailure('qstash', destination.problem, critical, startedAt);
    // The SSRF check sees the normalised destination: exactly the string QStash is given.
    const check = await input.fetchTransport.checkDestination(destination.destination, trusted);
    if (!check.ok) return refusedDestination(check.errorClass, critical, startedAt);
    const published: QStashPublishResult = input.qstash
      ? await input.qstash.publish(publishRequest(input, destination.destination, headers, attemptTimeoutMs, now()))
      : { ok: false, errorClass: 'configuration' };
    const answered = qstashAnswer(input, published, critical, startedAt);
    if (answered !== undefined) return answered;
  }

  const sent = requestHeaders(headers, input, now());
  const outcome = await input.fetchTransport.send(fetchRequest(input, target.url, trusted, sent, attemptTimeoutMs));
  const evidence: EvidenceSource = { configured: webhook.headers, sent, env: input.env };
  return fromOutcome(outcome, critical, webhook.delivery === 'qstash', now(), performance.now() - startedAt, evidence);
}

/** The hook's headers with their templates resolved (W2): a fresh object per call, the request's headers are added to it. */
function templatedHeaders(input: DeliverNotificationInput): Record<string, string> {
  const { webhook } = input;
  return resolveHeaderTemplates(webhook.headers, webhook.allowedEnvVars, input.env, {
    templateEnv: input.templateEnv,
    environmentHook: input.environmentHook === true,
  });
}

/** A refusal before anything is sent (D7, Q5): permanent, and never a fallback. */
function configurationFailure(transport: NotificationTransport, detail: string, critical: boolean, startedAt: number): NotificationFailure {
  return { ok: false, errorClass: 'configuration', permanent: true, critical, transport, fellBack: false, detail, durationMs: performance.now() - startedAt };
}

/**
 * Q5/Q7: re-checked on every attempt (job data and ledger rows are not trusted to have passed
 * registration): the raw URL, then the resolved one as the SDK will paste it into /v2/publish/.
 */
function qstashDestination(rawUrl: string, url: string): { ok: true; destination: string } | { ok: false; problem: string } {
  const rawProblem = qstashDestinationProblem(rawUrl);
  return rawProblem !== undefined ? { ok: false, problem: rawProblem } : canonicalQStashDestination(url);
}

/** The SSRF guard refused QStash's destination (or could not resolve it): nothing is sent anywhere. */
function refusedDestination(errorClass: 'ssrf_blocked' | 'network_error' | 'configuration', critical: boolean, startedAt: number): NotificationFailure {
  return {
    ok: false,
    errorClass,
    permanent: errorClass !== 'network_error',
    critical,
    transport: 'qstash',
    fellBack: false,
    ...(errorClass === 'ssrf_blocked' ? { detail: SSRF_BLOCKED_HINT } : {}),
    durationMs: performance.now() - startedAt,
  };
}

function publishRequest(
  input: DeliverNotificationInput,
  destination: string,
  headers: Record<string, string>,
  attemptTimeoutMs: number,
  nowMs: number,
): QStashPublishRequest {
  return {
    destination,
    body: input.payload,
    // A copy: a fallback fetch signs `headers` again with its own timestamp.
    headers: requestHeaders({ ...headers }, input, nowMs),
    timeoutMs: attemptTimeoutMs,
    deduplicationId: `${input.deliveryId}-${input.generation}`,
    ...(input.qstashRetries !== undefined ? { retries: input.qstashRetries } : {}),
    ...(input.signal ? { signal: input.signal } : {}),
  };
}

/** QStash's answer as the result: accepted, or refused with the fallback off (D6); undefined: fall back to one direct fetch (D7). */
function qstashAnswer(input: DeliverNotificationInput, published: QStashPublishResult, critical: boolean, startedAt: number): NotificationResult | undefined {
  if (published.ok) return { ok: true, transport: 'qstash', messageId: published.messageId, fellBack: false, durationMs: performance.now() - startedAt };
  input.logger.warn(
    {
      hookId: input.hookId,
      deliveryId: input.deliveryId,
      errorClass: published.errorClass,
      httpStatus: published.httpStatus,
      fallback: input.webhook.fallback,
    },
    critical ? 'qstash publish failed; fallback disabled' : 'qstash publish failed; falling back to one direct fetch',
  );
  if (!critical) return undefined;
  return {
    ok: false,
    errorClass: published.errorClass,
    ...(published.httpStatus !== undefined ? { httpStatus: published.httpStatus } : {}),
    permanent: published.errorClass === 'configuration' || (published.httpStatus !== undefined && isPermanentStatus(published.httpStatus)),
    critical,
    transport: 'qstash',
    fellBack: false,
    durationMs: performance.now() - startedAt,
  };
}

function fetchRequest(input: DeliverNotificationInput, url: string, trusted: boolean, sent: Record<string, string>, attemptTimeoutMs: number): SendRequest {
  return {
    url,
    body: input.payload,
    headers: sent,
    timeoutMs: attemptTimeoutMs,
    trusted,
    read: 'discard',
    excerptBytes: input.excerptBytes,
    signal: input.signal,
  };
}

/**
 * `headers` (the hook's, resolved) with the attempt's own added in place, in this order: trace
 * context, the sequence (SEC-H7), then `webhook-id` / `webhook-timestamp` / `webhook-signature` (Q1/Q6).
 */
function requestHeaders(headers: Record<string, string>, input: DeliverNotificationInput, nowMs: number): Record<string, string> {
  if (input.traceHeaders !== undefined) Object.assign(headers, input.traceHeaders);
  if (input.sequence !== undefined) headers[SEQUENCE_HEADER] = String(input.sequence);
  return addSignatureHeaders(headers, input.deliveryId, Math.floor(nowMs / MS_PER_SECOND), input.payload, input.signingSecrets);
}

/** What Q8's evidence is computed from, only when there is something to keep: the healthy path pays nothing. */
type EvidenceSource = { configured: Record<string, string> | undefined; sent: Record<string, string>; env: Record<string, string | undefined> };

function secretsOf(source: EvidenceSource): string[] {
  return resolvedTemplateValues(source.configured, source.sent, source.env);
}

function headersAsConfigured(source: EvidenceSource): Record<string, string> {
  return sentHeadersAsConfigured(source.configured, source.sent);
}

function fromOutcome(
  outcome: SendOutcome,
  critical: boolean,
  fellBack: boolean,
  nowMs: number,
  durationMs: number,
  evidence: EvidenceSource,
): NotificationResult {
  if (outcome.kind === 'error') {
    const permanent = outcome.errorClass === 'ssrf_blocked' || outcome.errorClass === 'configuration';
    return {
      ok: false,
      errorClass: outcome.errorClass,
      permanent,
      critical,
      ...(outcome.detail ? { detail: outcome.detail } : {}),
      ...(outcome.errorClass === 'configuration' || outcome.errorClass === 'ssrf_blocked' ? {} : { requestHeaders: headersAsConfigured(evidence) }),
      transport: 'fetch',
      fellBack,
      durationMs,
    };
  }
  const hasExcerpt = outcome.excerpt !== undefined && outcome.excerpt.length > 0;
  if (outcome.status >= 200 && outcome.status < 300) {
    return hasExcerpt
      ? {
          ok: true,
          httpStatus: outcome.status,
          responseExcerpt: excerptText(outcome.excerpt as Uint8Array, secretsOf(evidence)),
          transport: 'fetch',
          fellBack,
          durationMs,
        }
      : { ok: true, httpStatus: outcome.status, transport: 'fetch', fellBack, durationMs };
  }
  const retryAfterMs = parseRetryAfter(outcome.headers['retry-after'], nowMs);
  return {
    ok: false,
    errorClass: 'http_error',
    httpStatus: outcome.status,
    ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
    permanent: isPermanentStatus(outcome.status),
    critical,
    ...(hasExcerpt ? { responseExcerpt: excerptText(outcome.excerpt as Uint8Array, secretsOf(evidence)) } : {}),
    requestHeaders: headersAsConfigured(evidence),
    transport: 'fetch',
    fellBack,
    durationMs,
  };
}

/** Q8: an excerpt as stored: decoded, made storable, every resolved template value taken out. */
function excerptText(excerpt: Uint8Array, secrets: readonly string[]): string {
  return redactSecrets(sanitizeStorableText(UTF8.decode(excerpt)), secrets);
}
