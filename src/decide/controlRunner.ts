import { countsAgainstEndpoint, DEFAULT_TIMEOUT_FLOOR_MS, endpointKey, scopedEndpointKey, type EndpointGuard } from '../contract/endpoint.ts';
import { DEFAULT_TENANT } from '../contract/tenant.ts';
import { timeoutMs } from '../contract/webhook.ts';
import { executeToolCallWebhook, type ControlErrorCode, type ToolCallWebhookResult } from './decisionWebhook.ts';
import type { ControlHook } from './evaluateControls.ts';
import { assemblePayload } from '../notify/assemblePayload.ts';
import type { WebhookPayloadBuilder } from '../notify/buildPayload.ts';
import { activeTracer, inSpan, redactedUrl, SpanKind, SpanStatusCode, traceHeaders, type Span } from '../observability/tracing.ts';
import type { SendContext } from '../notify/sendContext.ts';

/** `tenant`: the operation's (N1); its endpoint state is that tenant's (N2). Default 'default'. */
export type ControlRunner = (
  hook: ControlHook,
  event: Record<string, unknown>,
  signal: AbortSignal | undefined,
  tenant?: string,
) => Promise<ToolCallWebhookResult>;

/** Bound on the (endpoint, control) pairs remembered for the once-per-opening warning. */
const MAX_WARNED = 10_000;

/**
 * N3: what one decision round trip tells the shared breaker: a success; the endpoint's failure
 * (refused/reset, DNS, TLS, 5xx, 429, 408, a timeout at or above its floor); or nothing (an
 * answer such as 401 or 422 — the receiver is up —, a timeout shorter than the floor, an
 * unparsable or too large answer from a receiver that did answer, a local problem).
 */
function decisionOutcome(result: ToolCallWebhookResult, waitedMs: number, floorMs: number): 'ok' | 'fail' | 'none' {
  if (result.status === 'success' || result.status === 'ignored') return 'ok';
  if (result.status !== 'error') return 'none';
  const code: ControlErrorCode = result.code;
  if (code !== 'http_error' && code !== 'network_error' && code !== 'timeout') return 'none';
  return countsAgainstEndpoint({ errorClass: code, httpStatus: result.httpStatus, timeoutMs: waitedMs, floorMs }) ? 'fail' : 'none';
}

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
  const keyOf = (webhook: NonNullable<ControlHook['webhook']>, tenant: string): string => {
    let key = keys.get(webhook);
    if (key === undefined) {
      key = endpointKey(webhook);
      keys.set(webhook, key);
    }
    return scopedEndpointKey(tenant, key);
  };
  return async (hook, event, signal, tenant = DEFAULT_TENANT) => {
    const endpoint = guard && hook.webhook ? keyOf(hook.webhook, tenant) : undefined;
    if (guard && endpoint !== undefined && guard.isOpen(endpoint)) {
      warnSkipped(endpoint, hook);
      return { status: 'error', code: 'circuit_open' };
    }
    const result =
      activeTracer() === undefined
        ? await sendControl(send, payloads, hook, event, signal, undefined)
        : await tracedControl(send, payloads, hook, event, signal);
    if (guard && endpoint !== undefined && hook.webhook) {
      // N3: the caller's own timeout is measured against the endpoint's floor, never taken as the endpoint's failure.
      const outcome = decisionOutcome(result, timeoutMs(hook.webhook), guard.floorMs?.(endpoint) ?? DEFAULT_TIMEOUT_FLOOR_MS);
      if (outcome !== 'none') guard.record(endpoint, outcome === 'ok');
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
