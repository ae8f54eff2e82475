import type { AgentInputItem, Model, ModelRequest, ModelResponse } from '@openai/agents';
import type { JsonObject, JsonValue } from '../contract/agentHooks.ts';
import type { NativeMessage } from '../intercept/run/agentRun.ts';
import type { ModelToolCall } from '../intercept/run/modelStream.ts';
import { isObject } from '../util/isObject.ts';
import { parseArgs } from './runBridge.ts';

/**
 * The Agents SDK's model items translated to and from the run adapter's shapes: the request's
 * input as messages, a response as content plus tool calls (function calls, handoffs and the
 * SDK's other call items alike, so `post_model_call` sees every call), and back.
 */

export type OutputItem = ModelResponse['output'][number];
export type StreamEvent = Awaited<ReturnType<Model['getStreamedResponse']> extends AsyncIterable<infer E> ? E : never>;
type FunctionCall = Extract<OutputItem, { type: 'function_call' }>;
type AssistantMessage = Extract<OutputItem, { role: 'assistant' }>;

/** Call items the SDK runs itself or the provider ran (hosted tools, computer, shell, apply_patch): judged at post_model_call with the function calls. */
const OTHER_CALLS: Record<string, (item: Record<string, unknown>) => JsonObject> = {
  hosted_tool_call: (i) => (typeof i.arguments === 'string' ? parseArgs(i.arguments) : {}),
  computer_call: (i) => ({ action: (i.action ?? i.actions ?? null) as JsonValue }),
  shell_call: (i) => ({ action: (i.action ?? null) as JsonValue }),
  apply_patch_call: (i) => ({ operation: (i.operation ?? null) as JsonValue }),
};

function isAssistantMessage(item: OutputItem): item is AssistantMessage {
  return (item as { role?: string }).role === 'assistant' && ((item as { type?: string }).type ?? 'message') === 'message';
}

function isFunctionCall(item: OutputItem): item is FunctionCall {
  return item.type === 'function_call';
}

function otherCallOf(item: OutputItem): ModelToolCall | undefined {
  const args = OTHER_CALLS[item.type ?? ''];
  if (args === undefined) return undefined;
  const i = item as unknown as Record<string, unknown>;
  const name = item.type === 'hosted_tool_call' ? String(i.name) : String(item.type).replace(/_call$/, '');
  return { id: String(i.callId ?? i.id ?? name), name, args: args(i) };
}

function textOf(item: AssistantMessage): string {
  return item.content.map((c) => (c.type === 'output_text' ? c.text : '')).join('');
}

function callsOf(output: readonly OutputItem[]): ModelToolCall[] {
  const calls: ModelToolCall[] = [];
  for (const item of output) {
    if (isFunctionCall(item)) calls.push({ id: item.callId, name: item.name, args: parseArgs(item.arguments) });
    else {
      const other = otherCallOf(item);
      if (other !== undefined) calls.push(other);
    }
  }
  return calls;
}

export function responseOf(output: readonly OutputItem[]) {
  const texts = output.filter(isAssistantMessage).map(textOf);
  const toolCalls = callsOf(output);
  return { content: texts.length === 0 ? null : texts.join(''), toolCalls, finishReason: toolCalls.length > 0 ? 'tool_calls' : 'stop' };
}

/** The output items for a verdicted response; the original items when nothing changed. A call item the verdict removed is dropped (it never runs). */
export function rebuiltOutput(output: readonly OutputItem[], content: JsonValue, calls: readonly ModelToolCall[]): OutputItem[] {
  const before = responseOf(output);
  if (before.content === content && JSON.stringify(before.toolCalls) === JSON.stringify(calls)) return [...output];
  const text = content === null ? undefined : typeof content === 'string' ? content : JSON.stringify(content);
  const firstMessage = output.find(isAssistantMessage);
  const originals = output.filter(isFunctionCall);
  const kept = new Set(calls.map((c) => c.id));
  // Other call items are kept as the model produced them when their call survived the verdict (their arguments are not rewritten).
  const out: OutputItem[] = output.filter(
    (i) => !isAssistantMessage(i) && !isFunctionCall(i) && (otherCallOf(i) === undefined || kept.has(otherCallOf(i)?.id)),
  );
  if (text !== undefined) {
    const message: AssistantMessage = {
      ...(firstMessage ?? { type: 'message', role: 'assistant', status: 'completed' }),
      content: [{ type: 'output_text', text }],
    } as AssistantMessage;
    out.push(message);
  }
  const others = new Set(output.map(otherCallOf).flatMap((c) => (c === undefined ? [] : [c.id])));
  calls.forEach((c, i) => {
    if (c.id !== undefined && others.has(c.id)) return;
    const original = originals.find((o) => o.callId === c.id);
    out.push({
      ...(original ?? { type: 'function_call', status: 'completed' }),
      callId: c.id ?? original?.callId ?? `hookrelay-call-${i}`,
      name: c.name,
      arguments: JSON.stringify(c.args),
    } as FunctionCall);
  });
  return out;
}

/** The request's input as messages with a `role` (function calls and their results carry their `type` as role). */
export function messagesOf(request: ModelRequest): NativeMessage[] {
  const items: unknown[] = typeof request.input === 'string' ? [{ role: 'user', content: request.input }] : request.input;
  // Items without a role (function calls, their results) ride as `{ role: '#<type>', content: item }`: every message needs both.
  const messages = items.map((item) =>
    isObject(item) && typeof item.role === 'string' ? (item as NativeMessage) : { role: `#${(item as { type?: string }).type}`, content: item },
  );
  return request.systemInstructions !== undefined ? [{ role: 'system', content: request.systemInstructions, '#instructions': true }, ...messages] : messages;
}

export function requestOf(request: ModelRequest, sent: readonly NativeMessage[]): ModelRequest {
  let systemInstructions: string | undefined;
  const input: AgentInputItem[] = [];
  for (const m of sent) {
    if (m['#instructions'] === true) {
      systemInstructions = typeof m.content === 'string' ? m.content : JSON.stringify(m.content);
      continue;
    }
    input.push((m.role.startsWith('#') ? m.content : m) as AgentInputItem);
  }
  const next: ModelRequest = { ...request, input };
  if (systemInstructions !== undefined) next.systemInstructions = systemInstructions;
  else delete next.systemInstructions;
  return next;
}

/**
 * The request with each denied handoff's output replaced by the deny: the SDK records a denied
 * handoff as a transfer to the current agent, and the model sees the verdict instead.
 */
export function withDeniedHandoffs(request: ModelRequest, denied: ReadonlyMap<string, JsonValue>): ModelRequest {
  if (denied.size === 0 || typeof request.input === 'string') return request;
  let changed = false;
  const input = request.input.map((item) => {
    const i = item as { type?: string; callId?: string };
    if (i.type !== 'function_call_result' || i.callId === undefined || !denied.has(i.callId)) return item;
    changed = true;
    return { ...item, output: { type: 'text', text: JSON.stringify(denied.get(i.callId)) } } as AgentInputItem;
  });
  return changed ? { ...request, input } : request;
}
