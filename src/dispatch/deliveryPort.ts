import type { CriticalFailure, NotAcceptedDelivery } from '../contract/errors.ts';
import type { HookType } from '../contract/hookTypes.ts';
import type { LooseHookEvent, RunnableHook } from './runnableHook.ts';

/** What one dispatch's deliveries came to: the tier's critical failures (D6), and the ordinary hooks not accepted (F1, D5). */
export type DeliveryReport = { critical: CriticalFailure[]; notAccepted: NotAcceptedDelivery[] };

/**
 * Where a dispatch's matching notification hooks go: run in-process (local mode) or recorded
 * for the worker (queue mode). Never throws for an ordinary failure (D5): the critical failures
 * are thrown by the dispatcher after the tier (D6), the hooks queue mode could not record are
 * reported (F1).
 */
export type DeliveryPort = {
  /** `tenant`: the operation's (N1), which queue mode stores with each delivery. */
  deliver(operationId: string, type: HookType, event: LooseHookEvent, hooks: readonly RunnableHook[], tenant?: string): Promise<DeliveryReport>;
  close(): Promise<void>;
};
