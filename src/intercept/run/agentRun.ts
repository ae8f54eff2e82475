import { AsyncLocalStorage } from 'node:async_hooks';
import type { AgentContext, InterceptionPoint, JsonObject, JsonValue } from '../../contract/agentHooks.ts';
import type { AgentContextBuilder, Message } from '../builder.ts';
import type { InterceptionEmitter } from '../emitter.ts';
import {
  AgentHooksInstallError,
  AgentRunStateError,
  ApprovalPendingError,
  InterceptionBlockedError,
  ToolError,
  ProjectionError,
} from '../../contract/errors.ts';
import type { PendingApproval } from '../../contract/approval.ts';
import {
  isAsyncIterable,
  normalizePart,
  normalizeResponse,
  StreamAssembly,
  type ModelResponse,
  type ModelStreamPart,
  type ModelResponseInput,
} from './modelStream.ts';
import { HostError, isReservedReason } from '../reasons.ts';
import { refuseArgs, refuseInput, refuseMessages, refuseOutput, refuseResponse, refuseSegment, responseFromTarget } from './runTargets.ts';
import { toJsonValue } from '../json/toJsonValue.ts';
import { withDefined } from '../../util/withDefined.ts';
import { startExecuteToolSpan, type GenAiToolType } from '../genAiSpans.ts';
import { isObject } from '../../util/isObject.ts';

/** The run's input after the `input` verdict (a transform may have rewritten it). */
export type AdmittedInput = { content: JsonValue; role: 'user' | 'system' | 'external' };

/** The transcript a run persists: the model's permitted responses and the tool results it was given. */
export type HistoryItem =
  | { role: 'assistant'; content: JsonValue; toolCalls: ModelResponse['toolCalls'] }
  | { role: 'tool'; toolCallId?: string; name: string; content: JsonValue; isError: boolean };

/**
 * What the `persist` callback receives, each only after the verdict that covers it:
 * - `run` (persistence `after_output`, the default): the whole run once `output` permitted it —
 *   the output as transformed; a denied output persists nothing.
 * - `model_call` (persistence `per_model_call`): each exchange once its `post_model_call`
 *   permitted it; a later `output` deny does not roll it back.
 * - `output` (`per_model_call`): the final answer once `output` permitted it.
 */
export type PersistEntry =
  | { kind: 'run'; sessionId: string; input: AdmittedInput; history: HistoryItem[]; output: JsonValue }
  | { kind: 'model_call'; sessionId: string; messages: Message[]; response: ModelResponse }
  | { kind: 'output'; sessionId: string; output: JsonValue };

export type Streaming = 'buffered' | 'incremental';
export type Persistence = 'after_output' | 'per_model_call';
/** What a `host_error:*` deny at a tool point does to the run; a policy deny always lets it go on. */
export type ToolSeamHostError = 'terminate' | 'continue';

/** A message as the loop keeps it (any provider's shape with a `role`); the context carries its JSON value. */
export type NativeMessage = { role: string; content?: unknown; [key: string]: unknown };

/** The model call the loop hands to `modelCall`: the messages as they may be sent (post-transform). */
export type ModelCaller = (
  messages: Message[],
  ctx: { signal?: AbortSignal },
) => ModelResponseInput | AsyncIterable<ModelStreamPart> | Promise<ModelResponseInput | AsyncIterable<ModelStreamPart>>;

/** The tool the loop hands to `toolCall`: the arguments as they may be passed (post-transform). */
export type ToolExecutor = (args: JsonObject, ctx: { signal?: AbortSignal }) => unknown;

/** A model response as the loop uses it, plus the messages actually sent (post `pre_model_call`). */
export type ModelCallResult = ModelResponse & { sent: Message[] };

/**
 * What the loop hands back to the model for one tool call. `content` is the tool message: the
 * (possibly transformed) result, or — when policy blocked the call or its result — a control
 * error naming the reason, never the blocked payload.
 */
/**
 * One tool call as `toolCall` takes it. `type` and `description` only label its OpenTelemetry
 * `execute_tool` span (`gen_ai.tool.type`, default `function`; `gen_ai.tool.description`).
 */
export type ToolCallRequest = { id?: string; name: string; args: Record<string, unknown>; type?: GenAiToolType; description?: string };

export type ToolCallOutcome =
  | { status: 'completed'; args: JsonObject; result: JsonValue; isError: boolean; content: JsonValue }
  | { status: 'blocked'; at: 'pre_tool_call' | 'post_tool_call'; reason: string; message?: string; content: JsonObject };

/**
 * How a run ended. `approval_pending`: a call waits for a person (the resolver left the durable
 * request `approval`); run again once it is decided — the identical call then gets the decision, once.
 */
export type RunEnd = { outcome: 'completed' | 'blocked' | 'error' | 'cancelled' | 'approval_pending'; released: string; approval?: PendingApproval };

/** What a run needs from its bundle. */
export type RunSetup = {
  emitter: InterceptionEmitter;
  builder: AgentContextBuilder;
  /** The run emits this session's agent_startup / agent_shutdown (false: the application does). */
  ownsSession: boolean;
  tools: string[];
  modelId: string;
  streaming: Streaming;
  persistence: Persistence;
  persist: ((entry: PersistEntry) => void | Promise<void>) | undefined;
  toolSeamHostError: ToolSeamHostError;
  input: AdmittedInput;
  onRelease: ((text: string) => void | Promise<void>) | undefined;
  signal: AbortSignal | undefined;
  /** The bundle, to recognise a nested run of the same bundle (refused). */
  owner: object;
  onEnd: () => void;
};

/** The run whose model / tool callbacks are executing: a run started there is nested in it. */
export const activeRun = new AsyncLocalStorage<AgentRun>();

/** Reserved reasons that are policy outcomes, not infrastructure failures (agent-framework #7561). */
const POLICY_REASONS = new Set<string>([HostError.TransformConflict, HostError.CompositionDisagreement]);

/**
 * One agent run under AGENT-HOOKS-0.1 (I1): the loop wraps its model and tool calls, the
 * run emits the eight points in order and uses what the verdicts leave — the messages sent, the
 * arguments passed, the results incorporated, the answer released. Every deny that guards the
 * run (startup, input, a model call, the output, a `host_error` at a tool with `terminate`)
 * rejects with `InterceptionBlockedError` and closes the run to further points; `end()` closes the
 * session with `agent_shutdown`.
 */
export class AgentRun {
  readonly sessionId: string;
  /** The parent run when this one started inside another run's model or tool callback. */
  readonly parent: AgentRun | undefined;
  /** Resolves to the admitted input; rejects with `InterceptionBlockedError` on a startup or input deny. */
  readonly ready: Promise<AdmittedInput>;
  readonly #s: RunSetup;
  readonly #inflight = new Set<Promise<unknown>>();
  readonly #released: string[] = [];
  readonly #history: HistoryItem[] = [];
  /** The results `modelCall` returned: `output(result)` means its `content`. */
  readonly #responses = new WeakSet<object>();
  #blocked: InterceptionBlockedError | undefined;
  /** A call the framework paused on (its approval check found a pending approval): the run ends `approval_pending`. */
  #awaiting: ApprovalPendingError | undefined;
  /** pre_tool_call verdicts taken early (`judgeToolCall`), by call id, for the call's `toolCall` to use once. */
  readonly #prejudged = new Map<string, Promise<JsonObject>>();
  #startupBlocked = false;
  #admitted: AdmittedInput | undefined;
  #outputDone = false;
  #ended: Promise<RunEnd> | undefined;
  /** An ordinary error went through one of the run's calls (`end()` then reports `error`). */
  #failed = false;
  /** One of the run's calls failed because its signal aborted (`end()` then reports `cancelled`). */
  #cancelled = false;
  /** The last model response, for a buffered release that replays its chunks unchanged. */
  #lastStream: { content: JsonValue; chunks: string[] } | undefined;
  /** Text already released from the current model response (incremental streaming). */
  #releasedOfLast = '';

  constructor(setup: RunSetup) {
    this.#s = setup;
    this.sessionId = setup.builder.sessionId;
    this.parent = activeRun.getStore();
    this.ready = this.#open();
    this.ready.catch(() => undefined); // observed through every method; never an unhandled rejection
  }

  /** Everything released to the caller so far, in order (`onRelease` received the same chunks). */
  get released(): string {
    return this.#released.join('');
  }

  /** The deny that blocked the run, if one did. */
  get blocked(): InterceptionBlockedError | undefined {
    return this.#blocked;
  }

  /** The approval a call of this run waits for (the run ends, or ended, `approval_pending`), if any. */
  get awaitingApproval(): ApprovalPendingError | undefined {
    return this.#blocked instanceof ApprovalPendingError ? this.#blocked : this.#awaiting;
  }

  /**
   * pre_tool_call for a call the framework asks about before it runs it (its approval check:
   * the AI SDK's `toolApproval`, an Agents SDK tool's `needsApproval`). Returns the pending
   * approval when a person must decide first — the framework then pauses on its own terms and the
   * run ends `approval_pending` — else undefined. The verdict is kept: the call's `toolCall` uses
   * it (a permit's arguments, or the deny) and emits no second pre_tool_call. With no approval
   * resolver on the emitter nothing is judged early (nothing could be pending).
   */
  async judgeToolCall(call: { id: string; name: string; args: Record<string, unknown> }): Promise<PendingApproval | undefined> {
    await this.#ready();
    if (!isObject(call) || typeof call.id !== 'string' || typeof call.name !== 'string')
      throw new TypeError('judgeToolCall(call): call.id and call.name must be strings');
    // Without an approval resolver nothing can be pending: the call is judged when it runs, as always.
    if (!this.#s.emitter.consultsApprovals) return undefined;
    const judged = this.#observe(this.#preToolCall(call.id, call.name, call.args));
    judged.catch(() => undefined); // observed by the call's toolCall, or here
    this.#prejudged.set(call.id, judged);
    try {
      await judged;
      return undefined;
    } catch (err) {
      if (!(err instanceof ApprovalPendingError)) return undefined; // a deny: the call's toolCall reports it
      this.#prejudged.delete(call.id);
      this.#awaiting ??= err;
      return err.approval;
    }
  }

  async #preToolCall(id: string, name: string, rawArgs: Record<string, unknown>): Promise<JsonObject> {
    return this.#emitPreToolCall(id, name, await this.#project<JsonObject>('pre_tool_call', rawArgs ?? {}));
  }

  async #emitPreToolCall(id: string, name: string, argsIn: JsonObject): Promise<JsonObject> {
    return (await this.#emit(this.#s.builder.preToolCall({ id, name, args: argsIn }), refuseArgs)) as JsonObject;
  }

  get bundle(): object {
    return this.#s.owner;
  }

  /** The session's context builder (the dispatcher's tool points of a linked operation join it). */
  get builder(): AgentContextBuilder {
    return this.#s.builder;
  }

  async #open(): Promise<AdmittedInput> {
    const b = this.#s.builder;
    if (this.#s.ownsSession) {
      try {
        await this.#emit(b.agentStartup({ toolsRegistered: this.#s.tools }));
      } catch (err) {
        // After a startup deny only agent_shutdown(error) follows.
        if (err instanceof InterceptionBlockedError) this.#startupBlocked = true;
        throw err;
      }
    }
    const content = await this.#project('input', this.#s.input.content, true);
    const ctx = b.input({ content, role: this.#s.input.role });
    const target = await this.#emitGuarded(ctx, refuseInput);
    const t = target as JsonObject;
    this.#admitted = { content: t.content ?? null, role: t.role as AdmittedInput['role'] };
    return this.#admitted;
  }

  /**
   * One model call: `pre_model_call` over `messages`, then `call` with the messages as they may be
   * sent, then `post_model_call` over the whole response — assembled first when `call` streams.
   * With `streaming: 'incremental'` each chunk boundary closes a segment judged over the text so
   * far, and a permitted segment is released at once (the incremental exception).
   */
  modelCall(messages: readonly NativeMessage[], call: ModelCaller, options: { modelId?: string } = {}): Promise<ModelCallResult> {
    return this.#observe(this.#modelCall(messages, call, options));
  }

  async #modelCall(messages: readonly NativeMessage[], call: ModelCaller, options: { modelId?: string }): Promise<ModelCallResult> {
    await this.#ready();
    this.#releasedOfLast = ''; // what `output` may still release is relative to this response only
    this.#lastStream = undefined;
    const modelId = options.modelId ?? this.#s.modelId;
    const b = this.#s.builder;
    const projected = await this.#project<Message[]>('pre_model_call', messages, true);
    const sent = (await this.#emitGuarded(b.preModelCall({ modelId, messages: projected }), refuseMessages)) as Message[];
    const produced = await activeRun.run(this, () => call(structuredClone(sent), { signal: this.#s.signal }));
    let response: ModelResponse;
    if (isAsyncIterable(produced)) {
      response = this.#s.streaming === 'incremental' ? await this.#incremental(modelId, produced) : await this.#buffered(modelId, produced);
    } else {
      const raw = normalizeResponse(produced);
      const projectedResponse = await this.#project<JsonObject>(
        'post_model_call',
        { content: raw.content, toolCalls: raw.toolCalls, ...withDefined({ members: raw.members }) },
        true,
      );
      const post = b.postModelCall({
        modelId,
        content: projectedResponse.content ?? null,
        toolCalls: projectedResponse.toolCalls as unknown as ModelResponse['toolCalls'],
        finishReason: raw.finishReason,
        ...withDefined({ members: projectedResponse.members as JsonObject | undefined }),
      });
      response = responseFromTarget(await this.#emitGuarded(post, refuseResponse));
    }
    this.#history.push({ role: 'assistant', content: response.content, toolCalls: response.toolCalls });
    if (this.#s.persistence === 'per_model_call')
      await this.#persist({ kind: 'model_call', sessionId: this.sessionId, messages: structuredClone(sent), response: structuredClone(response) });
    const result = { ...response, sent };
    this.#responses.add(result);
    return result;
  }

  /** Buffered: the whole stream is assembled and judged before anything is released. */
  async #buffered(modelId: string, stream: AsyncIterable<unknown>): Promise<ModelResponse> {
    const assembly = new StreamAssembly();
    const iterator = stream[Symbol.asyncIterator]();
    for (;;) {
      let next: IteratorResult<unknown>;
      try {
        next = await iterator.next();
      } catch (err) {
        return this.#residue(modelId, assembly, err);
      }
      if (next.done === true) break;
      assembly.add(normalizePart(next.value)); // a malformed part is the caller's bug (TypeError), not a truncated stream
    }
    const response = assembly.response();
    const post = this.#s.builder.postModelCall({
      modelId,
      content: response.content,
      toolCalls: await this.#project('post_model_call', response.toolCalls, true),
      finishReason: response.finishReason,
      ...(await this.#members(assembly)),
    });
    const verdicted = responseFromTarget(await this.#emitGuarded(post, refuseResponse));
    this.#lastStream = { content: verdicted.content, chunks: response.content === verdicted.content ? [...assembly.chunks] : [] };
    return verdicted;
  }

  /**
   * Incremental (the opt-in exception to buffering): each text chunk closes the segment before it once the
   * next part arrives; that segment is judged over the assembled prefix (`finish_reason`
   * `"incremental"`) and released on its permit. A deny stops consuming the stream and withholds
   * everything not yet released; a stream that dies leaves residue no verdict covered, which
   * fails closed (`host_error:streaming_unsupported`) and is neither released nor persisted.
   */
  async #incremental(modelId: string, stream: AsyncIterable<unknown>): Promise<ModelResponse> {
    const b = this.#s.builder;
    const assembly = new StreamAssembly();
    let covered = ''; // the judged (possibly transformed) text so far
    let pending: string | undefined; // the last chunk, not yet judged
    let released = '';
    const iterator = stream[Symbol.asyncIterator]();
    const judge = async (content: string, finishReason: string | undefined): Promise<ModelResponse> => {
      const final = finishReason !== undefined;
      const reason = finishReason ?? 'incremental';
      const ctx = b.postModelCall({
        modelId,
        content,
        toolCalls: await this.#project('post_model_call', assembly.toolCalls, true),
        finishReason: reason,
        ...(await this.#members(assembly)),
      });
      const sent = final ? undefined : (structuredClone(ctx.response) as JsonObject);
      let target: JsonValue;
      try {
        target = await this.#emitGuarded(ctx, refuseSegment(released, sent));
      } catch (err) {
        await iterator.return?.().catch(() => undefined); // stop the model: nothing behind a deny is consumed
        throw err;
      }
      const verdicted = responseFromTarget(target);
      const text = typeof verdicted.content === 'string' ? verdicted.content : '';
      if (text.length > released.length) {
        await this.#release(text.slice(released.length));
        released = text;
        this.#releasedOfLast = released;
      }
      covered = text;
      return verdicted;
    };
    for (;;) {
      let next: IteratorResult<unknown>;
      try {
        next = await iterator.next();
      } catch (err) {
        return this.#residue(modelId, assembly, err, covered + (pending ?? ''));
      }
      if (next.done === true) break;
      const event = normalizePart(next.value);
      assembly.add(event);
      if (event?.kind !== 'text') continue;
      if (pending !== undefined) await judge(covered + pending, undefined);
      pending = event.text;
    }
    const finishReason = assembly.effectiveFinishReason;
    if (assembly.chunks.length === 0) {
      // No text at all (a tool-only response): one ordinary emission, nothing to release.
      const ctx = b.postModelCall({
        modelId,
        content: null,
        toolCalls: await this.#project('post_model_call', assembly.toolCalls, true),
        finishReason,
        ...(await this.#members(assembly)),
      });
      return responseFromTarget(await this.#emitGuarded(ctx, refuseResponse));
    }
    return judge(covered + (pending ?? ''), finishReason);
  }

  /** A stream that died mid-way fails closed over what it delivered; nothing of it is released. */
  async #residue(modelId: string, assembly: StreamAssembly, cause: unknown, content?: string): Promise<never> {
    const delivered = content ?? assembly.text;
    const ctx = this.#s.builder.postModelCall({
      modelId,
      content: delivered,
      toolCalls: await this.#project('post_model_call', assembly.toolCalls, true),
      finishReason: 'stream_incomplete',
      ...(await this.#members(assembly)),
    });
    const why = cause instanceof Error ? cause.name : 'error';
    const record = await this.#track(this.#s.emitter.recordHostDeny(ctx, HostError.StreamingUnsupported, `model stream ended before its final part (${why})`));
    const blocked = new InterceptionBlockedError(record, { decision: 'deny', reason: HostError.StreamingUnsupported });
    this.#blocked = blocked;
    throw blocked;
  }

  /**
   * One tool call: `pre_tool_call` over `call.args`, `exec` with the arguments as they may be
   * passed, then `post_tool_call` over the result. A policy deny at either point returns a
   * `blocked` outcome (the tool did not run / its result is discarded) and the loop goes on; a
   * `host_error:*` deny does too with `toolSeamHostError: 'continue'`, and blocks the run with
   * `terminate` (the default). `exec` throwing is a tool failure: `post_tool_call` sees
   * `is_error: true` and the error's message (a `ToolError`'s `result`).
   */
  toolCall(call: ToolCallRequest, exec: ToolExecutor): Promise<ToolCallOutcome> {
    return this.#observe(this.#toolCall(call, exec));
  }

  async #toolCall(call: ToolCallRequest, exec: ToolExecutor): Promise<ToolCallOutcome> {
    await this.#ready();
    if (!isObject(call) || typeof call.name !== 'string') throw new TypeError('toolCall(call): call.name must be a string');
    const id = call.id ?? `${call.name}-${this.#s.builder.nextSequence}`;
    // GenAI conventions: one `execute_tool` span around the call, its guardrail spans inside.
    const span = startExecuteToolSpan({
      name: call.name,
      callId: id,
      sessionId: this.sessionId,
      ...withDefined({ type: call.type, description: call.description }),
    });
    try {
      const outcome = await span.within(() => this.#judgeAndRun(call, id, exec));
      span.end(
        outcome.status === 'blocked' ? { status: 'blocked', at: outcome.at, reason: outcome.reason } : { status: 'completed', isError: outcome.isError },
      );
      return outcome;
    } catch (err) {
      span.end(
        err instanceof InterceptionBlockedError
          ? { status: 'blocked', at: err.record.interception_point, reason: err.record.verdict.reason ?? 'denied' }
          : { status: 'thrown', error: err },
      );
      throw err;
    }
  }

  async #judgeAndRun(call: ToolCallRequest, id: string, exec: ToolExecutor): Promise<ToolCallOutcome> {
    const b = this.#s.builder;
    const prejudged = this.#prejudged.get(id);
    this.#prejudged.delete(id);
    // A projection failure of the arguments blocks as it always did (outside the try); only the verdict is the call's to report.
    const judging = prejudged ?? this.#emitPreToolCall(id, call.name, await this.#project<JsonObject>('pre_tool_call', call.args ?? {}));
    let args: JsonObject;
    try {
      args = await judging;
    } catch (err) {
      return this.#toolBlocked('pre_tool_call', err, call.name, id);
    }
    let value: unknown;
    let isError = false;
    try {
      value = await activeRun.run(this, () => exec(structuredClone(args), { signal: this.#s.signal }));
    } catch (err) {
      // Misuse inside the tool (a nested run of this bundle, a closed run) is the program's bug, not a tool failure;
      // the allowed pre_tool_call still gets its post_tool_call (the call failed) before it propagates.
      if (err instanceof AgentHooksInstallError || err instanceof AgentRunStateError) {
        const failed = b.postToolCall({ id, name: call.name, args: structuredClone(args), value: err.name, isError: true });
        await this.#track(this.#s.emitter.emitUnchecked(failed)).catch(() => undefined);
        throw err;
      }
      value = err instanceof ToolError ? err.result : err instanceof Error ? err.message : String(err);
      isError = true;
    }
    let result: JsonValue;
    try {
      const projected = await this.#project('post_tool_call', value);
      result = await this.#emit(b.postToolCall({ id, name: call.name, args: structuredClone(args), value: projected, isError }));
    } catch (err) {
      return this.#toolBlocked('post_tool_call', err, call.name, id);
    }
    this.#history.push({ role: 'tool', toolCallId: id, name: call.name, content: result, isError });
    return { status: 'completed', args, result, isError, content: result };
  }

  #toolBlocked(at: 'pre_tool_call' | 'post_tool_call', err: unknown, name: string, id: string): ToolCallOutcome {
    if (!(err instanceof InterceptionBlockedError)) throw err;
    // A call waiting for a person ends the run whatever the posture: it resumes once someone decided (A2).
    if (err instanceof ApprovalPendingError) {
      this.#blocked = err;
      throw err;
    }
    const reason = err.record.verdict.reason ?? 'denied';
    const infrastructure = isReservedReason(reason) && !POLICY_REASONS.has(reason);
    if (infrastructure && this.#s.toolSeamHostError === 'terminate') {
      this.#blocked = err;
      throw err;
    }
    const content: JsonObject = { error: 'tool call blocked by policy', reason };
    if (err.record.verdict.message !== undefined) content.message = err.record.verdict.message;
    this.#history.push({ role: 'tool', toolCallId: id, name, content, isError: true });
    const outcome: ToolCallOutcome = { status: 'blocked', at, reason, content };
    if (err.record.verdict.message !== undefined) outcome.message = err.record.verdict.message;
    return outcome;
  }

  /**
   * The final answer (its content, or the result `modelCall` returned — then its `content`):
   * `output` judges it before anything reaches the caller. Returns the content
   * to return (as transformed) and hands it to `onRelease` (the original chunks when it is the
   * streamed answer unchanged). A deny releases nothing, persists nothing and rejects with
   * `InterceptionBlockedError`. With incremental streaming the answer's text was released segment by
   * segment already: only a remainder not yet released goes out here — released text cannot be
   * called back (`buffered_output: false`).
   */
  output(answer: unknown): Promise<JsonValue> {
    return this.#observe(this.#output(answer));
  }

  async #output(answer: unknown): Promise<JsonValue> {
    await this.#ready();
    const content = typeof answer === 'object' && answer !== null && this.#responses.has(answer) ? (answer as ModelCallResult).content : answer;
    if (this.#outputDone) throw new AgentRunStateError('output() was already called for this run: a run has one final answer');
    this.#outputDone = true;
    const projected = await this.#project('output', content, true);
    const target = await this.#emitGuarded(this.#s.builder.output({ content: projected }), refuseOutput);
    const verdicted = (target as JsonObject).content ?? null;
    if (typeof verdicted === 'string') {
      if (this.#s.streaming === 'incremental') {
        if (verdicted.startsWith(this.#releasedOfLast) && verdicted.length > this.#releasedOfLast.length) {
          await this.#release(verdicted.slice(this.#releasedOfLast.length));
        }
      } else if (this.#lastStream !== undefined && this.#lastStream.content === verdicted && this.#lastStream.chunks.length > 0) {
        for (const chunk of this.#lastStream.chunks) await this.#release(chunk);
      } else if (verdicted.length > 0) {
        await this.#release(verdicted);
      }
    }
    const admitted = this.#admitted as AdmittedInput;
    if (this.#s.persistence === 'after_output') {
      await this.#persist({
        kind: 'run',
        sessionId: this.sessionId,
        input: structuredClone(admitted),
        history: structuredClone(this.#history),
        output: structuredClone(verdicted),
      });
    } else {
      await this.#persist({ kind: 'output', sessionId: this.sessionId, output: structuredClone(verdicted) });
    }
    return verdicted;
  }

  /**
   * Close the run: waits for its emissions, then (when the run owns its session) emits
   * `agent_shutdown`. Its `summary.reason` (and `RunEnd.outcome`): `error` after a block;
   * `cancelled` when the run's signal aborted before its output; `error` after an ordinary error
   * went through one of the run's calls (a model call that threw, a failed persist, …); else
   * `reason` (default `completed`). `completed` never hides an abort or an error the run saw; an
   * explicit `error` / `cancelled` is always kept. Idempotent.
   */
  end(reason?: 'completed' | 'error' | 'cancelled'): Promise<RunEnd> {
    if (this.#ended === undefined) this.#ended = this.#close(reason);
    return this.#ended;
  }

  async #close(reason: 'completed' | 'error' | 'cancelled' | undefined): Promise<RunEnd> {
    await this.ready.catch((err: unknown) => this.#noteFailure(err));
    await Promise.allSettled([...this.#inflight]);
    const observed = this.#cancelled || (this.#s.signal?.aborted === true && !this.#outputDone) ? 'cancelled' : this.#failed ? 'error' : undefined;
    const asked = reason ?? 'completed';
    // A run that stops to wait for an approval was cancelled, not failed: it resumes as a new run.
    const pending = this.#startupBlocked ? undefined : this.awaitingApproval?.approval;
    const summary =
      pending !== undefined
        ? 'cancelled'
        : this.#startupBlocked || this.#blocked !== undefined
          ? 'error'
          : asked === 'completed'
            ? (observed ?? 'completed')
            : asked;
    try {
      if (this.#s.ownsSession) await this.#s.emitter.emitUnchecked(this.#s.builder.agentShutdown({ reason: summary }));
    } finally {
      this.#s.onEnd();
    }
    if (pending !== undefined) return { outcome: 'approval_pending', released: this.released, approval: pending };
    const blocked = this.#startupBlocked || this.#blocked !== undefined;
    return { outcome: blocked ? 'blocked' : summary, released: this.released };
  }

  /** Notes how a call of the run failed, for `end()`: an abort is `cancelled`, any other error (not a deny, not misuse of a closed run) `error`. */
  #noteFailure(err: unknown): void {
    if (err instanceof InterceptionBlockedError || err instanceof AgentRunStateError) return;
    if (this.#s.signal?.aborted === true) this.#cancelled = true;
    else this.#failed = true;
  }

  async #observe<T>(p: Promise<T>): Promise<T> {
    try {
      return await p;
    } catch (err) {
      this.#noteFailure(err);
      throw err;
    }
  }

  async #ready(): Promise<void> {
    if (this.#ended !== undefined) throw new AgentRunStateError('this run has ended: start a new run with startRun()');
    await this.ready;
    if (this.#blocked !== undefined) throw this.#blocked;
  }

  /** A guarded point: a deny blocks the whole run. */
  async #emitGuarded(ctx: AgentContext, acceptTarget?: (t: JsonValue) => string | undefined): Promise<JsonValue> {
    try {
      return await this.#emit(ctx, acceptTarget);
    } catch (err) {
      if (err instanceof InterceptionBlockedError) this.#blocked = err;
      throw err;
    }
  }

  #emit(ctx: AgentContext, acceptTarget?: (t: JsonValue) => string | undefined): Promise<JsonValue> {
    const options = acceptTarget === undefined ? {} : { acceptTarget };
    return this.#track(this.#s.emitter.emit(ctx, this.#s.signal ? { ...options, signal: this.#s.signal } : options));
  }

  #track<T>(p: Promise<T>): Promise<T> {
    this.#inflight.add(p);
    const done = () => this.#inflight.delete(p);
    p.then(done, done);
    return p;
  }

  /**
   * The JSON value of a native value for `point`'s context. A value that has none (a cycle) is a
   * Projection failure: recorded as `host_error:context_invalid` and the run is blocked.
   */
  /** The streamed response members (reasoning, files, …) for a post_model_call context, as JSON. */
  async #members(assembly: StreamAssembly): Promise<{ members?: JsonObject }> {
    return assembly.members === undefined ? {} : { members: await this.#project<JsonObject>('post_model_call', assembly.members, true) };
  }

  async #project<T extends JsonValue>(point: InterceptionPoint, value: unknown, guarded = false): Promise<T> {
    try {
      return toJsonValue(value) as T;
    } catch (err) {
      if (!(err instanceof ProjectionError)) throw err;
      const b = this.#s.builder;
      const placeholder = b.output({ content: null }); // consumes the point's sequence; never emitted
      const record = await this.#track(
        this.#s.emitter.recordHostFailure({
          interceptionPoint: point,
          sessionId: b.sessionId,
          sequence: placeholder.sequence,
          timestamp: placeholder.timestamp,
          message: err.detail,
        }),
      );
      const blocked = new InterceptionBlockedError(record, { decision: 'deny', reason: HostError.ContextInvalid });
      if (guarded) this.#blocked = blocked;
      throw blocked;
    }
  }

  async #release(text: string): Promise<void> {
    this.#released.push(text);
    await this.#s.onRelease?.(text);
  }

  async #persist(entry: PersistEntry): Promise<void> {
    await this.#s.persist?.(entry);
  }
}
