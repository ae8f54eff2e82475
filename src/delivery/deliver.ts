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
import { redactSecrets, resolvedTemplateValues, sentHeadersAsConfigured } from './attemptEvidence.ts';
import { DeliveryConfigError, SSRF_BLOCKED_HINT } from './errors.ts';
import type { FetchTransport, SendOutcome } from './fetchTransport.ts';
import { resolveHeaderTemplates } from './headerTemplates.ts';
import { resolveWebhookUrl } from './resolveUrl.ts';
import { isPermanentStatus, parseRetryAfter } from './retryPolicy.ts';
import { signatureHeaders } from './signing.ts';
import type { QStashPublisher, QStashPublishResult, TransportErrorClass } from './types.ts';

const MS_PER_SECOND = 1000;

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
  const elapsed = () => performance.now() - startedAt;
  const { webhook } = input;
  const critical = webhook.fallback === 'none';
  const now = input.nowMs ?? Date.now;

  let url: string;
  let trusted: boolean;
  let headers: Record<string, string>;
  try {
    const resolved = resolveWebhookUrl(webhook.url, input.appUrl);
    url = resolved.url;
    trusted = input.trusted === true || resolved.trusted;
    headers = resolveHeaderTemplates(webhook.headers, webhook.allowedEnvVars, input.env, {
      ...(input.templateEnv ? { templateEnv: input.templateEnv } : {}),
      environmentHook: input.environmentHook === true,
    });
  } catch (error) {
    if (!(error instanceof DeliveryConfigError)) throw error;
    return {
      ok: false,
      errorClass: 'configuration',
      permanent: true,
      critical,
      transport: webhook.delivery,
      fellBack: false,
      detail: error.message,
      durationMs: elapsed(),
    };
  }
  const signed = (): Record<string, string> => ({
    ...headers,
    ...input.traceHeaders,
    ...(input.sequence !== undefined ? { [SEQUENCE_HEADER]: String(input.sequence) } : {}),
    ...signatureHeaders({ id: input.deliveryId, timestampSeconds: Math.floor(now() / MS_PER_SECOND), body: input.payload, secrets: input.signingSecrets }),
  });
  const attemptTimeoutMs = timeoutMs(webhook);

  if (webhook.delivery === 'qstash') {
    // Q5/Q7: re-checked on every attempt (job data and ledger rows are not trusted to have passed
    // registration): the raw URL, then the resolved one as the SDK will paste it into
    // /v2/publish/. A refusal is permanent and never falls back: nothing is sent anywhere.
    const rawProblem = qstashDestinationProblem(webhook.url);
    const destination = rawProblem !== undefined ? { ok: false as const, problem: rawProblem } : canonicalQStashDestination(url);
    if (!destination.ok) {
      return {
        ok: false,
        errorClass: 'configuration',
        permanent: true,
        critical,
        transport: 'qstash',
        fellBack: false,
        detail: destination.problem,
        durationMs: elapsed(),
      };
    }
    // The SSRF check sees the normalised destination: exactly the string QStash is given.
    const check = await input.fetchTransport.checkDestination(destination.destination, trusted);
    if (!check.ok) {
      return {
        ok: false,
        errorClass: check.errorClass,
        permanent: check.errorClass !== 'network_error',
        critical,
        transport: 'qstash',
        fellBack: false,
        ...(check.errorClass === 'ssrf_blocked' ? { detail: SSRF_BLOCKED_HINT } : {}),
        durationMs: elapsed(),
      };
    }
    const published: QStashPublishResult = input.qstash
      ? await input.qstash.publish({
          destination: destination.destination,
          body: input.payload,
          headers: signed(),
          timeoutMs: attemptTimeoutMs,
          deduplicationId: `${input.deliveryId}-${input.generation}`,
          ...(input.qstashRetries !== undefined ? { retries: input.qstashRetries } : {}),
          ...(input.signal ? { signal: input.signal } : {}),
        })
      : { ok: false, errorClass: 'configuration' };
    if (published.ok) return { ok: true, transport: 'qstash', messageId: published.messageId, fellBack: false, durationMs: elapsed() };
    input.logger.warn(
      { hookId: input.hookId, deliveryId: input.deliveryId, errorClass: published.errorClass, httpStatus: published.httpStatus, fallback: webhook.fallback },
      critical ? 'qstash publish failed; fallback disabled' : 'qstash publish failed; falling back to one direct fetch',
    );
    if (critical) {
      return {
        ok: false,
        errorClass: published.errorClass,
        ...(published.httpStatus !== undefined ? { httpStatus: published.httpStatus } : {}),
        permanent: published.errorClass === 'configuration' || (published.httpStatus !== undefined && isPermanentStatus(published.httpStatus)),
        critical,
        transport: 'qstash',
        fellBack: false,
        durationMs: elapsed(),
      };
    }
  }

  const sent = signed();
  const outcome = await input.fetchTransport.send({
    url,
    body: input.payload,
    headers: sent,
    timeoutMs: attemptTimeoutMs,
    trusted,
    read: 'discard',
    ...(input.excerptBytes ? { excerptBytes: input.excerptBytes } : {}),
    ...(input.signal ? { signal: input.signal } : {}),
  });
  return fromOutcome(outcome, {
    critical,
    fellBack: webhook.delivery === 'qstash',
    nowMs: now(),
    durationMs: elapsed(),
    // Only computed when there is something to keep: the healthy path pays nothing.
    evidence: () => ({
      secrets: resolvedTemplateValues(webhook.headers, sent, input.env),
      requestHeaders: sentHeadersAsConfigured(webhook.headers, sent),
    }),
  });
}

type OutcomeContext = {
  critical: boolean;
  fellBack: boolean;
  nowMs: number;
  durationMs: number;
  evidence: () => { secrets: string[]; requestHeaders: Record<string, string> };
};

function fromOutcome(outcome: SendOutcome, ctx: OutcomeContext): NotificationResult {
  const common = { transport: 'fetch' as const, fellBack: ctx.fellBack, durationMs: ctx.durationMs };
  if (outcome.kind === 'error') {
    const permanent = outcome.errorClass === 'ssrf_blocked' || outcome.errorClass === 'configuration';
    return {
      ok: false,
      errorClass: outcome.errorClass,
      permanent,
      critical: ctx.critical,
      ...(outcome.detail ? { detail: outcome.detail } : {}),
      ...(outcome.errorClass === 'configuration' || outcome.errorClass === 'ssrf_blocked' ? {} : { requestHeaders: ctx.evidence().requestHeaders }),
      ...common,
    };
  }
  const excerptOf = (secrets: readonly string[]) =>
    outcome.excerpt && outcome.excerpt.length > 0
      ? { responseExcerpt: redactSecrets(sanitizeStorableText(new TextDecoder().decode(outcome.excerpt)), secrets) }
      : {};
  if (outcome.status >= 200 && outcome.status < 300) {
    return { ok: true, httpStatus: outcome.status, ...(outcome.excerpt && outcome.excerpt.length > 0 ? excerptOf(ctx.evidence().secrets) : {}), ...common };
  }
  const retryAfterMs = parseRetryAfter(outcome.headers['retry-after'], ctx.nowMs);
  const evidence = ctx.evidence();
  return {
    ok: false,
    errorClass: 'http_error',
    httpStatus: outcome.status,
    ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
    permanent: isPermanentStatus(outcome.status),
    critical: ctx.critical,
    ...excerptOf(evidence.secrets),
    requestHeaders: evidence.requestHeaders,
    ...common,
  };
}
