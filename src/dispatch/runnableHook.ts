import type { ParsedAgentHook, ParsedSerializedHook } from '../contract/hook.ts';
import { assertStorableEvent } from '../contract/storableText.ts';

/** A hook ready to run: parsed, with `env` marking an operator-trusted environment hook. */
export type RunnableHook = (ParsedAgentHook | ParsedSerializedHook) & { env?: boolean };

/** What dispatch accepts at run time (D10: loose): an object with a string operationId. */
export type LooseHookEvent = Record<string, unknown> & { operationId: string };

export function assertEvent(event: unknown): asserts event is LooseHookEvent {
  // D10: loose validation; any object with a string operationId.
  if (event === null || typeof event !== 'object' || typeof (event as { operationId?: unknown }).operationId !== 'string') {
    throw new TypeError('event must be an object with a string operationId');
  }
  for (const key of ['stepIndex', 'callIndex'] as const) {
    const v = (event as Record<string, unknown>)[key];
    if (v !== undefined && (typeof v !== 'number' || !Number.isInteger(v) || v < 0)) throw new TypeError(`event.${key} must be an integer ≥ 0`);
  }
  // An EventValidationError naming the path: the event may be stored (queue mode, deferred results).
  assertStorableEvent(event, 'dispatch');
}
