import { randomUUID } from 'node:crypto';
import type { JsonObject, JsonValue } from '../contract/agentHooks.ts';
import type { PendingApproval } from '../contract/approval.ts';
import type { HookEventOf } from '../contract/events.ts';
import type { HookType } from '../contract/hookTypes.ts';
import type { ToolCallResult } from '../contract/toolContext.ts';
import type { AgentHooks, StartRunOptions } from '../intercept/run/bundle.ts';
import type { AdmittedInput, AgentRun, ModelCaller, ModelCallResult, NativeMessage, RunEnd } from '../intercept/run/agentRun.ts';
import { type ApprovalPendingError, InterceptionBlockedError, ToolError } from '../contract/errors.ts';
import { isObject } from '../util/isObject.ts';
import { withDefined } from '../util/withDefined.ts';

/**
 * The framework-neutral half of the integrations (`hookrelay/ai-sdk`, `hookrelay/openai-agents`):
 * one AGENT-HOOKS-0.1 run (the run adapter) plus the LobeHub lifecycle events of the same
 * operation, dispatched to the dispatcher's registered hooks. The framework halves only translate
 * shapes. Loads no framework, no BullMQ, no pg: a queue-mode dispatcher brings its own.
 */

/** What the integrations need of a dispatcher (`HookDispatcher` is one); its mode decides local or durable delivery. */
export type LifecycleDispatcher = {
  /** Its report (F1, `HookDispatcher`'s `notAccepted`) is not read here: pass a dispatcher with `onNotAccepted: 'throw'` to stop a run on it. */
  dispatch<T extends HookType>(operationId: string, type: T, event: HookEventOf<T>): Promise<unknown>;
  dispatchBeforeToolCall(operationId: string, event: Record<string, unknown>): Promise<{ isMocked: true; result: ToolCallResult } | null>;
};

export type IntegrationOptions = {
  /** The AGENT-HOOKS-0.1 bundle (`createAgentHooks`) whose interceptors judge the eight points. Install it on no dispatcher: the integration is the run. */
  hooks: AgentHooks;
  /** Lifecycle events (beforeStep, afterStep, beforeToolCall mocks, afterToolCall, onToolCallError, onError, onComplete) go to its registered hooks; a queue-mode dispatcher enqueues them (durable delivery by the worker). */
  dispatcher?: LifecycleDispatcher;
};

export type IntegrationRunOptions = {
  /** The request entering the agent: `input` is judged, and the admitted input is what the framework is given. */
  input: StartRunOptions['input'];
  /** Ties the interception session and the lifecycle events together; default a random UUID. */
  operationId?: string;
  /** The interception session id; default `<operationId>/<random UUID>`, minted per run (as the run adapter does). */
  sessionId?: string;
  /** `agent_startup`'s `tools_registered`; default the bundle's `tools`. */
  tools?: string[];
  /** Cancels the run (pass the same signal to the framework call); an aborted run ends `cancelled`. */
  signal?: AbortSignal;
  /** Receives each released text chunk (the run adapter's `onRelease`). */
  onRelease?: (text: string) => void | Promise<void>;
  /** Correlation fields copied onto every lifecycle event. */
  event?: { userId?: string; agentId?: string; topicId?: string; metadata?: Record<string, unknown> };
};

/** How a run ended, as the framework reported it. */
export type RunFinish = { status: 'completed' } | { status: 'error'; error: unknown } | { status: 'cancelled' };

/** A tool call as the framework hands it back to the model: a result, or an error result (a deny, a thrown tool). */
export type BridgedToolResult = { kind: 'result'; value: JsonValue } | { kind: 'error'; content: JsonValue; message: string; reason?: string };

export type BridgedModelCall = {
  result: ModelCallResult;
  /** True when this response was the final answer and `output` judged it (its content is the output as transformed). */
  final: boolean;
  /** An `output` deny held instead of thrown (`holdOutputDeny`): the framework trips its own guardrail with it. */
  outputBlocked?: InterceptionBlockedError;
};

function isAbort(error: unknown, signal: AbortSignal | undefined): boolean {
  if (signal?.aborted === true) return true;
  return error instanceof Error && (error.name === 'AbortError' || error.name === 'TimeoutError');
}

/**
 * The verdict a completed tool call carried, as its lifecycle event reports it: `transform` when
 * `pre_tool_call` changed the arguments or `post_tool_call` the result (`changed` names which).
 */
function toolVerdict(
  argsIn: unknown,
  ran: { value: unknown } | undefined,
  args: JsonValue,
  result: JsonValue,
): { decision: 'allow' } | { decision: 'transform'; changed: Array<'args' | 'result'> } {
  const changed: Array<'args' | 'result'> = [];
  if (JSON.stringify(argsIn) !== JSON.stringify(args)) changed.push('args');
  if (ran !== undefined && JSON.stringify(ran.value ?? null) !== JSON.stringify(result)) changed.push('result');
  return changed.length === 0 ? { decision: 'allow' } : { decision: 'transform', changed };
}

function errorText(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** Every integration's factory refuses options without an AGENT-HOOKS-0.1 bundle, naming itself. */
export function checkIntegrationOptions(options: IntegrationOptions, caller: string): void {
  if (options === null || typeof options !== 'object' || typeof options.hooks?.startRun !== 'function')
    throw new TypeError(`${caller === 'options' ? 'options.hooks' : `${caller}({ hooks }): hooks`} must be an AGENT-HOOKS-0.1 bundle (createAgentHooks)`);
}

/** One framework run under AGENT-HOOKS-0.1, with the operation's lifecycle events. */
export class RunBridge {
  readonly operationId: string;
  readonly run: AgentRun;
  readonly #hooks: AgentHooks;
  readonly #dispatcher: LifecycleDispatcher | undefined;
  readonly #signal: AbortSignal | undefined;
  readonly #base: { operationId: string; [key: string]: unknown };
  #step = 0;
  #calls = 0;
  #outputDone = false;
  #output: JsonValue | undefined;
  #failure: unknown;
  #sink: ((text: string) => void) | undefined;
  #finished: Promise<RunEnd> | undefined;

  constructor(options: IntegrationOptions, run: IntegrationRunOptions) {
    checkIntegrationOptions(options, 'options');
    if (run === null || typeof run !== 'object') throw new TypeError('startRun(options): options must be an object with `input`');
    if (run.operationId !== undefined && (typeof run.operationId !== 'string' || run.operationId === ''))
      throw new TypeError('operationId must be a non-empty string');
    this.#hooks = options.hooks;
    this.#dispatcher = options.dispatcher;
    this.#signal = run.signal;
    this.operationId = run.operationId ?? randomUUID();
    this.#base = { ...(run.event ?? {}), operationId: this.operationId };
    const onRelease = run.onRelease;
    this.run = options.hooks.startRun({
      input: run.input,
      // Minted per run like the run adapter's (`<operationId>/<uuid>`): a second run of the operation, in this process or another, never reuses a session (no sequence clash in a record store).
      sessionId: run.sessionId ?? `${this.operationId}/${randomUUID()}`,
      ...withDefined({ tools: run.tools, signal: run.signal }),
      onRelease: async (text) => {
        this.#sink?.(text);
        await onRelease?.(text);
      },
    });
  }

  /** The admitted input (`agent_startup` and `input` permitted; a transform applied). */
  get ready(): Promise<AdmittedInput> {
    return this.run.ready;
  }

  get streaming(): 'buffered' | 'incremental' {
    return this.#hooks.streaming;
  }

  get sessionId(): string {
    return this.run.sessionId;
  }

  /** The final answer as `output` left it, once judged. */
  get output(): JsonValue | undefined {
    return this.#output;
  }

  get outputJudged(): boolean {
    return this.#outputDone;
  }

  /** The approval the run waits for (it ended, or will end, `approval_pending`), if a call escalated to a person. */
  get pendingApproval(): ApprovalPendingError | undefined {
    return this.run.awaitingApproval;
  }

  /**
   * The framework's approval check for a call (AI SDK `toolApproval`, Agents SDK `needsApproval`):
   * pre_tool_call now; true when a durable approval is pending — the framework pauses its own way
   * and the run ends `approval_pending`. The verdict is kept for the call's `toolCall`.
   */
  async awaitsApproval(call: { id: string; name: string; args: Record<string, unknown> }): Promise<boolean> {
    return (await this.run.judgeToolCall(call)) !== undefined;
  }

  /** The first failure of the run (a deny that blocked it, a model or stream error), if any. */
  get failure(): unknown {
    return this.#failure ?? this.run.blocked;
  }

  /** Where released text goes while a model call streams incrementally (one call at a time). */
  setSink(sink: ((text: string) => void) | undefined): void {
    this.#sink = sink;
  }

  /** Remember a failure the framework may swallow (a stream error), so the run cannot end `completed`. */
  noteFailure(error: unknown): void {
    this.#failure ??= error;
  }

  async beforeStep(stepIndex = this.#step): Promise<void> {
    this.#step = stepIndex;
    await this.#dispatch('beforeStep', { ...this.#base, stepIndex });
  }

  async afterStep(stepIndex: number, step: { content?: unknown; toolCalls?: unknown[]; toolResults?: unknown[]; usage?: unknown }): Promise<void> {
    await this.#dispatch('afterStep', { ...this.#base, stepIndex, ...step });
    this.#step = stepIndex + 1;
  }

  /**
   * One model call through `pre_model_call` / `post_model_call`. A response without tool calls is
   * the final answer: `output` judges it here, before anything of it reaches the caller, and the
   * result carries the output as transformed.
   */
  async modelCall(
    messages: readonly NativeMessage[],
    call: ModelCaller,
    options: { modelId?: string; holdOutputDeny?: boolean; mayBeFinal?: boolean } = {},
  ): Promise<BridgedModelCall> {
    try {
      const result = await this.run.modelCall(messages, call, withDefined({ modelId: options.modelId }));
      // `mayBeFinal: false`: a nested agent's answer (an agent used as a tool) is a tool result, never the run's final answer.
      if (result.toolCalls.length > 0 || this.#outputDone || options.mayBeFinal === false) return { result, final: false };
      try {
        const content = await this.judgeOutput(result);
        return { result: { ...result, content }, final: true };
      } catch (err) {
        if (options.holdOutputDeny === true && err instanceof InterceptionBlockedError) return { result, final: true, outputBlocked: err };
        throw err;
      }
    } catch (err) {
      this.noteFailure(err);
      throw err;
    }
  }

  /** `output` over the final answer (once per run); returns it as transformed. Throws `InterceptionBlockedError` on a deny. */
  async judgeOutput(answer: unknown): Promise<JsonValue> {
    this.#outputDone = true;
    try {
      const content = await this.run.output(answer);
      this.#output = content;
      return content;
    } catch (err) {
      this.noteFailure(err);
      throw err;
    }
  }

  /**
   * One tool call: `pre_tool_call`, then the operation's `beforeToolCall` (local handlers may mock
   * the result; webhooks are notified), the tool (or the mock), `post_tool_call`, then
   * `afterToolCall` / `onToolCallError`. A deny is an error result for the model, never the blocked payload.
   */
  async toolCall(
    call: { id?: string; name: string; args: Record<string, unknown>; stepIndex?: number; description?: string },
    exec: (args: Record<string, unknown>) => unknown,
  ): Promise<BridgedToolResult> {
    // The step whose model response asked for the call (a framework may end that step before its tools run).
    const stepIndex = call.stepIndex ?? this.#step;
    const callIndex = this.#calls++;
    const toolCallId = call.id ?? `${call.name}-${callIndex}`;
    const context = {
      ...this.#base,
      toolCallId,
      assistantMessageId: `${this.operationId}:step-${stepIndex}`,
      identifier: call.name,
      apiName: call.name,
      callIndex,
      stepIndex,
      executor: 'server' as const,
    };
    let mocked = false;
    let lifecycleError: unknown;
    let ran: { value: unknown } | undefined;
    const outcome = await this.run.toolCall(
      { id: toolCallId, name: call.name, args: call.args, ...withDefined({ description: call.description }) },
      async (args) => {
        if (this.#dispatcher !== undefined) {
          let mock: { result: ToolCallResult } | null = null;
          try {
            mock = await this.#dispatcher.dispatchBeforeToolCall(this.operationId, { ...context, args });
            await this.#dispatcher.dispatch(this.operationId, 'beforeToolCall', { ...context, args });
          } catch (err) {
            lifecycleError = err; // a critical hook failed: not the tool's failure (rethrown below)
          }
          if (mock !== null) {
            mocked = true;
            if (mock.result.success === false) throw new ToolError(mock.result.content ?? mock.result.error ?? null, 'mocked tool failure');
            return mock.result.content;
          }
        }
        const value = await exec(args);
        ran = { value }; // the tool's own result, to tell a post_tool_call transform
        return value;
      },
    );
    if (lifecycleError !== undefined) throw lifecycleError;
    if (outcome.status === 'blocked') {
      // An audit hook sees a denial as the call's afterToolCall, with the verdict (the tool did not run, or its result was withheld).
      const verdict = {
        decision: 'deny',
        interceptionPoint: outcome.at,
        reason: outcome.reason,
        ...withDefined({ message: outcome.message }),
      };
      await this.#dispatch('afterToolCall', { ...context, args: call.args, result: { content: outcome.content, success: false }, mocked, verdict });
      return { kind: 'error', content: outcome.content, message: JSON.stringify(outcome.content), reason: outcome.reason };
    }
    const result = { content: outcome.result, success: !outcome.isError };
    const verdict = toolVerdict(call.args, ran, outcome.args, outcome.result);
    if (outcome.isError) {
      await this.#dispatch('onToolCallError', { ...context, args: outcome.args, error: outcome.result, verdict });
      return { kind: 'error', content: outcome.result, message: errorText(outcome.result) };
    }
    await this.#dispatch('afterToolCall', { ...context, args: outcome.args, result, mocked, verdict });
    return { kind: 'result', value: outcome.result };
  }

  /**
   * End the run once: `agent_shutdown` (`completed`, `error` after any failure or block,
   * `cancelled` after an abort), then `onError` (on an error) and `onComplete`. Idempotent: the
   * first ending wins (a framework may report an error and then its end).
   */
  finish(how: RunFinish): Promise<RunEnd> {
    this.#finished ??= this.#finish(how);
    return this.#finished;
  }

  async #finish(how: RunFinish): Promise<RunEnd> {
    let status: 'completed' | 'error' | 'cancelled' = how.status;
    let error: unknown = how.status === 'error' ? how.error : undefined;
    if (status === 'error' && isAbort(error, this.#signal)) status = 'cancelled';
    if (status === 'completed' && this.#signal?.aborted === true) status = 'cancelled';
    if (status === 'completed' && (this.#failure !== undefined || this.run.blocked !== undefined)) {
      status = 'error';
      error = this.#failure ?? this.run.blocked;
    }
    this.#sink = undefined;
    const end = await this.run.end(status);
    if (end.outcome === 'approval_pending') {
      // A pause, not a failure: no onError; onComplete says which approval the operation waits for.
      await this.#dispatch('onComplete', { ...this.#base, reason: 'approval_pending', status: end.outcome, approval: end.approval });
      return end;
    }
    if (status === 'error') {
      await this.#dispatch('onError', {
        ...this.#base,
        errorMessage: error instanceof Error ? error.message : String(error),
        errorType: error instanceof Error ? error.name : typeof error,
      });
    }
    const reason = status === 'completed' ? 'done' : status === 'cancelled' ? 'interrupted' : 'error';
    await this.#dispatch('onComplete', {
      ...this.#base,
      reason,
      status: end.outcome,
      ...(this.#output !== undefined && end.outcome === 'completed' ? { lastAssistantContent: this.#output } : {}),
    });
    return end;
  }

  async #dispatch<T extends HookType>(type: T, event: HookEventOf<T>): Promise<void> {
    if (this.#dispatcher !== undefined) await this.#dispatcher.dispatch(this.operationId, type, event);
  }
}

/**
 * What every integration's run (AI SDK, Agents SDK, MCP) shows of its bridge alike: the ids, the
 * run adapter run, the admitted input, and its end. The bridge itself stays off the public type
 * (a subclass keeps its own reference).
 */
export class BridgedRun {
  readonly #bridge: RunBridge;

  constructor(bridge: RunBridge) {
    this.#bridge = bridge;
  }

  get operationId(): string {
    return this.#bridge.operationId;
  }

  get sessionId(): string {
    return this.#bridge.sessionId;
  }

  /** The underlying run adapter run (records, `released`, `blocked`). */
  get run(): AgentRun {
    return this.#bridge.run;
  }

  /** `agent_startup` + `input` permitted: the input as admitted (a transform applied). */
  get ready(): Promise<AdmittedInput> {
    return this.#bridge.ready;
  }

  /** End the run (idempotent; the first ending wins): agent_shutdown, onError, onComplete. */
  end(how: RunFinish): Promise<RunEnd> {
    return this.#bridge.finish(how);
  }
}

/** A run whose model calls the bridge judges (AI SDK, Agents SDK): it has a final answer and may wait for an approval. */
export class ModelBridgedRun extends BridgedRun {
  readonly #bridge: RunBridge;

  constructor(bridge: RunBridge) {
    super(bridge);
    this.#bridge = bridge;
  }

  /** The final answer as `output` left it (once judged). */
  get output(): JsonValue | undefined {
    return this.#bridge.output;
  }

  /** The durable approval this run waits for (it ends `approval_pending`), if a call escalated to a person. */
  get pendingApproval(): PendingApproval | undefined {
    return this.#bridge.pendingApproval?.approval;
  }
}

/** A tool call's argument text as the JSON object the interceptors judge: `{}` when empty, `{ input }` when it is not an object (or not JSON). */
export function parseArgs(input: string): JsonObject {
  if (input.trim() === '') return {};
  try {
    const parsed: unknown = JSON.parse(input);
    return isObject(parsed) ? (parsed as JsonObject) : { input: parsed as JsonValue };
  } catch {
    return { input };
  }
}
