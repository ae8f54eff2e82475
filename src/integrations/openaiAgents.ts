import type {
  Agent,
  AgentToolOptions,
  AgentToolOptionsWithDefault,
  ApplyPatchResult,
  Editor,
  EditorInvocationContext,
  FunctionTool,
  Handoff,
  InputGuardrail,
  Model,
  ModelProvider,
  ModelRequest,
  ModelResponse,
  OutputGuardrail,
  RunResult,
  RunState,
  Runner,
  Shell,
  ShellAction,
  StreamedRunResult,
  Tool,
} from '@openai/agents';
import type { JsonValue } from '../contract/agentHooks.ts';
import { InterceptionBlocked, InterceptionBlockedError } from '../contract/errors.ts';
import type { ModelToolCall } from '../intercept/run/modelStream.ts';
import { AgentGraph, type AnyAgent, newClones } from './openaiAgentsGraph.ts';
import { messagesOf, rebuiltOutput, requestOf, responseOf, type StreamEvent, withDeniedHandoffs } from './openaiAgentsItems.ts';
import { defaultModelProvider, loadSdk } from './openaiAgentsSdk.ts';
import { inHookrelaySpan } from './openaiAgentsTracing.ts';
import { installTurnSeam, type TurnJudge, withinRun } from './openaiAgentsSeam.ts';
import {
  type BridgedToolResult,
  checkIntegrationOptions,
  type IntegrationOptions,
  type IntegrationRunOptions,
  ModelBridgedRun,
  parseArgs,
  RunBridge,
} from './runBridge.ts';
import { withDefined } from '../util/withDefined.ts';
import { isObject } from '../util/isObject.ts';

/**
 * `hookrelay/openai-agents`: the OpenAI Agents SDK under AGENT-HOOKS-0.1 and the operation's
 * lifecycle hooks. A run wraps an agent once, with every agent the run can reach: their models
 * (pre/post_model_call; `output` over the final answer), function and MCP tools and handoffs
 * (pre/post_tool_call, beforeToolCall mocks) and two guardrails that trip with the record's
 * reason on an `input` / `output` deny — and judges again at every turn what the SDK's runner is
 * about to offer and run (openaiAgentsSeam.ts), however the agent graph was built, cloned or
 * resumed. Loads the SDK itself only when `prepare()` runs.
 */

/** How `prepare()` resolves models and which tools it may let through unjudged. */
export type PrepareOptions = {
  /** The top agent's model instead of its own (a Model, or a name resolved through `modelProvider`). */
  model?: Model | string;
  /** Resolves model names and the default model (`''`); default the SDK's own provider, as a `Runner` without `modelProvider` uses. Pass the one you give `Runner`. */
  modelProvider?: ModelProvider;
  /** Tools hookrelay cannot intercept (hosted, computer, shell, apply_patch, an agent tool it cannot rebuild) that may run anyway, by name. */
  allowUninterceptedTools?: readonly string[];
};

/** How `r.runAgent()` / `r.resume()` run the agent. */
export type RunAgentOptions = PrepareOptions & {
  /** The `Runner` to run with; default the SDK's default runner (what its `run()` uses). Its `modelProvider` resolves the agents' model names unless `modelProvider` is given. */
  runner?: Runner;
  /** Options for `runner.run` (context, maxTurns, signal, session, stream …). */
  run?: Record<string, unknown> & { stream?: boolean };
};

/** A tool call's verdict as its span shows it (a failed tool is allowed, `tool_error`). */
function spanOutcome(r: BridgedToolResult): Record<string, JsonValue> {
  if (r.kind === 'result') return { decision: 'allow' };
  return r.reason !== undefined ? { decision: 'deny', reason: r.reason } : { decision: 'allow', tool_error: true };
}

function isShellResult(
  v: unknown,
): v is { output: Array<{ stdout: string; stderr: string; outcome: { type: 'exit'; exitCode: number | null } | { type: 'timeout' } }> } {
  return v !== null && typeof v === 'object' && Array.isArray((v as { output?: unknown }).output);
}

function isFunctionTool(t: Tool): boolean {
  return t.type === 'function' && typeof (t as unknown as FunctionToolLike).invoke === 'function';
}

export type {
  IntegrationOptions as OpenAIAgentsHooksOptions,
  IntegrationRunOptions as OpenAIAgentsRunOptions,
  LifecycleDispatcher,
  RunFinish,
} from './runBridge.ts';

type FunctionToolLike = {
  type: 'function';
  name: string;
  invoke: (ctx: unknown, input: string, details?: { toolCall?: { callId?: string } }) => Promise<unknown>;
  needsApproval?: boolean | ((ctx: unknown, input: unknown, callId?: string) => Promise<boolean>);
};

/** What `tool()` hands the model when `execute` threw (its default `errorFunction`): recognised as a tool failure. */
const SDK_TOOL_ERROR = 'An error occurred while running the tool. Please try again.';

function tripwire(blocked: InterceptionBlockedError) {
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
export class OpenAIAgentsRun extends ModelBridgedRun implements TurnJudge {
  readonly #bridge: RunBridge;
  #step = 0;
  #outputBlocked: InterceptionBlockedError | undefined;
  readonly #clones = newClones();
  /** Call id → the step whose response asked for it (tool events carry that stepIndex). */
  readonly #callSteps = new Map<string, number>();
  /** Handoff / shell / apply_patch call name → the call ids of the latest response that asked for it, in order. */
  readonly #pendingCalls = new Map<string, string[]>();
  /** Handoff call id → the deny the model sees instead of the SDK's transfer message. */
  readonly #deniedHandoffs = new Map<string, JsonValue>();
  readonly #ourTools = new WeakSet<object>();
  /** The models this run wrapped: a turn on an agent with another model is refused. */
  readonly #models = new WeakSet<object>();
  /** The graph of the latest `prepare()` (its options): what each turn is judged with. */
  #graph: AgentGraph | undefined;
  /** The SDK as `prepare()` loaded it: the wrappers open `hookrelay.*` spans in its traces. */
  #sdk: Awaited<ReturnType<typeof loadSdk>> | undefined;
  readonly #builtAgentTools = new WeakSet<object>();
  /** Trips when `input` (or `agent_startup`) denied; runs before the model (`runInParallel: false`). */
  readonly inputGuardrail: InputGuardrail;
  /** Trips when `output` denied the final answer. */
  readonly outputGuardrail: OutputGuardrail;

  constructor(bridge: RunBridge) {
    super(bridge);
    this.#bridge = bridge;
    this.inputGuardrail = {
      name: 'hookrelay-input',
      runInParallel: false,
      execute: async () => {
        try {
          await bridge.ready;
          return { tripwireTriggered: false, outputInfo: { interceptionPoint: 'input' } };
        } catch (err) {
          if (err instanceof InterceptionBlockedError) return tripwire(err);
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
            if (err instanceof InterceptionBlockedError) return tripwire(err);
            throw err;
          }
        }
        return { tripwireTriggered: false, outputInfo: { interceptionPoint: 'output' } };
      },
    };
  }

  /**
   * The model under pre/post_model_call (and `output` over a final answer); streamed responses are
   * judged whole before an event is yielded. `nested`: the model of an agent used as a tool, whose
   * answer is that tool's result, never the run's final answer.
   */
  wrapModel(model: Model, options: { nested?: boolean; modelId?: string } = {}): Model {
    const bridge = this.#bridge;
    const judge = async (
      request: ModelRequest,
      produce: (req: ModelRequest) => Promise<ModelResponse>,
      modelId: string,
    ): Promise<{ response: ModelResponse; original: ModelResponse }> => {
      const step = this.#step++;
      await bridge.beforeStep(step);
      let original: ModelResponse | undefined;
      const { result, outputBlocked } = await inHookrelaySpan(
        this.#sdk,
        'hookrelay.model_call',
        { ...this.#spanIds(), step, model: modelId },
        () =>
          bridge.modelCall(
            messagesOf(withDeniedHandoffs(request, this.#deniedHandoffs)),
            async (sent) => {
              original = await produce(requestOf(request, sent));
              return responseOf(original.output);
            },
            { modelId, holdOutputDeny: true, ...(options.nested === true ? { mayBeFinal: false } : {}) },
          ),
        (r) => ({ decision: r.outputBlocked !== undefined ? 'deny' : 'allow', final: r.final }),
      );
      const raw = original as ModelResponse;
      // An output deny withholds the answer: the output guardrail then trips with its reason.
      if (outputBlocked !== undefined) this.#outputBlocked = outputBlocked;
      const content = outputBlocked !== undefined ? '' : result.content;
      const response = { ...raw, output: rebuiltOutput(raw.output, content, result.toolCalls) };
      this.#noteCalls(request, result.toolCalls, step);
      await bridge.afterStep(step, { content, toolCalls: result.toolCalls, usage: raw.usage });
      return { response, original: raw };
    };
    const modelId = options.modelId ?? (model as { model?: string }).model ?? 'model';
    const wrapped = {
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
    this.#models.add(wrapped);
    return wrapped;
  }

  /** The turn seam: the tools the SDK derived for this turn of an agent this run governs, judged (see openaiAgentsSeam.ts). */
  async turnTools(agent: AnyAgent, tools: Tool[]): Promise<Tool[]> {
    return (this.#graph ?? (await this.#graphFor({}))).turnTools(agent, tools);
  }

  /** The turn seam: this turn's handoffs, each judged as a tool call before the SDK's handoff runs. */
  async turnHandoffs(agent: AnyAgent, handoffs: Handoff[]): Promise<Handoff[]> {
    return (this.#graph ?? (await this.#graphFor({}))).turnHandoffs(agent, handoffs);
  }

  #spanIds() {
    return { session_id: this.#bridge.sessionId, operation_id: this.#bridge.operationId };
  }

  /**
   * Remembers the step each call of a response belongs to (its tool events carry it) and, for the
   * calls whose executor never sees the call id (handoffs, shell, apply_patch), the ids in order.
   */
  #noteCalls(request: ModelRequest, calls: readonly ModelToolCall[], step: number): void {
    const unnamed = new Set([...(request.handoffs ?? []).map((h) => h.toolName), 'shell', 'apply_patch']);
    const fresh = new Map<string, string[]>();
    for (const c of calls) {
      if (c.id === undefined) continue;
      this.#callSteps.set(c.id, step);
      if (unnamed.has(c.name)) fresh.set(c.name, [...(fresh.get(c.name) ?? []), c.id]);
    }
    // The latest response's calls replace the earlier ones of the same name (the SDK runs only the first handoff of a response).
    for (const [name, ids] of fresh) this.#pendingCalls.set(name, ids);
  }

  /** The call id and step of the next call named `name` the latest response asked for. */
  #nextCall(name: string): { id?: string; stepIndex?: number } {
    const id = this.#pendingCalls.get(name)?.shift();
    const stepIndex = id === undefined ? undefined : this.#callSteps.get(id);
    return withDefined({ id, stepIndex });
  }

  /**
   * A local `shell` or `apply_patch` tool with its executor under pre/post_tool_call (the SDK runs
   * them from the model's call items, past any function wrapper); undefined for other kinds. A
   * deny is the failed result the model sees (shell: exit code 1, the deny on stderr).
   */
  #wrapLocalTool(tool: Tool): Tool | undefined {
    if (tool.type === 'shell' && tool.shell !== undefined) {
      const inner = tool.shell;
      const shell: Shell = {
        run: async (action) => {
          const r = await this.#localCall('shell', tool.name, { action: action as unknown as JsonValue }, (args) =>
            inner.run(args.action as unknown as ShellAction),
          );
          if (r.kind === 'error') return { output: [{ stdout: '', stderr: r.message, outcome: { type: 'exit', exitCode: 1 } }] };
          if (isShellResult(r.value)) return r.value;
          return { output: [{ stdout: typeof r.value === 'string' ? r.value : JSON.stringify(r.value), stderr: '', outcome: { type: 'exit', exitCode: 0 } }] };
        },
      };
      return this.#mark({ ...tool, shell });
    }
    if (tool.type === 'apply_patch') {
      const editor = tool.editor;
      const op =
        <K extends 'createFile' | 'updateFile' | 'deleteFile'>(method: K) =>
        async (operation: Parameters<Editor[K]>[0], context?: EditorInvocationContext): Promise<ApplyPatchResult> => {
          const r = await this.#localCall('apply_patch', tool.name, { operation: operation as unknown as JsonValue }, (args) =>
            (editor[method] as (o: unknown, c?: EditorInvocationContext) => Promise<ApplyPatchResult | undefined>)(args.operation, context),
          );
          if (r.kind === 'error') return { status: 'failed', output: r.message };
          const v = r.value as { status?: unknown; output?: unknown } | null;
          return v !== null && typeof v === 'object'
            ? {
                ...(v.status === 'failed' ? { status: 'failed' as const } : { status: 'completed' as const }),
                output: typeof v.output === 'string' ? v.output : '',
              }
            : { status: 'completed', output: typeof v === 'string' ? v : '' };
        };
      return this.#mark({ ...tool, editor: { createFile: op('createFile'), updateFile: op('updateFile'), deleteFile: op('deleteFile') } });
    }
    return undefined;
  }

  #mark<T extends Tool>(tool: T): T {
    this.#ourTools.add(tool);
    return tool;
  }

  async #localCall(
    kind: string,
    name: string,
    args: Record<string, JsonValue>,
    exec: (args: Record<string, unknown>) => Promise<unknown>,
  ): Promise<BridgedToolResult> {
    const { id, stepIndex } = this.#nextCall(kind);
    return inHookrelaySpan(
      this.#sdk,
      'hookrelay.tool_call',
      { ...this.#spanIds(), tool: name, tool_call_id: id ?? null },
      () => this.#bridge.toolCall({ id, name, args, ...withDefined({ stepIndex }) }, exec),
      spanOutcome,
    );
  }

  /**
   * Function tools run through pre/post_tool_call; a deny is the tool output the model sees
   * (`{ error, reason, message? }`). Other tools pass unchanged: `prepare()` refuses them unless
   * allowed, and rebuilds `asTool()` tools around the wrapped agent.
   */
  wrapTools<T extends Tool>(tools: readonly T[]): T[] {
    return tools.map((t) => (isFunctionTool(t) ? this.#wrapFunctionTool(t) : t));
  }

  #wrapFunctionTool<T extends Tool>(t: T): T {
    if (this.#ourTools.has(t)) return t;
    const fn = t as unknown as FunctionToolLike;
    const invoke: FunctionToolLike['invoke'] = async (ctx, input, details) => {
      const id = details?.toolCall?.callId;
      const stepIndex = id === undefined ? undefined : this.#callSteps.get(id);
      const call = { id, name: fn.name, args: parseArgs(input), ...withDefined({ stepIndex }) };
      const r = await inHookrelaySpan(
        this.#sdk,
        'hookrelay.tool_call',
        { ...this.#spanIds(), tool: fn.name, tool_call_id: id ?? null },
        () =>
          this.#bridge.toolCall(call, async (args) => {
            const out = await fn.invoke(ctx, JSON.stringify(args), details);
            if (out === SDK_TOOL_ERROR) throw new Error(SDK_TOOL_ERROR); // tool() swallowed a throw
            return out;
          }),
        spanOutcome,
      );
      return r.kind === 'result' ? r.value : r.message;
    };
    // The SDK's approval check judges pre_tool_call: a call a durable approval waits for interrupts
    // the run the SDK's way (`result.interruptions`, a RunState to resume); the verdict is kept for `invoke`.
    const own = fn.needsApproval;
    const needsApproval = async (ctx: unknown, input: unknown, callId?: string): Promise<boolean> => {
      if (typeof own === 'function' ? await own(ctx, input, callId) : own === true) return true;
      if (typeof callId !== 'string') return false;
      const args = typeof input === 'string' ? parseArgs(input) : isObject(input) ? input : {};
      return this.#bridge.awaitsApproval({ id: callId, name: fn.name, args: args as Record<string, unknown> });
    };
    const wrapped = { ...t, invoke, needsApproval } as T;
    this.#ourTools.add(wrapped);
    return wrapped;
  }

  /**
   * `agent.asTool(options)` for an agent under this run: the tool's call is a tool call
   * (pre/post_tool_call) and the agent's model and tool calls are intercepted like the run's
   * own. Use it when the tool needs `asTool()` options `prepare()` cannot read back from a tool
   * (`customOutputExtractor`, `inputBuilder`, `parameters`, `runConfig`, `runOptions`, `onStream`).
   */
  // biome-ignore lint/suspicious/noExplicitAny: the SDK's own bound for any agent
  async asTool<A extends Agent<any, any>>(
    agent: A,
    // biome-ignore lint/suspicious/noExplicitAny: the SDK's own bound for the tool's parameters
    options: AgentToolOptionsWithDefault<unknown, A> | AgentToolOptions<unknown, A, any>,
    prepare: PrepareOptions = {},
  ): Promise<FunctionTool> {
    const graph = await this.#graphFor(prepare);
    const wrapped = await graph.wrap(agent, 'nested');
    const built = wrapped.asTool(options as never) as unknown as FunctionTool;
    this.#builtAgentTools.add(built);
    return this.#wrapFunctionTool(built);
  }

  async #graphFor(options: PrepareOptions): Promise<AgentGraph> {
    const allow = options.allowUninterceptedTools ?? [];
    if (!Array.isArray(allow) || allow.some((n) => typeof n !== 'string'))
      throw new TypeError('prepare(agent, options): allowUninterceptedTools must be an array of tool names (strings)');
    if (options.modelProvider !== undefined && typeof options.modelProvider?.getModel !== 'function')
      throw new TypeError('prepare(agent, options): modelProvider must be a ModelProvider (an object with getModel(name))');
    const provider = options.modelProvider ?? (await defaultModelProvider());
    const sdk = await loadSdk();
    this.#sdk = sdk;
    installTurnSeam(sdk.Agent);
    this.#graph = new AgentGraph({
      sdk,
      provider,
      allow: new Set(allow),
      wrapModel: (model, role, modelId) => this.wrapModel(model, { nested: role === 'nested', ...withDefined({ modelId }) }),
      wrapFunctionTool: (t) => this.#wrapFunctionTool(t),
      wrapLocalTool: (t) => this.#wrapLocalTool(t),
      isOurs: (t) => this.#builtAgentTools.has(t) || this.#ourTools.has(t),
      guardrails: { input: this.inputGuardrail, output: this.outputGuardrail },
      invokeHandoff: (h, ctx, args, owner, next) => this.#invokeHandoff(h, ctx, args, owner, next),
      clones: this.#clones,
      judge: this,
      isOurModel: (m) => m !== null && typeof m === 'object' && this.#models.has(m),
    });
    return this.#graph;
  }

  /** A handoff as a tool call: pre_tool_call judges it before the SDK's handoff runs; a deny keeps the current agent and the model sees the deny. */
  async #invokeHandoff(h: Handoff, ctx: unknown, args: string, owner: AnyAgent, next: (agent: AnyAgent) => Promise<AnyAgent>): Promise<AnyAgent> {
    const { id, stepIndex } = this.#nextCall(h.toolName);
    let target: AnyAgent | undefined;
    let failure: unknown;
    const parsed = parseArgs(args ?? '');
    const r = await inHookrelaySpan(
      this.#sdk,
      'hookrelay.handoff',
      { ...this.#spanIds(), tool: h.toolName, tool_call_id: id ?? null },
      () =>
        this.#bridge.toolCall({ id, name: h.toolName, args: parsed, ...withDefined({ stepIndex }) }, async (judged) => {
          const input = JSON.stringify(judged) === JSON.stringify(parsed) ? args : JSON.stringify(judged);
          try {
            const produced = await h.onInvokeHandoff(ctx as never, input);
            target = await next(produced);
            return { assistant: produced.name };
          } catch (err) {
            failure = err;
            throw err;
          }
        }),
      spanOutcome,
    );
    // The handoff itself failed (its onHandoff threw, it returned no agent): the SDK's own failure, as without hookrelay.
    if (r.kind === 'error' && r.reason === undefined && failure !== undefined) throw failure;
    if (r.kind === 'result' && target !== undefined) return target;
    if (id !== undefined) this.#deniedHandoffs.set(id, r.kind === 'error' ? r.content : null);
    return owner;
  }

  /**
   * The agent wrapped (a clone: the original is untouched) with every agent the run can reach —
   * handoff targets (recursively, each once), agents used as tools, agents a handoff returns at
   * run time — plus the admitted input to run it with. Each wrapped agent's model (a name or the
   * default model resolved through `modelProvider`, default the SDK's own), function tools and
   * MCP server tools are intercepted under this run's session; a tool hookrelay cannot intercept
   * throws `UninterceptedToolError` unless named in `allowUninterceptedTools`. An `input` deny
   * does not throw here: the input guardrail trips first, before any model call.
   */
  // biome-ignore lint/suspicious/noExplicitAny: the SDK's own bound for any agent (context and output type are the caller's)
  async prepare<A extends Agent<any, any>>(agent: A, options: PrepareOptions = {}): Promise<{ agent: A; input: string }> {
    if (options === null || typeof options !== 'object') throw new TypeError('prepare(agent, options): options must be an object');
    if (options.model !== undefined && typeof options.model !== 'string' && typeof (options.model as Model | null)?.getResponse !== 'function')
      throw new TypeError('prepare(agent, options): model must be a Model or a model name (a string)');
    const graph = await this.#graphFor(options);
    const wrapped = (await graph.wrap(agent, 'run', options.model)) as A;
    let input = '';
    try {
      const admitted = await this.#bridge.ready;
      input = typeof admitted.content === 'string' ? admitted.content : JSON.stringify(admitted.content);
    } catch (err) {
      if (!(err instanceof InterceptionBlockedError)) throw err;
    }
    return { agent: wrapped, input };
  }

  /**
   * Runs the agent under this run — the judged way to run: `prepare()`s it, then runs the SDK's
   * runner (`options.runner`, default the SDK's default runner) with the admitted input inside this
   * run, so every turn of every agent it reaches is judged (openaiAgentsSeam.ts), and ends the run
   * as `track()` does. Returns the SDK's result (a `StreamedRunResult` with `run: { stream: true }`).
   */
  // biome-ignore lint/suspicious/noExplicitAny: the SDK's own bound for any agent
  async runAgent<A extends Agent<any, any>>(agent: A, options: RunAgentOptions & { run: { stream: true } }): Promise<StreamedRunResult<unknown, A>>;
  // biome-ignore lint/suspicious/noExplicitAny: the SDK's own bound for any agent
  async runAgent<A extends Agent<any, any>>(agent: A, options?: RunAgentOptions): Promise<RunResult<unknown, A>>;
  // biome-ignore lint/suspicious/noExplicitAny: the SDK's own bound for any agent
  async runAgent<A extends Agent<any, any>>(agent: A, options: RunAgentOptions = {}): Promise<unknown> {
    const { runner, run: runOptions, ...prepare } = options;
    const prepared = await this.prepare(agent, { ...prepare, ...withDefined({ modelProvider: prepare.modelProvider ?? runner?.config.modelProvider }) });
    const sdk = await loadSdk();
    return withinRun(this, () => this.track((runner ?? sdk).run(prepared.agent, prepared.input, runOptions as never)));
  }

  /**
   * Resumes an interrupted run (tool approvals, `needsApproval`) under this run: `state` — a
   * `RunState` or its `toString()` — may have been made from any agent object (the app's own,
   * `RunState.fromString(appAgent, saved)`): it is re-derived onto this run's judged graph of
   * `agent` (the SDK finds its agents by name), so the approved calls and every later turn are
   * judged. Approve or reject the interruptions on `state` first; its context (approvals) is kept.
   */
  // biome-ignore lint/suspicious/noExplicitAny: the SDK's own bound for any agent
  async resume<A extends Agent<any, any>>(agent: A, state: RunState<any, any> | string, options: RunAgentOptions = {}): Promise<RunResult<unknown, A>> {
    if (typeof state !== 'string' && (state === null || typeof state !== 'object' || typeof state.toString !== 'function'))
      throw new TypeError('resume(agent, state): state must be a RunState or its toString()');
    const { runner, run: runOptions, ...prepare } = options;
    const prepared = await this.prepare(agent, { ...prepare, ...withDefined({ modelProvider: prepare.modelProvider ?? runner?.config.modelProvider }) });
    const sdk = await loadSdk();
    const judged = await withinRun(this, () =>
      typeof state === 'string'
        ? sdk.RunState.fromString(prepared.agent, state)
        : sdk.RunState.fromStringWithContext(prepared.agent, state.toString(), state._context),
    );
    return withinRun(this, () => this.track((runner ?? sdk).run(prepared.agent, judged, runOptions as never))) as Promise<RunResult<unknown, A>>;
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
    // A run interrupted for approvals has no answer yet: nothing to judge at `output` (resume it with resume()).
    const interrupted = ((result as { interruptions?: unknown[] }).interruptions?.length ?? 0) > 0;
    if (!this.#bridge.outputJudged && !interrupted && this.#bridge.pendingApproval === undefined) {
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
}

/** A bundle of Agents SDK runs sharing one AGENT-HOOKS-0.1 bundle and one dispatcher. */
export class OpenAIAgentsHooks {
  readonly #options: IntegrationOptions;
  constructor(options: IntegrationOptions) {
    checkIntegrationOptions(options, 'createOpenAIAgentsHooks');
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

export { InterceptionBlockedError, InterceptionBlocked };
