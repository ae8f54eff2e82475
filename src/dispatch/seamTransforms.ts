import type { JsonValue } from '../contract/agentHooks.ts';
import { ToolCallResultSchema, type ToolCallResult } from '../contract/toolContext.ts';
import { isObject } from '../util/isObject.ts';

/**
 * What a transform may leave as the tool seam's `target` (I4). The seam carries only what the
 * runtime can consume; anything else is refused inside the emission (`acceptTarget`), so it is
 * recorded and blocked as `host_error:transform_invalid` instead of the original going on.
 */

/** Payload-free refusal details: they name the constraint, never the value. */
export const ARGS_NOT_OBJECT = 'pre_tool_call target must stay a JSON object (the tool arguments)';
export const RESULT_NOT_CARRIABLE = 'post_tool_call target must be a tool result object ({content, success}), a string or an array';

/** pre_tool_call: the tool takes an arguments object; nothing else can be passed to it. */
export function refuseArgs(target: JsonValue): string | undefined {
  return isObject(target) ? undefined : ARGS_NOT_OBJECT;
}

/** post_tool_call: a whole tool result, or a string / array the seam carries as `content`. */
export function refuseResult(target: JsonValue): string | undefined {
  if (typeof target === 'string' || Array.isArray(target)) return undefined;
  return isObject(target) && ToolCallResultSchema.safeParse(target).success ? undefined : RESULT_NOT_CARRIABLE;
}

/**
 * The result a post_tool_call transform leaves (after `refuseResult` accepted it). An object is
 * the new result as is. A string or array becomes `content`; `success` and the run metadata
 * (`executionTime`, `deviceExecutionTime`, `stop`) are kept, while `error`, `state` and every
 * other member of the original are dropped: the transform replaced the whole result, so nothing
 * of the original output may ride along beside the replacement.
 */
export function resultFromTarget(target: JsonValue, original: ToolCallResult): ToolCallResult {
  if (isObject(target)) return target as ToolCallResult;
  const result: ToolCallResult = { content: target, success: original.success };
  if (original.executionTime !== undefined) result.executionTime = original.executionTime;
  if (original.deviceExecutionTime !== undefined) result.deviceExecutionTime = original.deviceExecutionTime;
  if (original.stop !== undefined) result.stop = original.stop;
  return result;
}
