import { newDeliveryId } from '../contract/deliveryId.ts';
import { EventValidationError, type CriticalFailure, WebhookDeliveryError, DeliveryConfigError } from '../contract/errors.ts';
import { serializeEventJson } from '../contract/events.ts';
import type { HookType } from '../contract/hookTypes.ts';
import { deliverNotification } from '../notify/deliver.ts';
import type { WebhookPayloadBuilder } from '../notify/buildPayload.ts';
import type { DeliveryPort } from './deliveryPort.ts';
import type { LooseHookEvent, RunnableHook } from './runnableHook.ts';
import type { SendContext } from '../notify/sendContext.ts';
import { trace, traceHeaders } from '../observability/tracing.ts';

type WebhookHook = RunnableHook & { webhook: NonNullable<RunnableHook['webhook']> };

/**
 * Local mode (D3, D6): handlers run in-process, in order; a webhook gets one attempt inline (no
 * retries: those are the worker's, Q3). A handler's error is logged, never critical (D5).
 */
export function createLocalDelivery(send: SendContext, payloads: WebhookPayloadBuilder): DeliveryPort {
  const { logger } = send;

  async function deliverWebhook(operationId: string, type: HookType, event: LooseHookEvent, hook: WebhookHook): Promise<CriticalFailure | undefined> {
    const deliveryId = newDeliveryId();
    const payload = await payloads.build({ hook, event, extra: { deliveryId, occurredAt: new Date().toISOString() } });
    if (payload === undefined) return undefined;
    const result = await deliverNotification({
      webhook: hook.webhook,
      hookId: hook.id,
      payload: serializeEventJson(payload, 'webhook payload'), // D10: a typed error, never a raw RangeError
      deliveryId,
      generation: 0,
      env: send.env,
      templateEnv: send.templateEnv,
      environmentHook: hook.env === true,
      appUrl: send.appUrl,
      trusted: hook.env === true,
      signingSecrets: send.signingSecrets(),
      qstash: hook.webhook.delivery === 'qstash' ? send.qstashPublisher() : undefined,
      fetchTransport: send.transport,
      logger,
      traceHeaders: traceHeaders(trace.getActiveSpan()), // the dispatch span, when tracing is on
    });
    if (result.ok) return undefined;
    const cause = new WebhookDeliveryError(result.errorClass, result.httpStatus);
    const fields = { operationId, hookId: hook.id, hookType: type, errorClass: result.errorClass, httpStatus: result.httpStatus };
    if (result.critical) {
      logger.error(fields, 'critical webhook delivery failed');
      return { hookId: hook.id, cause };
    }
    logger.warn(fields, 'webhook delivery failed');
    return undefined;
  }

  return {
    async deliver(operationId, type, event, hooks) {
      const failures: CriticalFailure[] = [];
      for (const hook of hooks) {
        const handler = 'handler' in hook ? hook.handler : undefined;
        // D9b: beforeToolCall handlers run only in dispatchBeforeToolCall (with `mock`); a hook with
        // a handler is represented locally by that handler (D3/D8), so its webhook is not sent here.
        if (handler && type === 'beforeToolCall') continue;
        if (handler) {
          try {
            await handler(event);
          } catch (error) {
            logger.warn({ operationId, hookId: hook.id, hookType: type, err: error instanceof Error ? error.name : 'error' }, 'hook handler failed');
          }
          continue;
        }
        if (!hook.webhook) continue;
        let failure: CriticalFailure | undefined;
        try {
          failure = await deliverWebhook(operationId, type, event, { ...hook, webhook: hook.webhook });
        } catch (error) {
          // D5: e.g. an event that cannot be serialized, an invalid HOOKRELAY_SIGNING_SECRETS: this
          // hook failed (critical with fallback 'none', D6); its siblings still run.
          const errorClass =
            error instanceof DeliveryConfigError ? 'configuration' : error instanceof EventValidationError ? error.errorClass : 'internal_error';
          const fields = { operationId, hookId: hook.id, hookType: type, errorClass, err: error instanceof Error ? error.name : 'error' };
          if (hook.webhook.fallback === 'none') {
            logger.error(fields, 'critical webhook delivery failed');
            failure = { hookId: hook.id, cause: new WebhookDeliveryError(errorClass) };
          } else {
            logger.warn(fields, 'webhook delivery failed');
          }
        }
        if (failure) failures.push(failure);
      }
      // Local mode sends inline (one attempt, D6): there is no ledger to accept into (F1 is queue mode's).
      return { critical: failures, notAccepted: [] };
    },
    close: () => Promise.resolve(),
  };
}
