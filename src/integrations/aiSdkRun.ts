import { type LanguageModel, type LanguageModelMiddleware, type ModelMessage, type ToolSet, wrapLanguageModel } from 'ai';
import type { JsonObject, JsonValue } from '../contract/agentHooks.ts';
import { jsonEqual } from '../intercept/json/jsonEqual.ts';
import type { AdmittedInput, NativeMessage } from '../intercept/run/agentRun.ts';
import type { ModelToolCall } from '../intercept/run/modelStream.ts';
import { type ContentPart, isClientToolCall, judgedNonText, membersOf, type StreamPart } from './aiSdkParts.ts';
import { judgeModelCall, refuseUnseen, registerTools, type ToolNames } from './aiSdkSeam.ts';
import { ToolCallDeniedError } from '../contract/errors.ts';
import { ModelBridgedRun, parseArgs, type RunBridge } from './runBridge.ts';
import { withDefined } from '../util/withDefined.ts';
import { isObject } from '../util/isObject.ts';

/**
 * One run of the AI SDK integration (`hookrelay/ai-sdk`) under AGENT-HOOKS-0.1 and the operation's lifecycle
 * hooks. A run hands `generateText` / `streamText` what they take: the model wrapped in a
 * language-model middleware (pre/post_model_call, and `output` over the final answer before any
 * of it reaches the caller), the tools wrapped (pre/post_tool_call, beforeToolCall mocks), the
 * admitted prompt, and step / end callbacks (beforeStep, afterStep, onError, onComplete).
 */

type WrapOptions = Parameters<NonNullable<LanguageModelMiddleware['wrapGenerate']>>[0];
type CallOptions = WrapOptions['params'];
type InnerModel = WrapOptions['model'];
type GenerateResult = Awaited<ReturnType<WrapOptions['doGenerate']>>;
type StreamResult = Awaited<ReturnType<WrapOptions['doStream']>>;
type FinishReason = GenerateResult['finishReason'];
type Prompt = CallOptions['prompt'];

/** What `run.settings()` returns: spread it into `generateText` / `streamText`. */
export type AiSdkSettings<TOOLS extends ToolSet> = {
  model: LanguageModel;
  tools: TOOLS;
  abortSignal?: AbortSignal;
  onStepStart: (event: { stepNumber: number }) => Promise<void>;
  onStepEnd: (step: AiSdkStepEnd) => Promise<void>;
  onEnd: (event: { text: string }) => Promise<void>;
  onError: (event: { error: unknown }) => Promise<void>;
  onAbort: (event: unknown) => Promise<void>;
  /**
   * The AI SDK's approval check, before a wrapped tool runs: pre_tool_call is judged here, and a
   * call a durable approval waits for (an approval queue's resolver) pauses the loop the AI SDK's
   * way — a `tool-approval-request` in the result; the run ends `approval_pending`.
   */
  toolApproval: (options: { toolCall: { toolCallId: string; toolName: string; input: unknown } }) => Promise<AiSdkToolApprovalStatus>;
} & ({ prompt: string; messages?: undefined } | { messages: ModelMessage[]; prompt?: undefined });

/** What `toolApproval` answers (the AI SDK's ToolApprovalStatus members hookrelay uses). */
type AiSdkToolApprovalStatus = 'not-applicable' | { type: 'user-approval'; reason: string };

type AiSdkStepEnd = { stepNumber: number; text: string; toolCalls: readonly unknown[]; toolResults: readonly unknown[]; usage?: unknown };

const FINISH = new Set(['stop', 'length', 'content-filter', 'tool-calls', 'error', 'interrupted', 'other']);

type ClientToolCall = Extract<ContentPart, { type: 'tool-call' }>;
type Judged = { content: JsonValue; toolCalls: readonly ModelToolCall[]; finishReason: string; members?: JsonObject };

/** The run adapter's view of a whole response: text joined, the tool calls the client runs, the other output as members. */
function responseOf(content: readonly (ContentPart | StreamPart)[], finishReason: FinishReason) {
  const text = content.filter((p): p is Extract<ContentPart, { type: 'text' }> => p.type === 'text').map((p) => p.text);
  const toolCalls: ModelToolCall[] = content.filter(isClientToolCall).map((p) => ({ id: p.toolCallId, name: p.toolName, args: parseArgs(p.input) }));
  const members = membersOf(content);
  return {
    content: text.length === 0 ? null : text.join(''),
    toolCalls,
    finishReason: finishReason.unified,
    ...withDefined({ members }),
  };
}

function finishReasonOf(verdicted: string, original: FinishReason): FinishReason {
  if (verdicted === original.unified) return original;
  return { unified: (FINISH.has(verdicted) ? verdicted : 'other') as FinishReason['unified'], raw: verdicted };
}

function textOf(content: JsonValue): string | undefined {
  if (content === null) return undefined;
  return typeof content === 'string' ? content : JSON.stringify(content);
}

/** The tool-call parts for the verdicted calls: an unchanged call keeps its original part (provider metadata and all). */
function toolCallParts(calls: readonly ModelToolCall[], originals: readonly ClientToolCall[]): ClientToolCall[] {
  return calls.map((c, i) => {
    const original = originals.find((o) => o.toolCallId === c.id);
    if (original !== undefined && original.toolName === c.name && jsonEqual(parseArgs(original.input), c.args)) return original;
    return {
      ...(original ?? {}),
      type: 'tool-call',
      toolCallId: c.id ?? original?.toolCallId ?? `hookrelay-call-${i}`,
      toolName: c.name,
      input: JSON.stringify(c.args),
    };
  });
}

function sameResponse(a: ReturnType<typeof responseOf>, judged: Judged): boolean {
  return (
    a.content === judged.content &&
    a.finishReason === judged.finishReason &&
    jsonEqual(a.toolCalls, judged.toolCalls) &&
    jsonEqual(a.members ?? {}, judged.members ?? {})
  );
}

/** Text and tool-input parts: the caller gets them only as the verdict left the text and tool calls. */
const HELD = new Set(['text-start', 'text-delta', 'text-end', 'tool-input-start', 'tool-input-delta', 'tool-input-end']);
/** Parts that frame a stream (no model content): the incremental mode passes them on at once. */
const FRAMING = new Set(['stream-start', 'response-metadata', 'ping']);

/**
 * Native stream parts → the run adapter's parts (text, complete client tool calls, finish, and
 * the response members as they grow); an `error` part ends the stream abnormally. Everything
 * else is kept in `seen` until the verdict; `framing` parts go to `passthrough` at once.
 */
async function* adapterParts(stream: ReadableStream<StreamPart>, seen: StreamPart[], passthrough?: (part: StreamPart) => void) {
  const reader = stream.getReader();
  let dirty = false; // a member part arrived since the members were last handed on
  const members = () => ({ type: 'response-members', members: membersOf(seen) ?? {} });
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) {
        if (dirty) yield members();
        return;
      }
      seen.push(value);
      switch (value.type) {
        case 'text-delta':
          if (dirty) yield members();
          dirty = false;
          yield { type: 'text-delta', text: value.delta };
          break;
        case 'tool-call':
          if (isClientToolCall(value)) {
            if (dirty) yield members();
            dirty = false;
            yield { type: 'tool-call', toolCallId: value.toolCallId, toolName: value.toolName, args: parseArgs(value.input) };
          } else dirty = true;
          break;
        case 'finish':
          if (dirty) yield members();
          dirty = false;
          yield { type: 'finish', finishReason: value.finishReason.unified };
          break;
        case 'error':
          throw value.error instanceof Error ? value.error : new Error('model stream error part');
        default:
          if (FRAMING.has(value.type)) passthrough?.(value);
          else if (!HELD.has(value.type)) dirty = true;
      }
    }
  } finally {
    reader.releaseLock();
    await stream.cancel().catch(() => undefined);
  }
}

function responseFromParts(parts: readonly StreamPart[]) {
  const text = parts.filter((p): p is Extract<StreamPart, { type: 'text-delta' }> => p.type === 'text-delta').map((p) => p.delta);
  const finish = parts.find((p): p is Extract<StreamPart, { type: 'finish' }> => p.type === 'finish');
  const calls = parts.filter((p): p is ClientToolCall => isClientToolCall(p as { type: string }));
  return responseOf(
    [...(text.length > 0 ? [{ type: 'text' as const, text: text.join('') }] : []), ...parts.filter((p) => p.type !== 'text-delta')],
    finish?.finishReason ?? { unified: calls.length > 0 ? 'tool-calls' : 'stop', raw: undefined },
  );
}

/** Everything of a stream but its text, tool-input deltas, client tool calls and finish: the members' parts and the framing. */
function notTextOrCalls(p: StreamPart): boolean {
  return HELD.has(p.type) || p.type === 'finish' || isClientToolCall(p as { type: string });
}

/** The parts the caller gets for a verdicted response: the original ones when nothing changed, else as judged. */
function rebuiltParts(seen: readonly StreamPart[], judged: Judged): StreamPart[] {
  const original = responseFromParts(seen);
  if (sameResponse(original, judged)) return [...seen];
  const originals = seen.filter((p): p is ClientToolCall => isClientToolCall(p as { type: string }));
  const text = textOf(judged.content);
  const out = judgedNonText(seen, original.members, judged.members, { textChanged: original.content !== judged.content, stream: true, skip: notTextOrCalls });
  if (text !== undefined && text !== '') {
    out.push(
      { type: 'text-start', id: 'hookrelay-text' },
      { type: 'text-delta', id: 'hookrelay-text', delta: text },
      { type: 'text-end', id: 'hookrelay-text' },
    );
  }
  out.push(...toolCallParts(judged.toolCalls, originals));
  out.push(finishPart(seen, judged));
  return out;
}

function finishPart(seen: readonly StreamPart[], judged: Judged): StreamPart {
  const finish = seen.find((p): p is Extract<StreamPart, { type: 'finish' }> => p.type === 'finish');
  const fallback: FinishReason = { unified: judged.toolCalls.length > 0 ? 'tool-calls' : 'stop', raw: undefined };
  return finish !== undefined
    ? { ...finish, finishReason: finishReasonOf(judged.finishReason, finish.finishReason) }
    : { type: 'finish', finishReason: finishReasonOf(judged.finishReason, fallback), usage: emptyUsage() };
}

function streamOf(parts: readonly StreamPart[]): ReadableStream<StreamPart> {
  return new ReadableStream<StreamPart>({
    start(controller) {
      for (const p of parts) controller.enqueue(p);
      controller.close();
    },
  });
}

/** One AI SDK run: see `createAiSdkHooks`. */
export class AiSdkRun extends ModelBridgedRun {
  readonly #bridge: RunBridge;
  /** The tools this run wrapped (their calls are judged; `toolApproval` answers for them only). */
  readonly #judgedTools = new Set<string>();
  /** The tools `wrapTools` saw; a model call offering another is refused. */
  readonly #names: ToolNames = new Map();
  /** Call ids the model asked for, and those a wrapped `execute` ran: a result for one asked, not run by hookrelay, is refused. */
  readonly #asked = new Set<string>();
  readonly #claimed = new Set<string>();
  /**
   * The language-model middleware: pass it to `wrapLanguageModel` yourself, or use `wrapModel`. A
   * call offering a tool `wrapTools` did not wrap is refused (`UninterceptedToolError`), and so is
   * this middleware inside another hookrelay middleware's model call (`AgentHooksInstallError`).
   */
  readonly middleware: LanguageModelMiddleware;

  constructor(bridge: RunBridge) {
    super(bridge);
    this.#bridge = bridge;
    const seen = (params: CallOptions) => refuseUnseen(params, this.#names, this.#asked, this.#claimed);
    this.middleware = {
      specificationVersion: 'v4',
      wrapGenerate: ({ params, model }) =>
        judgeModelCall(async () => {
          seen(params);
          return this.callModel(params, model);
        }),
      wrapStream: ({ params, model }) =>
        judgeModelCall(async () => {
          seen(params);
          return this.streamModel(params, model);
        }),
    };
  }

  /** One model call under pre/post_model_call (no seam checks: the caller's middleware made them). */
  callModel(params: CallOptions, model: InnerModel): Promise<GenerateResult> {
    return this.#generate(params, model);
  }

  /** One streamed model call under pre/post_model_call, buffered or incremental as the bundle says. */
  streamModel(params: CallOptions, model: InnerModel): Promise<StreamResult> {
    return this.#bridge.streaming === 'incremental' ? this.#streamIncremental(params, model) : this.#streamBuffered(params, model);
  }

  #noteAsked(calls: readonly ModelToolCall[]): void {
    for (const c of calls) if (c.id !== undefined) this.#asked.add(c.id);
  }

  wrapModel(model: LanguageModel): LanguageModel {
    return wrapLanguageModel({ model: model as Parameters<typeof wrapLanguageModel>[0]['model'], middleware: this.middleware });
  }

  /** Each tool with an `execute` runs through pre/post_tool_call (and the operation's beforeToolCall mocks); a deny is the error result the model sees. */
  wrapTools<TOOLS extends ToolSet>(tools: TOOLS): TOOLS {
    registerTools(this.#names, tools);
    const wrapped: Record<string, unknown> = {};
    for (const [name, t] of Object.entries(tools)) {
      const execute = (t as { execute?: (input: unknown, options: { toolCallId: string }) => unknown }).execute;
      if (typeof execute !== 'function') {
        wrapped[name] = t;
        continue;
      }
      this.#judgedTools.add(name);
      wrapped[name] = {
        ...t,
        execute: async (input: unknown, options: { toolCallId: string }) => {
          this.#claimed.add(options.toolCallId);
          const args = isObject(input) ? input : { input };
          let thrown: unknown;
          // The tool's own description labels its execute_tool span (gen_ai.tool.description).
          const description = (t as { description?: unknown }).description;
          const r = await this.#bridge.toolCall(
            { id: options.toolCallId, name, args, ...(typeof description === 'string' ? { description } : {}) },
            async (admitted) => {
              try {
                return await lastValue(await execute(isObject(input) ? admitted : admitted.input, options));
              } catch (err) {
                thrown = err;
                throw err;
              }
            },
          );
          if (r.kind === 'result') return r.value;
          // Thrown from `execute`, the AI SDK hands the model an error result (`error-text`).
          if (r.reason !== undefined) throw new ToolCallDeniedError(r.message, r.content, r.reason);
          if (thrown instanceof Error && thrown.message === r.message) throw thrown; // post_tool_call left the failure as it was
          throw new Error(r.message);
        },
      };
    }
    return wrapped as TOOLS;
  }

  /**
   * Everything `generateText` / `streamText` need from the run, after `input` admitted the prompt:
   * the wrapped model and tools, the prompt (or `messages` plus the admitted user message), the
   * run's abort signal, and the step and end callbacks. Spread it; pass `stopWhen` etc. yourself.
   */
  async settings<TOOLS extends ToolSet = ToolSet>(options: {
    model: LanguageModel;
    tools?: TOOLS;
    messages?: unknown[];
    abortSignal?: AbortSignal;
    /**
     * Resuming after an approval: `messages` end with the tool message answering the AI SDK's
     * `tool-approval-request` and are passed as they are (no user message appended after them).
     */
    resume?: boolean;
  }): Promise<AiSdkSettings<TOOLS>> {
    let admitted: AdmittedInput;
    try {
      admitted = await this.#bridge.ready;
    } catch (err) {
      await this.#bridge.finish({ status: 'error', error: err });
      throw err;
    }
    const text = typeof admitted.content === 'string' ? admitted.content : JSON.stringify(admitted.content);
    const user: ModelMessage = { role: 'user', content: text };
    const prompt: { prompt: string } | { messages: ModelMessage[] } =
      options.messages !== undefined
        ? { messages: (options.resume === true ? [...options.messages] : [...options.messages, user]) as ModelMessage[] }
        : { prompt: text };
    return {
      model: this.wrapModel(options.model),
      tools: this.wrapTools(options.tools ?? ({} as TOOLS)),
      ...withDefined({ abortSignal: options.abortSignal }),
      ...prompt,
      onStepStart: (event) => this.#bridge.beforeStep(event.stepNumber),
      onStepEnd: (step) =>
        this.#bridge.afterStep(step.stepNumber, {
          content: step.text,
          toolCalls: [...step.toolCalls],
          toolResults: [...step.toolResults],
          ...withDefined({ usage: step.usage }),
        }),
      onEnd: (event) => this.complete(event.text).then(() => undefined),
      onError: ({ error }) => this.end({ status: 'error', error }).then(() => undefined),
      onAbort: () => this.end({ status: 'cancelled' }).then(() => undefined),
      toolApproval: async ({ toolCall }) => {
        if (!this.#judgedTools.has(toolCall.toolName)) return 'not-applicable';
        const args = isObject(toolCall.input) ? toolCall.input : { input: toolCall.input };
        if (!(await this.#bridge.awaitsApproval({ id: toolCall.toolCallId, name: toolCall.toolName, args }))) return 'not-applicable';
        return { type: 'user-approval', reason: `hookrelay approval ${this.#bridge.pendingApproval?.approval.id ?? ''} pending` };
      },
    };
  }

  /**
   * The framework call finished: `output` over `text` unless the final response was judged already
   * (a step limit can end the loop on tool calls), then the run ends `completed`. Returns the final
   * answer as `output` left it. Throws `InterceptionBlockedError` on an output deny (the run ends `error`).
   */
  async complete(text: string): Promise<JsonValue> {
    if (this.#bridge.pendingApproval !== undefined) {
      // Paused for a person: no final answer to judge; the run ends `approval_pending`.
      await this.end({ status: 'completed' });
      return null;
    }
    if (this.#bridge.failure !== undefined) {
      await this.end({ status: 'error', error: this.#bridge.failure }); // a stream error part the framework reported as an end
      return null;
    }
    if (!this.#bridge.outputJudged) {
      try {
        await this.#bridge.judgeOutput(text);
      } catch (err) {
        await this.end({ status: 'error', error: err });
        throw err;
      }
    }
    await this.end({ status: 'completed' });
    return this.#bridge.output ?? null;
  }

  /**
   * Await a `generateText` call made with `settings()` — or a `generateObject` call made with
   * `wrapModel()` (its JSON text was judged as the answer) —: ends the run `completed`, `error`
   * or `cancelled`, and rethrows a failure.
   */
  async track<R extends { text: string } | { object: unknown }>(call: PromiseLike<R>): Promise<R> {
    let result: R;
    try {
      result = await call;
    } catch (err) {
      await this.end({ status: 'error', error: err });
      throw err;
    }
    await this.complete('text' in result ? result.text : JSON.stringify(result.object ?? null));
    return result;
  }

  #messages(params: CallOptions): NativeMessage[] {
    return params.prompt as unknown as NativeMessage[];
  }

  async #generate(params: CallOptions, model: InnerModel): Promise<GenerateResult> {
    let raw: GenerateResult | undefined;
    const { result } = await this.#bridge.modelCall(
      this.#messages(params),
      async (sent) => {
        raw = await model.doGenerate({ ...params, prompt: sent as unknown as Prompt });
        return responseOf(raw.content, raw.finishReason);
      },
      { modelId: model.modelId },
    );
    this.#noteAsked(result.toolCalls);
    const original = raw as GenerateResult;
    const before = responseOf(original.content, original.finishReason);
    if (sameResponse(before, result)) return original;
    const text = textOf(result.content);
    const kept = judgedNonText(original.content, before.members, result.members, {
      textChanged: before.content !== result.content,
      stream: false,
      skip: (p) => p.type === 'text' || isClientToolCall(p),
    });
    const content: ContentPart[] = [
      ...kept,
      ...(text !== undefined ? [{ type: 'text' as const, text }] : []),
      ...toolCallParts(result.toolCalls, original.content.filter(isClientToolCall)),
    ];
    return { ...original, content, finishReason: finishReasonOf(result.finishReason, original.finishReason) };
  }

  /** Buffered (default): the whole response is judged (and `output` when it is the final answer) before one part reaches the caller. */
  async #streamBuffered(params: CallOptions, model: InnerModel): Promise<StreamResult> {
    const seen: StreamPart[] = [];
    let meta: Omit<StreamResult, 'stream'> = {};
    const { result } = await this.#bridge.modelCall(
      this.#messages(params),
      async (sent) => {
        const { stream, ...rest } = await model.doStream({ ...params, prompt: sent as unknown as Prompt });
        meta = rest;
        return adapterParts(stream, seen);
      },
      { modelId: model.modelId },
    );
    this.#noteAsked(result.toolCalls);
    return { ...meta, stream: streamOf(rebuiltParts(seen, result)) };
  }

  /**
   * Incremental (`streaming: 'incremental'` on the bundle): each text segment reaches the caller
   * once its post_model_call permitted it; everything else — reasoning, files, sources, tool
   * calls and their input deltas, the finish part — once the whole response was judged, as the
   * verdict left it. A deny errors the stream after the text already released (it cannot be
   * called back) and withholds the rest.
   */
  async #streamIncremental(params: CallOptions, model: InnerModel): Promise<StreamResult> {
    const bridge = this.#bridge;
    const seen: StreamPart[] = [];
    let metaReady!: (m: Omit<StreamResult, 'stream'>) => void;
    const meta = new Promise<Omit<StreamResult, 'stream'>>((resolve) => (metaReady = resolve));
    let textOpen = false;
    const stream = new ReadableStream<StreamPart>({
      start: (controller) => {
        const emitText = (delta: string) => {
          if (!textOpen) controller.enqueue({ type: 'text-start', id: 'hookrelay-text' });
          textOpen = true;
          controller.enqueue({ type: 'text-delta', id: 'hookrelay-text', delta });
        };
        bridge.setSink(emitText);
        void bridge
          .modelCall(
            this.#messages(params),
            async (sent) => {
              const { stream: inner, ...rest } = await model.doStream({ ...params, prompt: sent as unknown as Prompt });
              metaReady(rest);
              return adapterParts(inner, seen, (part) => controller.enqueue(part));
            },
            { modelId: model.modelId },
          )
          .then(({ result }) => {
            this.#noteAsked(result.toolCalls);
            bridge.setSink(undefined);
            if (textOpen) controller.enqueue({ type: 'text-end', id: 'hookrelay-text' });
            const original = responseFromParts(seen);
            const rest = judgedNonText(seen, original.members, result.members, {
              textChanged: original.content !== result.content,
              stream: true,
              skip: (p) => notTextOrCalls(p) || FRAMING.has(p.type), // the framing went out at once
            });
            for (const part of rest) controller.enqueue(part);
            for (const part of toolCallParts(
              result.toolCalls,
              seen.filter((p): p is ClientToolCall => isClientToolCall(p as { type: string })),
            ))
              controller.enqueue(part);
            controller.enqueue(finishPart(seen, result));
            controller.close();
          })
          .catch((err: unknown) => {
            // The provider convention for a failed stream: an error part, then the end (text already released stays).
            bridge.setSink(undefined);
            metaReady({});
            if (textOpen) controller.enqueue({ type: 'text-end', id: 'hookrelay-text' });
            controller.enqueue({ type: 'error', error: err });
            controller.close();
          });
      },
    });
    return { ...(await meta), stream };
  }
}

function emptyUsage(): Extract<StreamPart, { type: 'finish' }>['usage'] {
  return {
    inputTokens: { total: undefined, noCache: undefined, cacheRead: undefined, cacheWrite: undefined },
    outputTokens: { total: undefined, text: undefined, reasoning: undefined },
  };
}

/** A tool may stream preliminary results (an async iterable): the model gets the last one. */
async function lastValue(value: unknown): Promise<unknown> {
  if (value !== null && typeof value === 'object' && typeof (value as { [Symbol.asyncIterator]?: unknown })[Symbol.asyncIterator] === 'function') {
    let last: unknown;
    for await (const v of value as AsyncIterable<unknown>) last = v;
    return last;
  }
  return value;
}
