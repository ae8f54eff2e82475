import { executeToolCallWebhook, type ToolCallWebhookResult } from '../control/decisionWebhook.ts';
import type { ControlHook } from '../control/evaluateControls.ts';
import { assemblePayload } from '../payload/assemblePayload.ts';
import type { WebhookPayloadBuilder } from '../payload/buildPayload.ts';
import type { SendContext } from './sendContext.ts';

export type ControlRunner = (hook: ControlHook, event: Record<string, unknown>, signal: AbortSignal | undefined) => Promise<ToolCallWebhookResult>;

/** R1–R7: one decision webhook round trip for a control hook (payload, signing, send, parse). */
export function createControlRunner(send: SendContext, payloads: WebhookPayloadBuilder): ControlRunner {
  return async (hook, event, signal) => {
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
    });
  };
}
