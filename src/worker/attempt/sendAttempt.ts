/**
 * Step 4 of a delivery (processor.ts), `sendAttempt`: the request (the enqueued payload bytes,
 * plus the email when B3 asks for it; headers resolved and signed in deliver.ts) and its one
 * send (QStash or fetch, fallback D7, SSRF Q5). Never throws: every problem is a typed failure.
 * The worker's fixed settings are gathered once (`createAttemptSender`), not per delivery.
 */
import { isEnvHookId } from '../../contract/hookTypes.ts';
import type { TemplateEnvPattern } from '../../contract/templateSources.ts';
import { type DeliverNotificationInput, deliverNotification, type NotificationFailure, type NotificationResult } from '../../notify/deliver.ts';
import type { FetchTransport } from '../../send/fetchTransport.ts';
import type { QStashPublisher } from '../../send/types.ts';
import type { Logger } from '../../observability/logger.ts';
import { type Span, traceHeaders } from '../../observability/tracing.ts';
import type { WebhookPayloadBuilder } from '../../notify/buildPayload.ts';
import type { AttemptTarget } from './attemptTarget.ts';
import { qstashCallbackUrls } from '../qstash/callbackUrls.ts';

/** Q8: bytes of a response kept in the attempt record. */
const RESPONSE_EXCERPT_BYTES = 512;

export type AttemptSenderDeps = {
  payloadBuilder: WebhookPayloadBuilder;
  fetchTransport: FetchTransport;
  qstash?: QStashPublisher | undefined;
  qstashRetries?: number | undefined;
  env: Record<string, string | undefined>;
  templateEnv?: TemplateEnvPattern | undefined;
  appUrl?: string | undefined;
  signingSecrets: readonly string[];
  publicUrl?: string | undefined;
  logger: Logger;
  signal?: AbortSignal | undefined;
};

/** The part of a notification's input that is the same for every delivery of this worker. */
type FixedInput = Pick<
  DeliverNotificationInput,
  'env' | 'templateEnv' | 'appUrl' | 'signingSecrets' | 'qstashRetries' | 'fetchTransport' | 'logger' | 'excerptBytes'
>;

export type AttemptSender = (target: AttemptTarget, span: Span | undefined) => Promise<NotificationResult>;

export function createAttemptSender(deps: AttemptSenderDeps): AttemptSender {
  const fixed: FixedInput = {
    env: deps.env,
    templateEnv: deps.templateEnv,
    appUrl: deps.appUrl,
    // Frozen: signing finds its key objects by the list itself (signing.ts).
    signingSecrets: Object.freeze([...deps.signingSecrets]),
    qstashRetries: deps.qstashRetries,
    fetchTransport: deps.fetchTransport,
    logger: deps.logger,
    excerptBytes: RESPONSE_EXCERPT_BYTES,
  };
  return (target, span) => sendAttempt(deps, fixed, target, span);
}

async function sendAttempt(deps: AttemptSenderDeps, fixed: FixedInput, target: AttemptTarget, span: Span | undefined): Promise<NotificationResult> {
  const hook = target.hook;
  if (!hook) return configurationFailure(target.hookProblem ?? 'stored hook no longer validates', false);
  // Environment hooks are the operator's own targets (Q5): not subject to the SSRF guard, and the
  // only hooks that may read AGENT_HOOK_WEBHOOK_* (W2) — but only while the URL is still the one
  // this worker's environment names, so a stored row carrying a reserved id buys neither.
  const environmentHook = isEnvHookId(hook.id) && hook.webhook.url === deps.env.AGENT_HOOK_WEBHOOK_URL?.trim();
  const critical = hook.webhook.fallback === 'none';
  if (target.body === undefined) return configurationFailure('event payload missing (pruned by retention?)', critical);
  try {
    // The bytes the producer serialized, as they are (B3 adds the email only when the hook asks for it).
    // B5: the worker's shutdown signal abandons a look-up, never a send.
    const payload = await deps.payloadBuilder.withEmail({ hook, body: target.body, emailUserId: target.emailUserId, signal: deps.signal });
    if (payload === undefined) {
      return { ok: false, errorClass: 'cancelled', permanent: false, critical, transport: hook.webhook.delivery, fellBack: false, durationMs: 0 };
    }
    // One literal of a fixed shape (a spread of `fixed` plus members would make a slow dictionary object per delivery).
    return await deliverNotification({
      webhook: hook.webhook,
      hookId: hook.id,
      payload,
      deliveryId: target.id,
      generation: target.generation,
      env: fixed.env,
      templateEnv: fixed.templateEnv,
      environmentHook,
      appUrl: fixed.appUrl,
      trusted: environmentHook,
      signingSecrets: fixed.signingSecrets,
      qstash: deps.qstash ? withCallbacks(deps.qstash, deps.publicUrl, target) : undefined,
      qstashRetries: fixed.qstashRetries,
      fetchTransport: fixed.fetchTransport,
      logger: fixed.logger,
      excerptBytes: fixed.excerptBytes,
      traceHeaders: span ? traceHeaders(span) : undefined,
      sequence: target.sequence,
    });
  } catch (error) {
    // A bug, not a delivery outcome: retried per schedule like a network failure, logged by name only.
    deps.logger.error({ deliveryId: target.id, err: error }, 'unexpected error during a delivery attempt');
    return {
      ok: false,
      errorClass: 'network_error',
      permanent: false,
      critical,
      transport: hook.webhook.delivery,
      fellBack: false,
      local: true,
      durationMs: 0,
    };
  }
}

function configurationFailure(detail: string, critical: boolean): NotificationFailure {
  return { ok: false, errorClass: 'configuration', permanent: true, critical, transport: 'fetch', fellBack: false, detail, durationMs: 0 };
}

/** Q7: with HOOKRELAY_PUBLIC_URL, QStash reports the final outcome back to this worker. */
function withCallbacks(qstash: QStashPublisher, publicUrl: string | undefined, target: AttemptTarget): QStashPublisher {
  if (!publicUrl) return qstash;
  const urls = qstashCallbackUrls(publicUrl, target.id, target.generation);
  return { publish: (req) => qstash.publish({ ...req, callbackUrl: urls.callback, failureCallbackUrl: urls.failure }) };
}
