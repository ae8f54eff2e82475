import { endpointKey, type EndpointGuard } from '../contract/endpoint.ts';
import { executeToolCallWebhook, type ControlErrorCode, type ToolCallWebhookResult } from '../control/decisionWebhook.ts';
import type { ControlHook } from '../control/evaluateControls.ts';
import { assemblePayload } from '../payload/assemblePayload.ts';
import type { WebhookPayloadBuilder } from '../payload/buildPayload.ts';
import { activeTracer, inSpan, redactedUrl, SpanKind, SpanStatusCode, traceHeaders, type Span } from '../observability/tracing.ts';
import type { SendContext } from './sendContext.ts';

export type ControlRunner = (hook: ControlHook, event: Record<string, unknown>, signal: AbortSignal | undefined) => Promise<ToolCallWebhookResult>;

/** Bound on the (endpoint, control) pairs remembered for the once-per-opening warning. */
const MAX_WARNED = 10_000;

/** Codes that say nothing about the receiver (a local problem or a cancel): not fed to the breaker. */
const NOT_THE_ENDPOINT = new Set<ControlErrorCode>(['configuration', 'ssrf_blocked', 'circuit_open']);

/**
 * R1–R7: one decision webhook round trip for a control hook (payload, signing, send, parse).
 * With an endpoint guard, an endpoint whose breaker is open (or that is disabled) is an
 * immediate control error for the control's onError — never an allow, never a wait on a
 * receiver known to be down — and each round trip's outcome feeds the shared breaker.
 */
export function createControlRunner(send: SendContext, payloads: WebhookPayloadBuilder, guard?: EndpointGuard): ControlRunner {
  // Which (endpoint, control) was told about which opening, so the warning is said once per opening.
  const warned = new Map<string, number>();
  const warnSkipped = (endpoint: string, hook: ControlHook): void => {
    if (hook.webhook?.onError === 'block') return;
    const opening = guard?.opening?.(endpoint) ?? 0;
    const id = `${endpoint}\u0000${hook.id}`;
    if (warned.get(id) === opening) return;
    if (warned.size >= MAX_WARNED) warned.clear();
    warned.set(id, opening);
    send.logger.warn(
      { hookId: hook.id, hookType: hook.type, endpoint, onError: 'continue' },
      "decision webhook's endpoint circuit is open: with onError 'continue' its tool calls are allowed without asking it until the breaker closes",
    );
  };
  const keys = new WeakMap<object, string>();
  const keyOf = (webhook: NonNullable<ControlHook['webhook']>): string => {
    let key = keys.get(webhook);
    if (key === undefined) {
      key = endpointKey(webhook);
      keys.set(webhook, key);
    }
    return key;
  };
  return async (hook, event, signal) => {
    const endpoint = guard && hook.webhook ? keyOf(hook.webhook) : undefined;
    if (guard && endpoint !== undefined && guard.isOpen(endpoint)) {
      warnSkipped(endpoint, hook);
      return { status: 'error', code: 'circuit_open' };
    }
    const result =
      activeTracer() === undefined
        ? await sendControl(send, payloads, hook, event, signal, undefined)
        : await tracedControl(send, payloads, hook, event, signal);
    if (guard && endpoint !== undefined) {
      if (result.status === 'success' || result.status === 'ignored') guard.record(endpoint, true);
      else if (result.status === 'error' && !NOT_THE_ENDPOINT.has(result.code)) guard.record(endpoint, false);
    }
    return result;
  };
}

/** `hookrelay.decision`: one CLIENT span per control call, its outcome (allow, deny, ignored, cancelled or the error code). */
function tracedControl(send: SendContext, payloads: WebhookPayloadBuilder, hook: ControlHook, event: Record<string, unknown>, signal: AbortSignal | undefined) {
  const url = hook.webhook ? redactedUrl(hook.webhook.url) : '';
  return inSpan(
    'hookrelay.decision',
    {
      kind: SpanKind.CLIENT,
      attributes: { 'hookrelay.hook_id': hook.id, 'hookrelay.hook_type': hook.type, 'http.request.method': 'POST', ...(url ? { 'url.full': url } : {}) },
    },
    async (span) => {
      const result = await sendControl(send, payloads, hook, event, signal, span);
      const outcome = result.status === 'success' ? result.decision.decision : result.status === 'error' ? result.code : result.status;
      span?.setAttribute('hookrelay.outcome', outcome);
      if (result.status === 'error') {
        if (result.httpStatus !== undefined) span?.setAttribute('http.response.status_code', result.httpStatus);
        span?.setAttribute('error.type', result.code);
        span?.setStatus({ code: SpanStatusCode.ERROR, message: result.code });
      }
      return result;
    },
  );
}

async function sendControl(
  send: SendContext,
  payloads: WebhookPayloadBuilder,
  hook: ControlHook,
  event: Record<string, unknown>,
  signal: AbortSignal | undefined,
  span: Span | undefined,
): Promise<ToolCallWebhookResult> {
  let payload: string;
  let signingSecrets: readonly string[];
  try {
    const input = { hook: hook as ControlHook & { webhook: NonNullable<ControlHook['webhook']> }, event, control: true };
    // Without an email look-up the payload is ready now: no await on the decision hot path.
    const built = payloads.enrichesEmail ? await payloads.build({ ...input, signal }) : assemblePayload(input);
    if (built === undefined || signal?.aborted) return { status: 'cancelled' as const };
    payload = JSON.stringify(built);
    signingSecrets = send.signingSecrets();
  } catch {
    // L5/R5: a control that cannot be sent (unserializable context, invalid signing secrets)
    // is an error handled by its onError, never an allow and never a rejection of evaluate*.
    return { status: 'error', code: 'configuration' };
  }
  return await executeToolCallWebhook({
    webhook: hook.webhook!,
    payload,
    env: send.env,
    templateEnv: send.templateEnv,
    environmentHook: hook.env === true,
    appUrl: send.appUrl,
    trusted: hook.env === true,
    signingSecrets,
    fetchTransport: send.transport,
    ...(signal ? { signal } : {}),
    ...(span ? { traceHeaders: traceHeaders(span) } : {}),
  });
}
