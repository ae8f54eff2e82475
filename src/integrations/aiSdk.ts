import type { LanguageModelMiddleware, ToolSet } from 'ai';
import { InterceptionBlocked, InterceptionBlockedError, ToolCallDeniedError } from '../contract/errors.ts';
import { type AiSdkMiddlewareOptions, AiSdkModelRuns, type ModelRunRegistry, newModelRunRegistry, wrapRegistryTools } from './aiSdkMiddleware.ts';
import { AiSdkRun } from './aiSdkRun.ts';
import { checkIntegrationOptions, type IntegrationOptions, type IntegrationRunOptions, RunBridge } from './runBridge.ts';

/**
 * `hookrelay/ai-sdk`: the Vercel AI SDK (v7) under AGENT-HOOKS-0.1 and the operation's lifecycle
 * hooks, two ways: per run (`startRun` → `settings()` → `track()`, with `streaming`, mocks and
 * step callbacks), or set up once per model (`wrapLanguageModel({ model, middleware:
 * relay.middleware() })` plus `relay.wrapTools(tools)`), each `generateText` / `streamText` call
 * then being one run.
 */

export type { IntegrationOptions as AiSdkHooksOptions, IntegrationRunOptions as AiSdkRunOptions, LifecycleDispatcher, RunFinish } from './runBridge.ts';
export type { AiSdkSettings } from './aiSdkRun.ts';
export type { AiSdkMiddlewareOptions } from './aiSdkMiddleware.ts';

/** A bundle of AI SDK runs sharing one AGENT-HOOKS-0.1 bundle and one dispatcher. */
export class AiSdkHooks {
  readonly #options: IntegrationOptions;
  /** The open runs of every middleware of this bundle, by the tool call ids they asked for (what `wrapTools` looks up). */
  readonly #registry: ModelRunRegistry = newModelRunRegistry();
  constructor(options: IntegrationOptions) {
    checkIntegrationOptions(options, 'createAiSdkHooks');
    this.#options = options;
  }

  /** Start one run: `agent_startup` and `input` are emitted at once; `settings()` waits for them. */
  startRun(options: IntegrationRunOptions): AiSdkRun {
    return new AiSdkRun(new RunBridge(this.#options, options));
  }

  /**
   * A language-model middleware for `wrapLanguageModel({ model, middleware })`, set up once per
   * model: each `generateText` / `streamText` call with the wrapped model is one run (see
   * `AiSdkMiddlewareOptions`). Pass the tools through `wrapTools` so their calls are judged too.
   */
  middleware(options: AiSdkMiddlewareOptions = {}): LanguageModelMiddleware {
    return new AiSdkModelRuns(this.#options, options, this.#registry).middleware;
  }

  /** The tools for models wrapped with `middleware()`: each call runs under the run whose model asked for it; a call no run asked for is refused, and so is a model call offering a tool not wrapped here. */
  wrapTools<TOOLS extends ToolSet>(tools: TOOLS): TOOLS {
    return wrapRegistryTools(this.#registry, tools);
  }
}

/** The AI SDK integration: `createAiSdkHooks({ hooks, dispatcher }).startRun({ input, operationId })`. */
export function createAiSdkHooks(options: IntegrationOptions): AiSdkHooks {
  return new AiSdkHooks(options);
}

export { AiSdkRun, InterceptionBlockedError, InterceptionBlocked, ToolCallDeniedError };
