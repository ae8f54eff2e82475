/**
 * OpenTelemetry traces through `@opentelemetry/api` only: hookrelay never brings an SDK or an
 * exporter (the application, or `hookrelay worker` with OTEL_* variables, registers one). With
 * none registered the hot path starts no span at all — not even a no-op one: `activeTracer()`
 * answers from the global provider's delegate, a property read.
 *
 * Trace context crosses the queue as a W3C `traceparent` (and `tracestate`), stored with the
 * delivery (ledger row and job) in one string, so a worker's attempt span continues the
 * enqueueing trace and each outgoing webhook request carries it to the receiver.
 *
 * Attributes never carry a payload, a header value or a resolved secret: ids, counts, outcomes,
 * HTTP status, and the target URL without its query string or user info.
 */
import {
  context,
  createTraceState,
  ProxyTracerProvider,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  TraceFlags,
  type Attributes,
  type Context,
  type Link,
  type Span,
  type SpanContext,
  type Tracer,
} from '@opentelemetry/api';

const TRACER_NAME = 'hookrelay';
export { SpanKind, SpanStatusCode, type Span };

/** The registered SDK's tracer, or undefined when none is registered (then nothing is traced). */
export function activeTracer(): Tracer | undefined {
  const provider = trace.getTracerProvider();
  if (provider instanceof ProxyTracerProvider) return provider.getDelegateTracer(TRACER_NAME);
  return provider.getTracer(TRACER_NAME);
}

export type SpanOptions = { kind?: SpanKind; attributes?: Attributes; parent?: Context; links?: Link[] };

/**
 * Run `fn` inside a span `name` (ended when `fn` settles; a throw is recorded as an error by its
 * class name only). Without an SDK `fn` runs with `undefined` and nothing is allocated.
 */
export async function inSpan<T>(name: string, options: SpanOptions, fn: (span: Span | undefined) => Promise<T>): Promise<T> {
  const tracer = activeTracer();
  if (tracer === undefined) return fn(undefined);
  const parent = options.parent ?? context.active();
  const span = tracer.startSpan(
    name,
    {
      kind: options.kind ?? SpanKind.INTERNAL,
      ...(options.attributes ? { attributes: options.attributes } : {}),
      ...(options.links ? { links: options.links } : {}),
    },
    parent,
  );
  try {
    return await context.with(trace.setSpan(parent, span), () => fn(span));
  } catch (error) {
    span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.name : 'error' });
    span.setAttribute('error.type', error instanceof Error ? error.name : 'error');
    throw error;
  } finally {
    span.end();
  }
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** `traceparent` (W3C Trace Context) of a span context. */
function traceparentOf(sc: SpanContext): string {
  return `00-${sc.traceId}-${sc.spanId}-${(sc.traceFlags & 0xff).toString(16).padStart(2, '0')}`;
}

/** The W3C headers of a span, for an outgoing request; none for a span that is not valid. */
export function traceHeaders(span: Span | undefined): Record<string, string> | undefined {
  if (span === undefined) return undefined;
  const sc = span.spanContext();
  if (!trace.isSpanContextValid(sc)) return undefined;
  const headers: Record<string, string> = { traceparent: traceparentOf(sc) };
  const state = sc.traceState?.serialize();
  if (state) headers.tracestate = state;
  return headers;
}

/** The context to store with a delivery: `traceparent`, then `\n` + `tracestate` when there is one. */
export function serializeTraceContext(span: Span | undefined): string | undefined {
  const h = traceHeaders(span);
  if (h === undefined) return undefined;
  return h.tracestate ? `${h.traceparent}\n${h.tracestate}` : h.traceparent;
}

/** The span context a stored string names, or undefined for anything malformed. */
export function parseTraceContext(stored: string | null | undefined): SpanContext | undefined {
  if (typeof stored !== 'string' || stored === '') return undefined;
  const [parent, state] = stored.split('\n', 2);
  const m = TRACEPARENT.exec(parent ?? '');
  if (m === null) return undefined;
  const sc: SpanContext = {
    traceId: m[1] as string,
    spanId: m[2] as string,
    traceFlags: Number.parseInt(m[3] as string, 16) & TraceFlags.SAMPLED,
    isRemote: true,
  };
  if (!trace.isSpanContextValid(sc)) return undefined;
  if (state) sc.traceState = createTraceState(state);
  return sc;
}

/** A parent context continuing a stored trace (ROOT_CONTEXT + the remote span context). */
export function contextFromStored(stored: string | null | undefined): Context | undefined {
  const sc = parseTraceContext(stored);
  return sc === undefined ? undefined : trace.setSpanContext(ROOT_CONTEXT, sc);
}

/** A URL fit for a span attribute: scheme, host, port and path — never the query or user info. */
export function redactedUrl(raw: string): string {
  try {
    const u = new URL(raw);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return '';
  }
}

export { ROOT_CONTEXT, trace };
