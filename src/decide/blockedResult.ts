import type { BlockedToolResult, ToolCallResult } from '../contract/toolContext.ts';

/** R5: the reason and content of a control error under `onError: 'block'`. */
export const HOOK_CONTROL_ERROR = 'hook_control_error';

/** R2: the default reason when a deny carries no non-empty reason. */
export function defaultDenyReason(type: 'beforeToolCall' | 'afterToolCall'): string {
  return `Blocked by ${type} hook.`;
}

/** R5b: a blocked beforeToolCall: no attempt, no mock, no execution, no cost. */
export function blockedBeforeResult(reason: string): BlockedToolResult {
  return { content: reason, success: false, error: 'hook_denied', state: { type: 'blocked', reason }, executionTime: 0 };
}

/**
 * R5b: a denied afterToolCall replaces the whole result. The tool did run, so the run metadata
 * of `original` (`executionTime`, `deviceExecutionTime`, `stop`) is kept beside the denial, as
 * LobeHub keeps it; nothing of its output is.
 */
export function blockedAfterResult(reason: string, original?: ToolCallResult): BlockedToolResult {
  const blocked: BlockedToolResult = { content: reason, success: false, error: 'hook_denied', state: { phase: 'afterToolCall', type: 'blocked', reason } };
  if (typeof original?.executionTime === 'number') blocked.executionTime = original.executionTime;
  if (typeof original?.deviceExecutionTime === 'number') blocked.deviceExecutionTime = original.deviceExecutionTime;
  if (typeof original?.stop === 'boolean') blocked.stop = original.stop;
  return blocked;
}
