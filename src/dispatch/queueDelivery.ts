import { HookConfigError } from '../contract/errors.ts';
import type { SerializedHook } from '../contract/hook.ts';
import { markEnvironmentHook, type HookType } from '../contract/hookTypes.ts';
import type { Logger } from '../observability/logger.ts';
import type { DeliveryPort, DeliveryReport } from './deliveryPort.ts';
import type { LooseHookEvent } from './runnableHook.ts';
import { withDefined } from '../util/withDefined.ts';
import { DEFAULT_TENANT } from '../contract/tenant.ts';

/** What queue mode needs from a producer (`createHookProducer` provides it). */
export type DispatchProducer = {
  enqueue(input: {
    operationId: string;
    type: HookType;
    event: Record<string, unknown>;
    hooks: SerializedHook[];
    /** N1: the operation's tenant. */
    tenant?: string;
  }): Promise<{ deliveryIds: string[]; queued: boolean; spooled?: boolean }>;
};

/** A producer the dispatcher owns (and closes): the composition root supplies the factory, so dispatch never imports queue. */
export type OwnedProducer = DispatchProducer & { close(): Promise<void> };
export type OwnedProducerFactory = (options: { env: Record<string, string | undefined>; templateEnv?: string; logger?: Logger }) => OwnedProducer;

/** JSON-safe copy of an event for queue mode: drops functions (`mock`) and `finalState` (B4a). */
function queueEvent(event: LooseHookEvent): LooseHookEvent {
  const { mock: _mock, finalState: _finalState, ...rest } = event;
  return rest as LooseHookEvent;
}

/** The pending hook a producer's HookConfigError names (by id, else by its index in the batch). */
function refusedHook<T extends { hook: { id: string } }>(pending: readonly T[], error: HookConfigError): T | undefined {
  if (error.hookId !== undefined) return pending.find((p) => p.hook.id === error.hookId);
  return error.index !== undefined ? pending[error.index] : undefined;
}

/**
 * Queue mode (D8): every matching webhook becomes a ledger row and a job (or a line in the
 * producer's spool while Postgres is away, F1); handlers do not run. When the producer cannot
 * accept them, the `fallback: 'none'` hooks are this tier's critical failures (D6) and the rest
 * are reported as not accepted (F1: never only a log line); a single hook the producer refuses is
 * dropped alone (D5).
 */
export function createQueueDelivery(producer: DispatchProducer, logger: Logger, owned?: OwnedProducer): DeliveryPort {
  return {
    async deliver(operationId, type, event, hooks, tenant) {
      const webhooks = hooks.filter((h) => h.webhook !== undefined);
      const report: DeliveryReport = { critical: [], notAccepted: [] };
      if (webhooks.length === 0) return report;
      const serialized = webhooks.map((h) => {
        const hook = { id: h.id, type: h.type, ...withDefined({ matcher: h.matcher }), webhook: h.webhook! };
        // E4: only hookrelay's own environment hooks may carry a reserved id into the producer.
        return h.env === true ? markEnvironmentHook(hook) : hook;
      });
      let pending = webhooks.map((hook, i) => ({ hook, serialized: serialized[i]! }));
      // Bounded: each pass either records the rest or drops the one hook the producer refused.
      while (pending.length > 0) {
        try {
          await producer.enqueue({
            operationId,
            type,
            event: queueEvent(event),
            hooks: pending.map((p) => p.serialized),
            ...(tenant !== undefined && tenant !== DEFAULT_TENANT ? { tenant } : {}),
          });
          return report;
        } catch (error) {
          // D5: a hook the producer refuses by name (W2: an unlisted template) is refused before
          // anything is stored; it is skipped alone, as local mode skips it at send time, and the
          // rest are recorded. Any other error concerns the whole batch.
          const refused = error instanceof HookConfigError ? refusedHook(pending, error) : undefined;
          const lost = refused ? [refused] : pending;
          logger.error({ operationId, hookType: type, hookIds: lost.map((p) => p.hook.id), err: error }, 'could not record hook deliveries');
          for (const { hook } of lost) {
            if (hook.webhook?.fallback === 'none') report.critical.push({ hookId: hook.id, cause: error });
            else report.notAccepted.push({ hookId: hook.id, error });
          }
          pending = refused ? pending.filter((p) => p !== refused) : [];
        }
      }
      return report;
    },
    close: async () => {
      await owned?.close();
    },
  };
}
