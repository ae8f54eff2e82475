import { randomUUID } from 'node:crypto';
import { SPEC_VERSION, type AgentContext, type InterceptionPoint, type JsonObject, type JsonValue } from '../contract/agentHooks.ts';

export type AgentContextBuilderOptions = {
  agentId: string;
  /** Lowercase framework identifier, `^[a-z0-9_-]+$`. */
  framework: string;
  /** Stable for the whole run; a random UUID when omitted. */
  sessionId?: string;
  /** First sequence this builder hands out (0 = `agent_startup`). */
  startSequence?: number;
  /** Clock for `timestamp` (RFC 3339 UTC). */
  now?: () => Date;
};

/** Optional and namespaced members merged into a built context. */
export type Extra = { extra?: JsonObject };

export type ToolCallInput = { id: string; name: string; args: JsonObject };
export type ModelToolCall = { id?: string; name: string; args: JsonObject };
export type Message = { role: string; content: JsonValue };

/**
 * Builds AgentContexts for one session. Each build consumes the next sequence
 * number synchronously, so numbers are unique and increasing in build order
 * even when emissions then run concurrently.
 */
export class AgentContextBuilder {
  readonly agentId: string;
  readonly framework: string;
  readonly sessionId: string;
  readonly #now: () => Date;
  #sequence: number;

  constructor(options: AgentContextBuilderOptions) {
    this.agentId = options.agentId;
    this.framework = options.framework;
    this.sessionId = options.sessionId ?? randomUUID();
    this.#sequence = options.startSequence ?? 0;
    this.#now = options.now ?? (() => new Date());
  }

  /** The sequence the next built context will carry. */
  get nextSequence(): number {
    return this.#sequence;
  }

  agentStartup(p: { toolsRegistered: string[] } & Extra): AgentContext {
    const agentInit = { tools_registered: [...p.toolsRegistered] };
    return this.#build('agent_startup', { agent_init: agentInit }, agentInit, p.extra);
  }

  input(p: { content: JsonValue; role: 'user' | 'system' | 'external' } & Extra): AgentContext {
    const input = { content: p.content, role: p.role };
    return this.#build('input', { input }, input, p.extra);
  }

  preModelCall(p: { modelId: string; messages: Message[] } & Extra): AgentContext {
    const messages = p.messages.map((m) => ({ ...m }));
    return this.#build('pre_model_call', { model: { id: p.modelId }, messages }, messages, p.extra);
  }

  postModelCall(p: { modelId: string; content: JsonValue; toolCalls: ModelToolCall[]; finishReason: string; members?: JsonObject } & Extra): AgentContext {
    // tool_calls is always present, [] when the model returned none. Members (reasoning, files, …) sit beside them.
    const response = { ...(p.members ?? {}), content: p.content, tool_calls: p.toolCalls.map((t) => ({ ...t })), finish_reason: p.finishReason };
    return this.#build('post_model_call', { model: { id: p.modelId }, response }, response, p.extra);
  }

  preToolCall(p: ToolCallInput & Extra): AgentContext {
    const toolCall = { id: p.id, name: p.name, args: p.args };
    return this.#build('pre_tool_call', { tool_call: toolCall }, p.args, p.extra);
  }

  /** `args` must be the arguments actually passed to the tool (post-transform). */
  postToolCall(p: ToolCallInput & { value: JsonValue; isError?: boolean } & Extra): AgentContext {
    const toolResult = { value: p.value, is_error: p.isError ?? false };
    return this.#build('post_tool_call', { tool_call: { id: p.id, name: p.name, args: p.args }, tool_result: toolResult }, p.value, p.extra);
  }

  output(p: { content: JsonValue } & Extra): AgentContext {
    const output = { content: p.content };
    return this.#build('output', { output }, output, p.extra);
  }

  agentShutdown(p: { reason: 'completed' | 'error' | 'cancelled' } & Extra): AgentContext {
    const summary = { reason: p.reason };
    return this.#build('agent_shutdown', { summary }, summary, p.extra);
  }

  #build(point: InterceptionPoint, conditional: JsonObject, target: JsonValue, extra: JsonObject | undefined): AgentContext {
    // Deep copies: the target and its alias must not share structure (write-back keeps them equal).
    const ctx = {
      ...structuredClone(extra ?? {}),
      spec: SPEC_VERSION,
      interception_point: point,
      timestamp: this.#now().toISOString(),
      sequence: this.#sequence++,
      agent: { id: this.agentId, framework: this.framework },
      session: { id: this.sessionId },
      ...structuredClone(conditional),
      target: structuredClone(target),
    };
    return ctx as AgentContext;
  }
}
