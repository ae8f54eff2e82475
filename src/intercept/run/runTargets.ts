import type { JsonObject, JsonValue } from '../../contract/agentHooks.ts';
import { jsonEqual } from '../json/jsonEqual.ts';
import { membersOf, type ModelResponse, type ModelToolCall } from './modelStream.ts';
import { isObject } from '../../util/isObject.ts';

/**
 * What a transform may leave as each point's `target` so the run can still use it (the
 * write-back onto the native value). Each returns a payload-free refusal (a constraint, never a
 * value) that the emitter turns into `host_error:transform_invalid`: the run fails closed
 * instead of going on with the original. Pure.
 */

const ROLES = new Set(['user', 'system', 'external']);

export function refuseInput(target: JsonValue): string | undefined {
  if (!isObject(target) || !('content' in target)) return 'input target must stay an object with `content`';
  return ROLES.has(target.role as string) ? undefined : 'input.role must stay one of user, system, external';
}

export function refuseMessages(target: JsonValue): string | undefined {
  if (!Array.isArray(target)) return 'pre_model_call target must stay an array of messages';
  return target.every((m) => isObject(m) && typeof m.role === 'string') ? undefined : 'every message must stay an object with a string `role`';
}

function isToolCall(v: unknown): boolean {
  return isObject(v) && typeof v.name === 'string' && isObject(v.args) && (v.id === undefined || typeof v.id === 'string');
}

export function refuseResponse(target: JsonValue): string | undefined {
  if (!isObject(target) || !('content' in target)) return 'post_model_call target must stay a response object with `content`';
  if (!Array.isArray(target.tool_calls) || !target.tool_calls.every(isToolCall)) return 'response.tool_calls must stay an array of {id?, name, args}';
  return typeof target.finish_reason === 'string' ? undefined : 'response.finish_reason must stay a string';
}

/**
 * An incremental segment: what was already released cannot be called back, so
 * a transform must keep it as the start of the content; a non-final segment may change only its
 * text (its tool calls and finish reason are not final yet).
 */
export function refuseSegment(released: string, sent: JsonObject | undefined): (target: JsonValue) => string | undefined {
  return (target) => {
    const shape = refuseResponse(target);
    if (shape !== undefined) return shape;
    const t = target as JsonObject;
    if (released.length > 0 && (typeof t.content !== 'string' || !t.content.startsWith(released))) {
      return 'an incremental segment transform must keep the text already released as the start of response.content';
    }
    if (sent !== undefined && !jsonEqual({ ...t, content: null }, { ...sent, content: null })) {
      return 'a non-final incremental segment transform may change only response.content';
    }
    return undefined;
  };
}

export function refuseArgs(target: JsonValue): string | undefined {
  return isObject(target) ? undefined : 'pre_tool_call target must stay a JSON object (the tool arguments)';
}

export function refuseOutput(target: JsonValue): string | undefined {
  return isObject(target) && 'content' in target ? undefined : 'output target must stay an object with `content`';
}

/** The response a permitted post_model_call leaves, back in the loop's spelling. */
export function responseFromTarget(target: JsonValue): ModelResponse {
  const t = target as JsonObject;
  const toolCalls = (t.tool_calls as JsonObject[]).map((c) => {
    const call: ModelToolCall = { name: c.name as string, args: c.args as JsonObject };
    if (typeof c.id === 'string') call.id = c.id;
    return call;
  });
  const response: ModelResponse = { content: t.content ?? null, toolCalls, finishReason: t.finish_reason as string };
  const members = membersOf(t);
  if (members !== undefined) response.members = members;
  return response;
}
