/**
 * `hookrelay.deliver`: one CLIENT span per attempt, continuing the stored trace (none without an
 * SDK: nothing allocated). Ids, attempt and target only — never the payload, a header value or
 * the URL's query.
 */
import type { Attributes } from '@opentelemetry/api';
import type { NotificationResult } from '../../notify/deliver.ts';
import { activeTracer, contextFromStored, redactedUrl, ROOT_CONTEXT, type Span, SpanKind, SpanStatusCode } from '../../observability/tracing.ts';
import type { AttemptTarget } from './attemptTarget.ts';

export function startDeliverSpan(target: AttemptTarget): Span | undefined {
  const tracer = activeTracer();
  if (tracer === undefined) return undefined;
  const webhook = target.hook?.webhook;
  const url = webhook ? redactedUrl(webhook.url) : '';
  const attributes: Attributes = {
    'hookrelay.delivery_id': target.id,
    'hookrelay.operation_id': target.operationId,
    'hookrelay.hook_id': target.hookId,
    'hookrelay.attempt': target.attemptCount + 1,
    'hookrelay.generation': target.generation,
    'http.request.method': 'POST',
  };
  if (url) {
    const u = new URL(url);
    attributes['url.full'] = url;
    attributes['server.address'] = u.hostname;
    attributes['server.port'] = Number(u.port || (u.protocol === 'https:' ? 443 : 80));
  }
  const parent = contextFromStored(target.trace) ?? ROOT_CONTEXT;
  return tracer.startSpan('hookrelay.deliver', { kind: SpanKind.CLIENT, attributes }, parent);
}

export function endDeliverSpan(span: Span, result: NotificationResult, outcome: string): void {
  span.setAttribute('hookrelay.transport', result.transport);
  span.setAttribute('hookrelay.outcome', outcome);
  if (result.httpStatus !== undefined) span.setAttribute('http.response.status_code', result.httpStatus);
  if (!result.ok) {
    span.setAttribute('error.type', result.httpStatus !== undefined && result.errorClass === 'http_error' ? String(result.httpStatus) : result.errorClass);
    span.setStatus({ code: SpanStatusCode.ERROR, message: result.errorClass });
  }
  span.end();
}
