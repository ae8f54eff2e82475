import { newDeliveryId } from '../contract/deliveryId.ts';
import type { TemplateEnvPattern } from '../contract/templateSources.ts';
import type { WebhookConfig } from '../contract/webhook.ts';
import { timeoutMs } from '../contract/webhook.ts';
import type { ToolCallDecision } from '../contract/decision.ts';
import { resolvedTemplateValues } from '../send/attemptEvidence.ts';
import { DeliveryConfigError } from '../contract/errors.ts';
import type { FetchTransport } from '../send/fetchTransport.ts';
import { resolveHeaderTemplates } from '../send/headerTemplates.ts';
import { resolveWebhookUrlCached } from '../send/resolveUrl.ts';
import { redactSecrets } from '../send/secretRedaction.ts';
import { signatureHeaders } from '../send/signing.ts';
import { MAX_DECISION_RESPONSE_BYTES, parseToolCallHookResponse } from './parseDecisionResponse.ts';

/** `circuit_open`: the control's endpoint breaker is open or the endpoint disabled; nothing was sent. */
export type ControlErrorCode =
  | 'configuration'
  | 'http_error'
  | 'network_error'
  | 'timeout'
  | 'invalid_response'
  | 'response_too_large'
  | 'ssrf_blocked'
  | 'circuit_open';

export type ToolCallWebhookResult =
  | { status: 'success'; decision: ToolCallDecision }
  | { status: 'ignored' }
  | { status: 'cancelled' }
  | { status: 'error'; code: ControlErrorCode; httpStatus?: number };

export type ExecuteToolCallWebhookInput = {
  webhook: WebhookConfig;
  payload: string;
  env: Record<string, string | undefined>;
  /** HOOKRELAY_TEMPLATE_ENV, parsed (W2); default `none`. */
  templateEnv?: TemplateEnvPattern;
  /** An environment hook (E3): only it may read `AGENT_HOOK_WEBHOOK_*` (W2). */
  environmentHook?: boolean;
  appUrl?: string;
  trusted?: boolean;
  signingSecrets: readonly string[];
  fetchTransport: FetchTransport;
  signal?: AbortSignal;
  /** W3C `traceparent` / `tracestate` of the decision span (the receiver can join the trace). */
  traceHeaders?: Record<string, string> | undefined;
};

/**
 * One decision call (R1, R4, R5): POST once, never retried, no redirects; classified in R5-order.
 * Cancellation never grants permission: an abort at any point, a late allow included, is `cancelled`.
 */
export async function executeToolCallWebhook(input: ExecuteToolCallWebhookInput): Promise<ToolCallWebhookResult> {
  if (input.signal?.aborted) return { status: 'cancelled' };
  let url: string;
  let trusted: boolean;
  let headers: Record<string, string>;
  try {
    const resolved = resolveWebhookUrlCached(input.webhook.url, input.appUrl);
    url = resolved.url;
    trusted = input.trusted === true || resolved.trusted;
    // W2: templates resolve from the current environment on every call (rotation applies at once).
    headers = resolveHeaderTemplates(input.webhook.headers, input.webhook.allowedEnvVars, input.env, {
      ...(input.templateEnv ? { templateEnv: input.templateEnv } : {}),
      environmentHook: input.environmentHook === true,
    });
  } catch (error) {
    if (error instanceof DeliveryConfigError) return { status: 'error', code: 'configuration' };
    throw error;
  }
  const signed = Object.assign(
    headers,
    input.traceHeaders,
    signatureHeaders({ id: newDeliveryId(), timestampSeconds: Math.floor(Date.now() / 1000), body: input.payload, secrets: input.signingSecrets }),
  );
  const outcome = await input.fetchTransport.send({
    url,
    body: input.payload,
    headers: signed,
    timeoutMs: timeoutMs(input.webhook),
    trusted,
    read: DECISION_READ,
    signal: input.signal,
  });
  if (input.signal?.aborted) return { status: 'cancelled' }; // a late answer never counts
  if (outcome.kind === 'error') {
    if (outcome.errorClass === 'cancelled') return { status: 'cancelled' };
    return { status: 'error', code: outcome.errorClass };
  }
  if (outcome.status < 200 || outcome.status >= 300) return { status: 'error', code: 'http_error', httpStatus: outcome.status };
  if (outcome.tooLarge) return { status: 'error', code: 'response_too_large' };
  const parsed = parseToolCallHookResponse(outcome.body ?? new Uint8Array());
  if (parsed.status === 'error') return { status: 'error', code: parsed.code };
  // W7: a deny reason goes back to the agent and into records: a template value echoed in it goes.
  const reason = parsed.status === 'success' && parsed.decision.decision === 'deny' ? parsed.decision.reason : undefined;
  if (reason !== undefined && input.webhook.headers !== undefined) {
    const secrets = resolvedTemplateValues(input.webhook.headers, signed, input.env);
    if (secrets.length > 0) return { status: 'success', decision: { decision: 'deny', reason: redactSecrets(reason, secrets) } };
  }
  return parsed;
}

const DECISION_READ = Object.freeze({ maxBytes: MAX_DECISION_RESPONSE_BYTES });
