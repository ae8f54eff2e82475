import type { JsonObject, JsonValue } from '../../contract/agentHooks.ts';
import type { ModelToolCall } from '../builder.ts';
import { isObject } from '../../util/isObject.ts';

/**
 * The model side of a run, in the shapes agent loops already use: a whole response (as
 * `generateText` returns it) or a stream of parts (as `streamText`'s `fullStream` yields them).
 * Pure: turning parts into the response `post_model_call` judges.
 */

export type { ModelToolCall };

/**
 * One model response: what `post_model_call` judges and the loop then uses. `members` are the
 * further model output a framework judges with it (reasoning, files, sources, …), placed beside
 * `content` in `response` and read back from the verdict's target.
 */
export type ModelResponse = { content: JsonValue; toolCalls: ModelToolCall[]; finishReason: string; members?: JsonObject };

/** What a model call may return when it does not stream; omitted members default (`null`, `[]`, `stop`/`tool_calls`). */
export type ModelResponseInput = { content?: JsonValue; toolCalls?: ModelToolCall[]; finishReason?: string; members?: JsonObject };

/** The `response` keys the run owns; `members` cannot use them. */
const RESPONSE_KEYS = new Set(['content', 'tool_calls', 'finish_reason']);

/**
 * One part of a streamed response: a text delta (a bare string is one too), a complete tool
 * call, or the finish reason. Parts of other types (reasoning, step markers, …) are ignored.
 */
export type ModelStreamPart =
  | string
  | { type: 'text-delta'; text: string }
  | { type: 'tool-call'; toolCallId?: string; toolName: string; args: JsonObject }
  | { type: 'finish'; finishReason: string }
  | { type: 'response-members'; members: JsonObject }
  | { type: string; [key: string]: unknown };

/** A normalized part; `null` for one the adapter does not carry. */
export type StreamEvent =
  | { kind: 'text'; text: string }
  | { kind: 'tool_call'; call: ModelToolCall }
  | { kind: 'finish'; reason: string }
  | { kind: 'members'; members: JsonObject }
  | null;

export function isAsyncIterable(value: unknown): value is AsyncIterable<unknown> {
  return value !== null && typeof value === 'object' && typeof (value as { [Symbol.asyncIterator]?: unknown })[Symbol.asyncIterator] === 'function';
}

/** The finish reason a response without one gets. */
function defaultFinishReason(toolCalls: readonly ModelToolCall[]): string {
  return toolCalls.length > 0 ? 'tool_calls' : 'stop';
}

/** Throws a TypeError naming the member for a shape the adapter cannot judge (caller bug, not policy). */
export function normalizeResponse(raw: unknown): ModelResponse {
  if (!isObject(raw))
    throw new TypeError('a model call must return a response object ({ content, toolCalls?, finishReason? }) or an async iterable of stream parts');
  const toolCalls = raw.toolCalls === undefined ? [] : raw.toolCalls;
  if (!Array.isArray(toolCalls)) throw new TypeError('response.toolCalls must be an array');
  const calls = toolCalls.map((t, i) => normalizeToolCall(t, `response.toolCalls[${i}]`));
  if (raw.finishReason !== undefined && typeof raw.finishReason !== 'string') throw new TypeError('response.finishReason must be a string');
  const response: ModelResponse = {
    content: (raw.content ?? null) as JsonValue,
    toolCalls: calls,
    finishReason: (raw.finishReason as string | undefined) ?? defaultFinishReason(calls),
  };
  if (raw.members !== undefined) response.members = normalizeMembers(raw.members, 'response.members');
  return response;
}

function normalizeMembers(raw: unknown, where: string): JsonObject {
  if (!isObject(raw)) throw new TypeError(`${where} must be an object`);
  for (const key of Object.keys(raw))
    if (RESPONSE_KEYS.has(key)) throw new TypeError(`${where}.${key}: content, tool_calls and finish_reason are the run's own`);
  return raw as JsonObject;
}

/** The members a verdict's response target carries beside content, tool_calls and finish_reason; undefined when none. */
export function membersOf(target: JsonObject): JsonObject | undefined {
  const members: JsonObject = {};
  for (const [key, value] of Object.entries(target)) if (!RESPONSE_KEYS.has(key)) members[key] = value;
  return Object.keys(members).length > 0 ? members : undefined;
}

function normalizeToolCall(raw: unknown, where: string): ModelToolCall {
  if (!isObject(raw) || typeof raw.name !== 'string') throw new TypeError(`${where}.name must be a string`);
  if (!isObject(raw.args)) throw new TypeError(`${where}.args must be an object`);
  const call: ModelToolCall = { name: raw.name, args: raw.args as JsonObject };
  if (raw.id !== undefined) {
    if (typeof raw.id !== 'string') throw new TypeError(`${where}.id must be a string`);
    call.id = raw.id;
  }
  return call;
}

export function normalizePart(part: unknown): StreamEvent {
  if (typeof part === 'string') return { kind: 'text', text: part };
  if (!isObject(part)) throw new TypeError('a stream part must be a string or an object with a `type`');
  switch (part.type) {
    case 'text-delta': {
      const text = part.text ?? part.textDelta; // `textDelta`: the AI SDK 4 spelling
      if (typeof text !== 'string') throw new TypeError('a text-delta part needs a string `text`');
      return { kind: 'text', text };
    }
    case 'tool-call': {
      const call = normalizeToolCall({ id: part.toolCallId, name: part.toolName, args: part.args ?? part.input }, 'tool-call part');
      return { kind: 'tool_call', call };
    }
    case 'finish':
      if (typeof part.finishReason !== 'string') throw new TypeError('a finish part needs a string `finishReason`');
      return { kind: 'finish', reason: part.finishReason };
    case 'response-members':
      return { kind: 'members', members: normalizeMembers(part.members, "a response-members part's members") };
    default:
      return null;
  }
}

/** The response assembled from the parts received so far. */
export class StreamAssembly {
  /** Text chunks in arrival order (what a buffered release replays when nothing was transformed). */
  readonly chunks: string[] = [];
  readonly toolCalls: ModelToolCall[] = [];
  finishReason: string | undefined;
  /** The latest `response-members` part: the framework sends them whole each time they grow. */
  members: JsonObject | undefined;

  add(event: StreamEvent): void {
    if (event === null) return;
    if (event.kind === 'text') this.chunks.push(event.text);
    else if (event.kind === 'tool_call') this.toolCalls.push(event.call);
    else if (event.kind === 'members') this.members = event.members;
    else this.finishReason = event.reason;
  }

  get text(): string {
    return this.chunks.join('');
  }

  /** Text-only streams carry a string; a stream that produced no text at all carries `null`, as a tool-only response does. */
  /** The finish part's reason, else what a response with these tool calls defaults to. */
  get effectiveFinishReason(): string {
    return this.finishReason ?? defaultFinishReason(this.toolCalls);
  }

  response(): ModelResponse {
    const content = this.chunks.length === 0 ? null : this.text;
    const response: ModelResponse = { content, toolCalls: [...this.toolCalls], finishReason: this.effectiveFinishReason };
    if (this.members !== undefined) response.members = this.members;
    return response;
  }
}
