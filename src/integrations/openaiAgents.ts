import type { Agent, AgentInputItem, InputGuardrail, Model, ModelRequest, ModelResponse, OutputGuardrail, Tool } from '@openai/agents';
import type { JsonObject, JsonValue } from '../contract/agentHooks.ts';
import type { AdmittedInput, AgentRun, NativeMessage, RunEnd } from '../interception/run/agentRun.ts';
import { InterceptionBlocked } from '../interception/errors.ts';
import type { ModelToolCall } from '../interception/run/modelStream.ts';
import { type IntegrationOptions, type IntegrationRunOptions, RunBridge, type RunFinish } from './runBridge.ts';

/**
 * `hookrelay/openai-agents`: the OpenAI Agents SDK under AGENT-HOOKS-0.1 and the operation's
 * lifecycle hooks. A run wraps an agent once: its model (pre/post_model_call; `output` over the
 * final answer), its function tools (pre/post_tool_call, beforeToolCall mocks) and two guardrails
 * that trip with the record's reason on an `input` / `output` deny. Imports only types of the SDK.
 */

export type {
  IntegrationOptions as OpenAIAgentsHooksOptions,
  IntegrationRunOptions as OpenAIAgentsRunOptions,
  LifecycleDispatcher,
  RunFinish,
} from './runBridge.ts';

type OutputItem = ModelResponse['output'][number];
type StreamEvent = ModelRequest extends never ? never : Awaited<ReturnType<Model['getStreamedResponse']> extends AsyncIterable<infer E> ? E : never>;
type FunctionCall = Extract<OutputItem, { type: 'function_call' }>;
type AssistantMessage = Extract<OutputItem, { role: 'assistant' }>;
type FunctionToolLike = {
  type: 'function';
  name: string;
  invoke: (ctx: unknown, input: string, details?: { toolCall?: { callId?: string } }) => Promise<unknown>;
};

/** What `tool()` hands the model when `execute` threw (its default `errorFunction`): recognised as a tool failure. */
const SDK_TOOL_ERROR = 'An error occurred while running the tool. Please try again.';

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function parseArgs(input: string): JsonObject {
  if (input.trim() === '') return {};
  try {
    const parsed: unknown = JSON.parse(input);
    return isObject(parsed) ? (parsed as JsonObject) : { input: parsed as JsonValue };
  } catch {
    return { input };
  }
}

function isAssistantMessage(item: OutputItem): item is AssistantMessage {
  return (item as { role?: string }).role === 'assistant' && ((item as { type?: string }).type ?? 'message') === 'message';
}

function isFunctionCall(item: OutputItem): item is FunctionCall {
  return item.type === 'function_call';
}

function textOf(item: AssistantMessage): string {
  return item.content.map((c) => (c.type === 'output_text' ? c.text : '')).join('');
}

function responseOf(output: readonly OutputItem[]) {
  const texts = output.filter(isAssistantMessage).map(textOf);
  const toolCalls: ModelToolCall[] = output.filter(isFunctionCall).map((f) => ({ id: f.callId, name: f.name, args: parseArgs(f.arguments) }));
  return { content: texts.length === 0 ? null : texts.join(''), toolCalls, finishReason: toolCalls.length > 0 ? 'tool_calls' : 'stop' };
}

/** The output items for a verdicted response; the original items when nothing changed. */
function rebuiltOutput(output: readonly OutputItem[], content: JsonValue, calls: readonly ModelToolCall[]): OutputItem[] {
  const before = responseOf(output);
  if (before.content === content && JSON.stringify(before.toolCalls) === JSON.stringify(calls)) return [...output];
  const text = content === null ? undefined : typeof content === 'string' ? content : JSON.stringify(content);
  const firstMessage = output.find(isAssistantMessage);
  const originals = output.filter(isFunctionCall);
  const out: OutputItem[] = output.filter((i) => !isAssistantMessage(i) && !isFunctionCall(i));
  if (text !== undefined) {
    const message: AssistantMessage = {
      ...(firstMessage ?? { type: 'message', role: 'assistant', status: 'completed' }),
      content: [{ type: 'output_text', text }],
    } as AssistantMessage;
    out.push(message);
  }
  calls.forEach((c, i) => {
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
function messagesOf(request: ModelRequest): NativeMessage[] {
  const items: unknown[] = typeof request.input === 'string' ? [{ role: 'user', content: request.input }] : request.input;
  // Items without a role (function calls, their results) ride as `{ role: '#<type>', content: item }`: every message needs both.
  const messages = items.map((item) =>
    isObject(item) && typeof item.role === 'string' ? (item as NativeMessage) : { role: `#${(item as { type?: string }).type}`, content: item },
  );
  return request.systemInstructions !== undefined ? [{ role: 'system', content: request.systemInstructions, '#instructions': true }, ...messages] : messages;
}

function requestOf(request: ModelRequest, sent: readonly NativeMessage[]): ModelRequest {
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

function tripwire(blocked: InterceptionBlocked) {
  const record = blocked.record;
  return {
    tripwireTriggered: true,
    outputInfo: {
      interceptionPoint: record.interception_point,
      reason: record.verdict.reason ?? 'denied',
      message: record.verdict.message,
      sessionId: record.session_id,
      sequence: record.sequence,
    },
  };
}

/** One Agents SDK run: see `createOpenAIAgentsHooks`. */
export class OpenAIAgentsRun {
  readonly #bridge: RunBridge;
  #step = 0;
  #outputBlocked: InterceptionBlocked | undefined;
  /** Trips when `input` (or `agent_startup`) denied; runs before the model (`runInParallel: false`). */
  readonly inputGuardrail: InputGuardrail;
  /** Trips when `output` denied the final answer. */
  readonly outputGuardrail: OutputGuardrail;

  constructor(bridge: RunBridge) {
    this.#bridge = bridge;
    this.inputGuardrail = {
      name: 'hookrelay-input',
      runInParallel: false,
      execute: async () => {
        try {
          await bridge.ready;
          return { tripwireTriggered: false, outputInfo: { interceptionPoint: 'input' } };
        } catch (err) {
          if (err instanceof InterceptionBlocked) return tripwire(err);
          throw err;
        }
      },
    };
    this.outputGuardrail = {
      name: 'hookrelay-output',
      execute: async ({ agentOutput }) => {
        if (this.#outputBlocked !== undefined) return tripwire(this.#outputBlocked);
        if (!bridge.outputJudged) {
          try {
            await bridge.judgeOutput(agentOutput);
          } catch (err) {
            if (err instanceof InterceptionBlocked) return tripwire(err);
            throw err;
          }
        }
        return { tripwireTriggered: false, outputInfo: { interceptionPoint: 'output' } };
      },
    };
  }

  get operationId(): string {
    return this.#bridge.operationId;
  }

  get sessionId(): string {
    return this.#bridge.sessionId;
  }

  get run(): AgentRun {
    return this.#bridge.run;
  }

  get ready(): Promise<AdmittedInput> {
    return this.#bridge.ready;
  }

  /** The final answer as `output` left it (once judged). */
  get output(): JsonValue | undefined {
    return this.#bridge.output;
  }

  /** The model under pre/post_model_call (and `output` over a final answer); streamed responses are judged whole before an event is yielded. */
  wrapModel(model: Model): Model {
    const bridge = this.#bridge;
    const judge = async (
      request: ModelRequest,
      produce: (req: ModelRequest) => Promise<ModelResponse>,
      modelId: string,
    ): Promise<{ response: ModelResponse; original: ModelResponse }> => {
      const step = this.#step++;
      await bridge.beforeStep(step);
      let original: ModelResponse | undefined;
      const { result, outputBlocked } = await bridge.modelCall(
        messagesOf(request),
        async (sent) => {
          original = await produce(requestOf(request, sent));
          return responseOf(original.output);
        },
        { modelId, holdOutputDeny: true },
      );
      const raw = original as ModelResponse;
      // An output deny withholds the answer: the output guardrail then trips with its reason.
      if (outputBlocked !== undefined) this.#outputBlocked = outputBlocked;
      const content = outputBlocked !== undefined ? '' : result.content;
      const response = { ...raw, output: rebuiltOutput(raw.output, content, result.toolCalls) };
      await bridge.afterStep(step, { content, toolCalls: result.toolCalls, usage: raw.usage });
      return { response, original: raw };
    };
    const modelId = (model as { model?: string }).model ?? 'model';
    return {
      ...(model.getRetryAdvice ? { getRetryAdvice: model.getRetryAdvice.bind(model) } : {}),
      getResponse: async (request) => (await judge(request, (req) => model.getResponse(req), modelId)).response,
      async *getStreamedResponse(request) {
        const events: StreamEvent[] = [];
        const { response, original } = await judge(
          request,
          async (req) => {
            let done: ModelResponse | undefined;
            for await (const event of model.getStreamedResponse(req)) {
              events.push(event);
              if (event.type === 'response_done')
                done = { usage: event.response.usage, output: event.response.output, responseId: event.response.id } as ModelResponse;
            }
            if (done === undefined) throw new Error('model stream ended without response_done');
            return done;
          },
          modelId,
        );
        if (response.output.length === original.output.length && response.output.every((item, i) => item === original.output[i])) {
          yield* events;
          return;
        }
        // Changed by a verdict: the caller gets the text and items as judged, never the originals.
        const text = responseOf(response.output).content;
        for (const e of events) if (e.type === 'response_started') yield e;
        if (typeof text === 'string' && text !== '') yield { type: 'output_text_delta', delta: text } as StreamEvent;
        const done = events.find((e) => e.type === 'response_done') as Extract<StreamEvent, { type: 'response_done' }>;
        yield { ...done, response: { ...done.response, output: response.output } } as StreamEvent;
      },
    } as Model;
  }

  /** Function tools run through pre/post_tool_call; a deny is the tool output the model sees (`{ error, reason, message? }`). Other tools pass unchanged. */
  wrapTools<T extends Tool>(tools: readonly T[]): T[] {
    return tools.map((t) => {
      if ((t as { type?: string }).type !== 'function' || typeof (t as unknown as FunctionToolLike).invoke !== 'function') return t;
      const fn = t as unknown as FunctionToolLike;
      const invoke: FunctionToolLike['invoke'] = async (ctx, input, details) => {
        const r = await this.#bridge.toolCall({ id: details?.toolCall?.callId, name: fn.name, args: parseArgs(input) }, async (args) => {
          const out = await fn.invoke(ctx, JSON.stringify(args), details);
          if (out === SDK_TOOL_ERROR) throw new Error(SDK_TOOL_ERROR); // tool() swallowed a throw
          return out;
        });
        return r.kind === 'result' ? r.value : r.message;
      };
      return { ...t, invoke } as T;
    });
  }

  /**
   * The agent wrapped once (a clone: the original is untouched) plus the admitted input to run it
   * with. An `input` deny does not throw here: the input guardrail trips first, before any model call.
   */
  // biome-ignore lint/suspicious/noExplicitAny: the SDK's own bound for any agent (context and output type are the caller's)
  async prepare<A extends Agent<any, any>>(agent: A, options: { model?: Model } = {}): Promise<{ agent: A; input: string }> {
    const model = options.model ?? agent.model;
    if (typeof model === 'string' || model === undefined)
      throw new TypeError('prepare(agent): the agent needs a Model instance (pass { model } when it names a model by string)');
    let input = '';
    try {
      const admitted = await this.#bridge.ready;
      input = typeof admitted.content === 'string' ? admitted.content : JSON.stringify(admitted.content);
    } catch (err) {
      if (!(err instanceof InterceptionBlocked)) throw err;
    }
    const wrapped = agent.clone({
      model: this.wrapModel(model),
      tools: this.wrapTools(agent.tools),
      inputGuardrails: [this.inputGuardrail, ...agent.inputGuardrails],
      outputGuardrails: [this.outputGuardrail, ...agent.outputGuardrails],
    }) as A;
    return { agent: wrapped, input };
  }

  /**
   * Await `run(agent, input)`: ends the run `completed`, `error` (a tripped guardrail included) or
   * `cancelled`, and rethrows a failure. A streamed run (`{ stream: true }`) resolves before it
   * ran: `track` waits for its `completed` (its events stay buffered for the caller to read after)
   * and ends the run by how the stream ended, so a failed stream never ends `completed`.
   */
  async track<R>(call: PromiseLike<R>): Promise<R> {
    let result: R;
    try {
      result = await call;
      const streamed = result as { completed?: unknown; error?: unknown; cancelled?: unknown };
      if (streamed !== null && typeof streamed === 'object' && streamed.completed instanceof Promise) {
        await streamed.completed;
        if (streamed.error !== undefined && streamed.error !== null) throw streamed.error;
        if (streamed.cancelled === true) {
          await this.end({ status: 'cancelled' });
          return result;
        }
      }
    } catch (err) {
      await this.end({ status: 'error', error: err });
      throw err;
    }
    if (!this.#bridge.outputJudged) {
      const finalOutput = (result as { finalOutput?: unknown }).finalOutput;
      try {
        await this.#bridge.judgeOutput(finalOutput ?? null);
      } catch (err) {
        await this.end({ status: 'error', error: err });
        throw err;
      }
    }
    await this.end({ status: 'completed' });
    return result;
  }

  /** End the run (idempotent): agent_shutdown, onError, onComplete. */
  end(how: RunFinish): Promise<RunEnd> {
    return this.#bridge.finish(how);
  }
}

/** A bundle of Agents SDK runs sharing one AGENT-HOOKS-0.1 bundle and one dispatcher. */
export class OpenAIAgentsHooks {
  readonly #options: IntegrationOptions;
  constructor(options: IntegrationOptions) {
    if (options === null || typeof options !== 'object' || typeof options.hooks?.startRun !== 'function')
      throw new TypeError('createOpenAIAgentsHooks({ hooks }): hooks must be an AGENT-HOOKS-0.1 bundle (createAgentHooks)');
    this.#options = options;
  }

  startRun(options: IntegrationRunOptions): OpenAIAgentsRun {
    return new OpenAIAgentsRun(new RunBridge(this.#options, options));
  }
}

/** The Agents SDK integration: `createOpenAIAgentsHooks({ hooks, dispatcher }).startRun({ input, operationId })`. */
export function createOpenAIAgentsHooks(options: IntegrationOptions): OpenAIAgentsHooks {
  return new OpenAIAgentsHooks(options);
}

export { InterceptionBlocked };
