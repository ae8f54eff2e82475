import type { CriticalFailure } from '../contract/errors.ts';
import type { HookType } from '../contract/hookTypes.ts';
import type { LooseHookEvent, RunnableHook } from './runnableHook.ts';

/**
 * Where a dispatch's matching notification hooks go: run in-process (local mode) or recorded
 * for the worker (queue mode). Returns the tier's critical failures (D6); never throws for an
 * ordinary failure (D5).
 */
export type DeliveryPort = {
  deliver(operationId: string, type: HookType, event: LooseHookEvent, hooks: readonly RunnableHook[]): Promise<CriticalFailure[]>;
  close(): Promise<void>;
};
