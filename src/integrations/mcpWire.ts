import type { JsonObject, JsonValue } from '../contract/agentHooks.ts';
import { isObject } from '../util/isObject.ts';
import { withDefined } from '../util/withDefined.ts';

/**
 * MCP JSON-RPC messages as the connection guard (mcpGuard.ts) sees them: one snapshot per
 * message, classified by what it can do. Pure: no SDK is loaded; both majors (1.x
 * `@modelcontextprotocol/sdk`, 2.x `@modelcontextprotocol/client`) put the same JSON on the wire.
 */

export type WireMessage = Record<string, unknown>;
export type RequestId = string | number;

export type Classified =
  | { kind: 'request'; id: RequestId; method: string; params: Record<string, unknown> }
  | { kind: 'notification'; method: string }
  | { kind: 'response'; id: RequestId }
  | { kind: 'invalid'; what: string };

/** A `tools/call` result, as `Client.callTool` returns it. */
export type McpCallToolResult = { content?: unknown[]; structuredContent?: unknown; isError?: boolean; [key: string]: unknown };

/**
 * Client requests that neither run a tool nor return a tool's output (both protocol eras:
 * 2025-xx and 2026-07-28): sent as they are. `tools/call` and `tasks/result` are judged; any other
 * method is refused unless the caller allows it by name.
 */
export const PASSED_REQUESTS: ReadonlySet<string> = new Set([
  'initialize',
  'ping',
  'server/discover',
  'completion/complete',
  'logging/setLevel',
  'prompts/get',
  'prompts/list',
  'resources/list',
  'resources/templates/list',
  'resources/read',
  'resources/subscribe',
  'resources/unsubscribe',
  'subscriptions/listen',
  'tools/list',
  'tasks/get',
  'tasks/list',
  'tasks/cancel',
]);

/** Notifications a client sends (lifecycle, cancellation, progress, list changes): none runs a tool. */
export const PASSED_NOTIFICATIONS: ReadonlySet<string> = new Set([
  'notifications/initialized',
  'notifications/cancelled',
  'notifications/progress',
  'notifications/roots/list_changed',
  'notifications/tasks/status',
  'notifications/message',
]);

/** Params of a retried `tools/call` leg (2026-07-28 `input_required`): the same call, continued. */
const RETRY_KEYS = ['inputResponses', 'requestState'] as const;

/**
 * A snapshot of an outgoing message: structured-cloned once, so every getter and proxy trap
 * answers exactly once, and what is judged is what is sent. A function, a symbol or a proxy
 * cannot be cloned: such a message is refused unsent.
 */
export function snapshotMessage(message: unknown): WireMessage {
  let copy: unknown;
  try {
    copy = structuredClone(message);
  } catch {
    throw new TypeError('MCP message refused unsent: it is not plain data (a function, a proxy or a class instance with private state cannot be judged)');
  }
  if (!isObject(copy)) throw new TypeError('MCP message refused unsent: a JSON-RPC message is an object (batches are not judged)');
  return copy;
}

function isId(v: unknown): v is RequestId {
  return typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v));
}

export function classify(m: WireMessage): Classified {
  const method = m.method;
  if (typeof method === 'string') {
    if (m.params !== undefined && !isObject(m.params)) return { kind: 'invalid', what: `${method} with params that are not an object` };
    const params = (m.params ?? {}) as Record<string, unknown>;
    if (m.id === undefined) return { kind: 'notification', method };
    if (!isId(m.id)) return { kind: 'invalid', what: `${method} with an id that is neither a string nor a number` };
    return { kind: 'request', id: m.id, method, params };
  }
  if (method !== undefined) return { kind: 'invalid', what: 'a message whose method is not a string' };
  if (isId(m.id) && (m.result !== undefined || m.error !== undefined)) return { kind: 'response', id: m.id };
  return { kind: 'invalid', what: 'a message that is neither a request, a notification nor a response' };
}

/** The key a response is matched by (a string id and a number id never collide). */
export function idKey(id: RequestId): string {
  return `${typeof id}:${id}`;
}

/** An incoming response's id, when the message is one. */
export function responseId(m: unknown): RequestId | undefined {
  if (!isObject(m) || m.method !== undefined || !isId(m.id)) return undefined;
  return m.result !== undefined || m.error !== undefined ? m.id : undefined;
}

export function isRetryLeg(params: Record<string, unknown>): boolean {
  return RETRY_KEYS.some((k) => params[k] !== undefined);
}

/** A 2026-07-28 `input_required` result: the server asks for input before the tool completes (not the tool's output). */
export function isInputRequired(result: unknown): boolean {
  return isObject(result) && result.resultType === 'input_required';
}

/** A task-augmented call's creation answer: `{ task: { taskId } }` — a handle, the output comes from `tasks/result`. */
export function createdTaskId(result: unknown): string | undefined {
  if (!isObject(result) || !isObject(result.task)) return undefined;
  const id = result.task.taskId;
  return typeof id === 'string' && id !== '' ? id : undefined;
}

/** The judged value of a result: its content and structured content (not `_meta`, not `isError`, which is `is_error`). */
export function judgedValue(result: McpCallToolResult): JsonObject {
  const value: JsonObject = { content: (result.content ?? []) as JsonValue };
  if (result.structuredContent !== undefined) value.structuredContent = result.structuredContent as JsonValue;
  return value;
}

/** A verdicted value back as a result: `{ content, structuredContent? }` as left, anything else as one text item. */
export function resultOf(value: JsonValue, original: McpCallToolResult | undefined, isError: boolean): McpCallToolResult {
  const base: McpCallToolResult = { ...(original ?? {}) };
  delete base.structuredContent;
  if (isObject(value) && Array.isArray(value.content)) {
    base.content = value.content;
    if (value.structuredContent !== undefined) base.structuredContent = value.structuredContent;
  } else {
    base.content = [{ type: 'text', text: typeof value === 'string' ? value : JSON.stringify(value) }];
  }
  if (isError) base.isError = true;
  else delete base.isError;
  return base;
}

export function deniedResult(content: JsonValue): McpCallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(content) }], isError: true };
}

export function resultResponse(id: RequestId, result: unknown): WireMessage {
  return { jsonrpc: '2.0', id, result };
}

/** JSON-RPC error code of an answer hookrelay gave instead of the server (in the implementation-defined server-error range). */
const HOOKRELAY_REFUSED = -32099;

/** A JSON-RPC error answer hookrelay gives in the server's stead (the request never reached it, or its answer is withheld). */
export function errorResponse(id: RequestId, message: string, data?: JsonValue): WireMessage {
  return { jsonrpc: '2.0', id, error: { code: HOOKRELAY_REFUSED, message, ...withDefined({ data }) } };
}
