import type { BlockedToolResult } from '../contract/toolContext.ts';

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

/** R5b: a denied afterToolCall replaces the whole result. */
export function blockedAfterResult(reason: string): BlockedToolResult {
  return { content: reason, success: false, error: 'hook_denied', state: { phase: 'afterToolCall', type: 'blocked', reason } };
}
