import type { LanguageModelMiddleware, ToolSet } from 'ai';
import { AiSdkRun } from './aiSdkRun.ts';
import { judgeModelCall, refuseUnseen, registerTools, type ToolNames } from './aiSdkSeam.ts';
import type { IntegrationOptions, IntegrationRunOptions } from './runBridge.ts';
import { RunBridge } from './runBridge.ts';

/**
 * The AI SDK integration set up once per model: `wrapLanguageModel({ model, middleware:
 * relay.middleware() })` and `relay.wrapTools(tools)`, then plain `generateText` / `streamText`
 * calls. Each call is one run: its first model call starts it (`agent_startup`, `input` over the
 * prompt's last user message), a later model call whose prompt answers this run's tool calls
 * continues it, and the final answer (a response without tool calls) ends it after `output` — a
 * loop stopped on tool calls (a step limit) ends `completed` once `idleMs` pass with no
 * continuation. A wrapped tool belongs to the run whose model asked for it (by tool call id); one
 * no run asked for is refused, never run unjudged. A model call offering a tool `wrapTools` never
 * saw, or carrying back a result no wrapped `execute` produced, is refused (`UninterceptedToolError`);
 * a second hookrelay middleware on one model is refused (`AgentHooksInstallError`).
 */

type WrapOptions = Parameters<NonNullable<LanguageModelMiddleware['wrapGenerate']>>[0];
type CallOptions = WrapOptions['params'];
type GenerateResult = Awaited<ReturnType<WrapOptions['doGenerate']>>;
type StreamResult = Awaited<ReturnType<WrapOptions['doStream']>>;
type Prompt = CallOptions['prompt'];

export type AiSdkMiddlewareOptions = {
  /** Per run (called at its first model call): the operation id, session id, correlation fields; default a random operation. */
  run?: (call: { prompt: Prompt }) => Omit<IntegrationRunOptions, 'input'>;
  /** A run whose last response asked for tool calls nobody continued ends `completed` after this long; default 60 000 ms. */
  idleMs?: number;
};

/** What a bundle's middlewares and its `wrapTools` share: the open runs by the tool call ids their last response asked for, the tools wrapped, the calls a wrapped `execute` ran. */
export type ModelRunRegistry = { byCall: Map<string, Live | typeof CLAIMED_TWICE>; names: ToolNames; claimed: Set<string> };

export function newModelRunRegistry(): ModelRunRegistry {
  return { byCall: new Map(), names: new Map(), claimed: new Set() };
}

/** A tool call id two open runs asked for (a provider reusing ids): its calls are refused, never run under the wrong run. */
const CLAIMED_TWICE = Symbol('claimed twice');

type Live = { run: AiSdkRun; bridge: RunBridge; step: number; calls: Set<string>; last: { content: string; toolCalls: unknown[] }; timer?: NodeJS.Timeout };

function lastUserText(prompt: Prompt): string {
  for (let i = prompt.length - 1; i >= 0; i--) {
    const m = prompt[i]!;
    if (m.role !== 'user') continue;
    return m.content
      .filter((p): p is Extract<typeof p, { type: 'text' }> => p.type === 'text')
      .map((p) => p.text)
      .join('\n');
  }
  return '';
}

/** The prompt with its last user message's text as `input` admitted it. */
function withAdmitted(prompt: Prompt, original: string, admitted: string): Prompt {
  if (admitted === original) return prompt;
  const i = prompt.findLastIndex((m) => m.role === 'user');
  if (i < 0) return prompt;
  const user = prompt[i] as Extract<Prompt[number], { role: 'user' }>;
  const rest = user.content.filter((p) => p.type !== 'text');
  const copy = [...prompt];
  copy[i] = { ...user, content: [{ type: 'text', text: admitted }, ...rest] };
  return copy;
}

/** The tool call ids the prompt's trailing tool messages answer. */
function answeredCalls(prompt: Prompt): string[] {
  const ids: string[] = [];
  for (let i = prompt.length - 1; i >= 0 && prompt[i]!.role === 'tool'; i--) {
    const m = prompt[i] as Extract<Prompt[number], { role: 'tool' }>;
    for (const p of m.content) if (p.type === 'tool-result') ids.push(p.toolCallId);
  }
  return ids;
}

function toolResultsOf(prompt: Prompt): unknown[] {
  const out: unknown[] = [];
  for (let i = prompt.length - 1; i >= 0 && prompt[i]!.role === 'tool'; i--) out.unshift(...(prompt[i] as { content: unknown[] }).content);
  return out;
}

export class AiSdkModelRuns {
  readonly #options: IntegrationOptions;
  readonly #idleMs: number;
  readonly #run: AiSdkMiddlewareOptions['run'];
  readonly #byCall: ModelRunRegistry['byCall'];
  readonly #registry: ModelRunRegistry;

  constructor(options: IntegrationOptions, middleware: AiSdkMiddlewareOptions, registry: ModelRunRegistry) {
    if (middleware.idleMs !== undefined && (!Number.isInteger(middleware.idleMs) || middleware.idleMs < 1))
      throw new TypeError('middleware({ idleMs }): idleMs must be a positive integer (milliseconds)');
    this.#options = options;
    this.#idleMs = middleware.idleMs ?? 60_000;
    this.#run = middleware.run;
    this.#byCall = registry.byCall;
    this.#registry = registry;
  }

  readonly middleware: LanguageModelMiddleware = {
    specificationVersion: 'v4',
    wrapGenerate: ({ params, model }) => judgeModelCall(() => this.#generate(params, model)),
    wrapStream: ({ params, model }) => judgeModelCall(() => this.#stream(params, model)),
  };

  async #generate(params: CallOptions, model: WrapOptions['model']): Promise<GenerateResult> {
    const { live, params: p } = await this.#enter(params);
    let result: GenerateResult;
    try {
      result = await live.run.callModel(p, model);
    } catch (err) {
      await this.#end(live, { status: 'error', error: err });
      throw err;
    }
    await this.#settle(live, result.content);
    return result;
  }

  async #stream(params: CallOptions, model: WrapOptions['model']): Promise<StreamResult> {
    const { live, params: p } = await this.#enter(params);
    let result: StreamResult;
    try {
      result = await live.run.streamModel(p, model);
    } catch (err) {
      await this.#end(live, { status: 'error', error: err });
      throw err;
    }
    type Part = StreamResult['stream'] extends ReadableStream<infer P> ? P : never;
    const parts: Part[] = [];
    let failed: unknown;
    const reader = result.stream.getReader();
    // The run ends when the caller has read the answer, or ends `cancelled` when it stops reading.
    const stream = new ReadableStream<Part>({
      pull: async (controller) => {
        let next: Awaited<ReturnType<typeof reader.read>>;
        try {
          next = await reader.read();
        } catch (err) {
          await this.#end(live, { status: 'error', error: err });
          controller.error(err);
          return;
        }
        if (next.done) {
          if (failed !== undefined) await this.#end(live, { status: 'error', error: failed });
          else await this.#settle(live, parts as unknown as GenerateResult['content']);
          controller.close();
          return;
        }
        if (next.value.type === 'error') failed ??= next.value.error;
        else parts.push(next.value);
        controller.enqueue(next.value);
      },
      cancel: async (reason) => {
        await reader.cancel(reason).catch(() => undefined);
        await this.#end(live, { status: 'cancelled' });
      },
    });
    return { ...result, stream };
  }

  /** The run this model call belongs to (continued, or started and admitted), and the params to send. */
  async #enter(params: CallOptions): Promise<{ live: Live; params: CallOptions }> {
    const answered = answeredCalls(params.prompt);
    const continued = answered.map((id) => this.#byCall.get(id)).find((l): l is Live => l !== undefined && l !== CLAIMED_TWICE);
    try {
      refuseUnseen(params, this.#registry.names, new Set(continued?.calls ?? []), this.#registry.claimed);
    } catch (err) {
      if (continued !== undefined) await this.#end(continued, { status: 'error', error: err });
      throw err;
    }
    if (continued !== undefined) {
      for (const id of continued.calls) this.#byCall.delete(id);
      continued.calls.clear();
      clearTimeout(continued.timer);
      await continued.bridge.afterStep(continued.step, { ...continued.last, toolResults: toolResultsOf(params.prompt) });
      continued.step += 1;
      await continued.bridge.beforeStep(continued.step);
      return { live: continued, params };
    }
    const input = lastUserText(params.prompt);
    const bridge = new RunBridge(this.#options, { ...(this.#run?.({ prompt: params.prompt }) ?? {}), input });
    const live: Live = { run: new AiSdkRun(bridge), bridge, step: 0, calls: new Set(), last: { content: '', toolCalls: [] } };
    let admitted: string;
    try {
      const a = await bridge.ready;
      admitted = typeof a.content === 'string' ? a.content : JSON.stringify(a.content);
    } catch (err) {
      await bridge.finish({ status: 'error', error: err });
      throw err;
    }
    await bridge.beforeStep(0);
    return { live, params: { ...params, prompt: withAdmitted(params.prompt, input, admitted) } };
  }

  /** After a response reached the caller: keep the run open for its tool calls, or end it on the final answer. */
  async #settle(live: Live, content: GenerateResult['content']): Promise<void> {
    const calls = content.filter((p): p is Extract<typeof p, { type: 'tool-call' }> => p.type === 'tool-call' && p.providerExecuted !== true);
    const text = content
      .filter((p): p is Extract<typeof p, { type: 'text' }> => p.type === 'text')
      .map((p) => p.text)
      .join('');
    const deltas = (content as unknown as Array<{ type: string; delta?: string }>).filter((p) => p.type === 'text-delta').map((p) => p.delta ?? '');
    live.last = { content: text + deltas.join(''), toolCalls: calls.map((c) => ({ toolCallId: c.toolCallId, toolName: c.toolName, input: c.input })) };
    if (calls.length === 0) {
      await this.#end(live, { status: 'completed' });
      return;
    }
    for (const c of calls) {
      live.calls.add(c.toolCallId);
      const owner = this.#byCall.get(c.toolCallId);
      this.#byCall.set(c.toolCallId, owner === undefined || owner === live ? live : CLAIMED_TWICE);
    }
    live.timer = setTimeout(() => void this.#end(live, { status: 'completed' }), this.#idleMs);
    live.timer.unref();
  }

  async #end(live: Live, how: Parameters<AiSdkRun['end']>[0]): Promise<void> {
    clearTimeout(live.timer);
    for (const id of live.calls) if (this.#byCall.get(id) === live) this.#byCall.delete(id);
    live.calls.clear();
    if (how.status === 'completed') {
      await live.bridge.afterStep(live.step, live.last);
      await live.run.complete(live.last.content).catch(() => undefined); // an output deny already failed the call that carried it
      return;
    }
    await live.run.end(how);
  }
}

/** Each tool with an `execute` runs through the pre/post_tool_call of the run whose model asked for it (as `AiSdkRun.wrapTools`). */
export function wrapRegistryTools<TOOLS extends ToolSet>(registry: ModelRunRegistry, tools: TOOLS): TOOLS {
  registerTools(registry.names, tools);
  const wrapped: Record<string, unknown> = {};
  for (const [name, t] of Object.entries(tools)) {
    const execute = (t as { execute?: unknown }).execute;
    if (typeof execute !== 'function') {
      wrapped[name] = t;
      continue;
    }
    wrapped[name] = {
      ...t,
      execute: (input: unknown, options: { toolCallId: string }) => {
        const live = registry.byCall.get(options.toolCallId);
        if (live === CLAIMED_TWICE)
          throw new Error(
            `hookrelay: tool call id ${options.toolCallId} (${name}) was asked for by two open runs: refused, as it cannot be told which run it belongs to`,
          );
        if (live === undefined)
          throw new Error(
            `hookrelay: tool call ${options.toolCallId} (${name}) was asked for by no model wrapped with this bundle's middleware: wrap the model with wrapLanguageModel({ model, middleware: relay.middleware() })`,
          );
        registry.claimed.add(options.toolCallId);
        const one = live.run.wrapTools({ [name]: t } as ToolSet)[name] as { execute: (input: unknown, options: unknown) => unknown };
        return one.execute(input, options);
      },
    };
  }
  return wrapped as TOOLS;
}
