import type { SerializedHook } from '../contract/hook.ts';
import { markEnvironmentHook, type HookType } from '../contract/hookTypes.ts';
import type { Logger } from '../observability/logger.ts';
import type { DeliveryPort } from './deliveryPort.ts';
import type { LooseHookEvent } from './runnableHook.ts';

/** What queue mode needs from a producer (`createHookProducer` provides it). */
export type DispatchProducer = {
  enqueue(input: {
    operationId: string;
    type: HookType;
    event: Record<string, unknown>;
    hooks: SerializedHook[];
  }): Promise<{ deliveryIds: string[]; queued: boolean }>;
};

/** A producer the dispatcher owns (and closes): the composition root supplies the factory, so dispatch never imports queue. */
export type OwnedProducer = DispatchProducer & { close(): Promise<void> };
export type OwnedProducerFactory = (options: { env: Record<string, string | undefined>; templateEnv?: string }) => OwnedProducer;

/** JSON-safe copy of an event for queue mode: drops functions (`mock`) and `finalState` (B4a). */
function queueEvent(event: LooseHookEvent): LooseHookEvent {
  const { mock: _mock, finalState: _finalState, ...rest } = event;
  return rest as LooseHookEvent;
}

/**
 * Queue mode (D8): every matching webhook becomes a ledger row and a job; handlers do not run.
 * When the producer cannot record them, the `fallback: 'none'` hooks are this tier's critical
 * failures (D6) and the rest are logged.
 */
export function createQueueDelivery(producer: DispatchProducer, logger: Logger, owned?: OwnedProducer): DeliveryPort {
  return {
    async deliver(operationId, type, event, hooks) {
      const webhooks = hooks.filter((h) => h.webhook !== undefined);
      if (webhooks.length === 0) return [];
      const serialized = webhooks.map((h) => {
        const hook = { id: h.id, type: h.type, ...(h.matcher !== undefined ? { matcher: h.matcher } : {}), webhook: h.webhook! };
        // E4: only hookrelay's own environment hooks may carry a reserved id into the producer.
        return h.env === true ? markEnvironmentHook(hook) : hook;
      });
      try {
        await producer.enqueue({ operationId, type, event: queueEvent(event), hooks: serialized });
        return [];
      } catch (error) {
        logger.error({ operationId, hookType: type, err: error }, 'could not record hook deliveries');
        return webhooks.filter((h) => h.webhook?.fallback === 'none').map((h) => ({ hookId: h.id, cause: error }));
      }
    },
    close: async () => {
      await owned?.close();
    },
  };
}
