import { CriticalHookDeliveryError } from '../contract/criticalError.ts';
import type { EndpointGuard } from '../contract/endpoint.ts';
import type { HookEventOf } from '../contract/events.ts';
import { type AgentHook, isControlHook, type ParsedAgentHook, type ParsedSerializedHook, type SerializedHook } from '../contract/hook.ts';
import { type HookType, isHookType } from '../contract/hookTypes.ts';
import { matchesHook } from '../contract/matcher.ts';
import type { ToolCallHookContext, ToolCallResult } from '../contract/toolContext.ts';
import { loadEnvHooks } from '../config/envHooks.ts';
import { readSettings } from '../config/settings.ts';
import { resolveTemplateEnv } from '../config/templateEnv.ts';
import type { QStashPublisher } from '../delivery/types.ts';
import { createWebhookPayloadBuilder } from '../payload/buildPayload.ts';
import type { EmailLookup } from '../payload/emailCache.ts';
import { createLogger, type Logger } from '../observability/logger.ts';
import { activeTracer, inSpan } from '../observability/tracing.ts';
import { evaluateControls, type ToolCallControlOutcome } from '../control/evaluateControls.ts';
import type { AgentHooksAttachment, AgentHooksBinding } from '../interception/agentHooks.ts';
import type { InterceptionEmitter } from '../interception/emitter.ts';
import { AgentHooksInstallError } from '../interception/errors.ts';
import { type ControlRunner, createControlRunner } from './controlRunner.ts';
import type { DeliveryPort } from './deliveryPort.ts';
import { createEnvHookSource } from './envHookSource.ts';
import { HookRegistry } from './hookRegistry.ts';
import { createInterceptionSeam, type InterceptionPosture, type InterceptionSessionOption } from './interceptionSeam.ts';
import { createLocalDelivery } from './localDelivery.ts';
import { createQueueDelivery, type DispatchProducer, type OwnedProducer, type OwnedProducerFactory } from './queueDelivery.ts';
import { assertEvent, type RunnableHook } from './runnableHook.ts';
import { assertStorableEvent } from '../contract/storableText.ts';
import { SendContext } from './sendContext.ts';
import { shutdownReasonFor } from './shutdownReason.ts';
import type { ToolSeam } from './toolSeam.ts';

export type { DispatchProducer, OwnedProducer, OwnedProducerFactory } from './queueDelivery.ts';
/** What the package entry injects (not options a caller sets). */
export type DispatcherDefaults = { createProducer?: OwnedProducerFactory };

export type HookDispatcherOptions = {
  mode?: 'local' | 'queue';
  producer?: DispatchProducer;
  /** The environment templates, env hooks and QStash settings are read from, at each use. */
  env?: Record<string, string | undefined>;
  /** AGENT-HOOKS-0.1 emitter consulted at the tool seam (I4): pre_tool_call / post_tool_call first. */
  emitter?: InterceptionEmitter;
  /** I4: what an infrastructure `host_error:*` deny does: `terminate` (default) or `continue`. */
  interceptionPosture?: InterceptionPosture;
  /**
   * An application-owned AGENT-HOOKS-0.1 session the tool points join (a builder for every
   * operation, or a function choosing one per operation; `undefined` from it = a per-operation
   * session owned by the dispatcher). The application emits that session's agent_startup and
   * agent_shutdown itself; the dispatcher never does.
   */
  interceptionSession?: InterceptionSessionOption;
  logger?: Logger;
  emailLookup?: EmailLookup;
  appUrl?: string;
  /** SSRF allow-list (Q5); default HOOKRELAY_ALLOWED_CIDRS read at construction. */
  allowedCidrs?: string;
  /**
   * W2: which variables hook templates may read (`HOOK_*,BILLING_TOKEN`; `*` globs; `none`);
   * default HOOKRELAY_TEMPLATE_ENV read at construction, else `none`. hookrelay's own variables never.
   */
  templateEnv?: string;
  /** Local-mode QStash publisher; default built from QSTASH_URL / QSTASH_TOKEN at send time. */
  qstash?: QStashPublisher;
  /**
   * The workers' endpoint breakers, for decision webhooks (`createEndpointGuard` from
   * 'hookrelay/queue'): a control whose endpoint is open or disabled fails at once with
   * `circuit_open`, handled by its onError. None: every control is sent.
   */
  endpointGuard?: EndpointGuard;
};

export type EvaluateOptions = {
  signal?: AbortSignal;
  /** Restored caller hooks, with D9 precedence (D9a). */
  serializedHooks?: readonly unknown[];
  /** Run the environment's hooks after the caller's (default true). Deferred rounds run them once, last (L3). */
  environmentHooks?: boolean;
};

const NO_HOOKS: RunnableHook[] = [];

/**
 * Registers hooks per agent operation and dispatches lifecycle events to them in registration
 * order (D1). The parts: a registry (hookRegistry.ts), the environment's hooks (envHookSource.ts),
 * a delivery port — local (handlers + one inline attempt) or queue (ledger row + job) — the
 * decision-webhook runner for controls, and the AGENT-HOOKS-0.1 seam. Knows nothing of HTTP itself.
 */
export class HookDispatcher {
  readonly mode: 'local' | 'queue';
  readonly #env: Record<string, string | undefined>;
  readonly #logger: Logger;
  readonly #registry: HookRegistry;
  readonly #envHooks: () => RunnableHook[];
  readonly #send: SendContext;
  readonly #delivery: DeliveryPort;
  readonly #runControl: ControlRunner;
  #seam: ToolSeam | undefined;

  constructor(options: HookDispatcherOptions = {}, defaults: DispatcherDefaults = {}) {
    this.mode = options.mode ?? 'local';
    const env = options.env ?? process.env;
    this.#env = env;
    // W2: an invalid pattern fails construction (TemplateEnvPatternError names the variable).
    const templateEnv = resolveTemplateEnv(options.templateEnv, env);
    if (this.mode === 'queue' && !options.producer && !defaults.createProducer) {
      throw new TypeError(
        "queue mode needs a producer: pass `producer: createHookProducer()` (from 'hookrelay/queue'), or construct the dispatcher from the 'hookrelay' entry",
      );
    }
    // §13: the construction-time settings, through the settings schema (a bad value is a SettingsError naming it).
    const settings = readSettings(['APP_URL', 'HOOKRELAY_ALLOWED_CIDRS', 'LOG_LEVEL'], env);
    // A library logs only what needs attention (failed deliveries, D5), to stderr, unless told otherwise.
    const level = env.LOG_LEVEL?.trim() ? settings.LOG_LEVEL : 'warn';
    this.#logger = options.logger ?? createLogger({ level, pretty: false, destination: process.stderr });
    this.#registry = new HookRegistry(templateEnv);
    this.#envHooks = createEnvHookSource(env);
    this.#send = new SendContext({
      env,
      templateEnv,
      appUrl: options.appUrl ?? settings.APP_URL,
      allowedCidrs: options.allowedCidrs ?? settings.HOOKRELAY_ALLOWED_CIDRS,
      qstash: options.qstash,
      logger: this.#logger,
    });
    const payloads = createWebhookPayloadBuilder({ emailLookup: options.emailLookup, logger: this.#logger });
    if (this.mode === 'queue') {
      // Queue mode without a producer gets one configured from the same environment (SPEC §13),
      // owned (and closed) by this dispatcher; it connects on its first enqueue.
      const owned: OwnedProducer | undefined = options.producer
        ? undefined
        : defaults.createProducer!({ env, ...(options.templateEnv !== undefined ? { templateEnv: options.templateEnv } : {}) });
      this.#delivery = createQueueDelivery(options.producer ?? owned!, this.#logger, owned);
    } else {
      this.#delivery = createLocalDelivery(this.#send, payloads);
    }
    this.#runControl = createControlRunner(this.#send, payloads, options.endpointGuard);
    this.#seam = options.emitter
      ? createInterceptionSeam(options.emitter, { posture: options.interceptionPosture, session: options.interceptionSession, logger: this.#logger })
      : undefined;
  }

  /**
   * I4: install an AGENT-HOOKS-0.1 bundle (`createAgentHooks({ dispatcher })` calls this): its
   * emitter reviews this dispatcher's tool calls, and an operation with an active run of the
   * bundle emits into that run's session (the run owns its agent_startup / agent_shutdown). One
   * installation per dispatcher: a dispatcher built with `emitter`, or one that already has a
   * bundle, refuses a second.
   */
  attachAgentHooks(binding: AgentHooksBinding): AgentHooksAttachment {
    if (this.#seam !== undefined) {
      throw new AgentHooksInstallError(
        'this dispatcher already has an AGENT-HOOKS-0.1 emitter (its `emitter` option or a bundle): install one bundle per agent (stacked bundles are refused)',
      );
    }
    const seam = createInterceptionSeam(binding.emitter, { posture: binding.posture, session: binding.session, logger: this.#logger });
    this.#seam = seam;
    return { release: (operationId) => seam.forget(operationId) };
  }

  /** I4: true when an AGENT-HOOKS-0.1 emitter reviews this dispatcher's tool calls (post_tool_call too). */
  get intercepts(): boolean {
    return this.#seam !== undefined;
  }

  /** D4a/D9: validate the whole batch first; append; duplicate ids rejected; snapshots stored. */
  register(operationId: string, hooks: AgentHook[] | SerializedHook[]): void {
    if (typeof operationId !== 'string' || operationId === '') throw new TypeError('operationId must be a non-empty string');
    this.#registry.add(operationId, hooks, (isNew) => {
      loadEnvHooks(this.#env); // §14: an invalid environment configuration fails registration, naming the variables
      // The session opens first: an invalid interceptionSession throws before anything is registered.
      if (isNew) this.#seam?.onStartup(operationId);
    });
  }

  /**
   * D2: remove the registration (at completion). With an emitter, the operation's own session
   * closes with agent_shutdown, its `summary.reason` mapped from `reason` (default `done` →
   * `completed`; see `shutdownReasonFor`) — also a session this process opened at a tool call
   * without a registration (a cold worker).
   */
  unregister(operationId: string, options: { reason?: string } = {}): void {
    const reason = options.reason ?? 'done';
    if (typeof reason !== 'string') throw new TypeError('options.reason must be a string');
    this.#registry.delete(operationId);
    this.#seam?.onShutdown(operationId, shutdownReasonFor(reason));
  }

  /** D9a: `undefined` for an unknown operation, `[]` when it has no webhook hooks. Templates unresolved. */
  getSerializedHooks(operationId: string): SerializedHook[] | undefined {
    return this.#registry.serialized(operationId);
  }

  /** E4/L1: the hooks of the current environment (throws naming the variables when invalid). */
  environmentHooks(): ParsedSerializedHook[] {
    return loadEnvHooks(this.#env);
  }

  #callerHooks(operationId: string, serializedHooks: readonly unknown[] | undefined): RunnableHook[] {
    return this.#registry.callerHooks(this.mode, operationId, serializedHooks);
  }

  /**
   * Dispatch one event to the matching hooks of `type`, in order (D1). The event is typed by its
   * hook type (`HookEventOf<T>`) and validated loosely at run time (D10). Ordinary errors are logged
   * and dispatch continues (D5); `fallback: 'none'` failures are thrown together after the tier
   * (caller hooks, then environment hooks) has run (D6).
   */
  async dispatch<T extends HookType>(operationId: string, type: T, event: HookEventOf<T>, serializedHooks?: readonly unknown[]): Promise<void> {
    if (activeTracer() === undefined) return this.#dispatch(operationId, type, event, serializedHooks);
    // `hookrelay.dispatch`: the enqueue (queue mode) or the inline send (local mode) are its children.
    return inSpan(
      'hookrelay.dispatch',
      { attributes: { 'hookrelay.operation_id': operationId, 'hookrelay.hook_type': String(type), 'hookrelay.mode': this.mode } },
      () => this.#dispatch(operationId, type, event, serializedHooks),
    );
  }

  async #dispatch<T extends HookType>(operationId: string, type: T, event: HookEventOf<T>, serializedHooks: readonly unknown[] | undefined): Promise<void> {
    if (!isHookType(type)) throw new TypeError(`unknown hook type "${String(type)}"`);
    if (typeof operationId === 'string') assertStorableEvent(operationId, 'dispatch', 'operationId');
    assertEvent(event);
    const caller = this.#callerHooks(operationId, serializedHooks);
    let envHooks: RunnableHook[] = [];
    let envError: unknown;
    try {
      envHooks = this.#envHooks();
    } catch (error) {
      envError = error; // L5: thrown after the caller hooks of this dispatch have run
    }
    const hooks = [...caller, ...envHooks].filter((h) => h.type === type && !isControlHook(h) && matchesHook(h, event));
    const failures = await this.#delivery.deliver(operationId, type, event, hooks);
    if (envError !== undefined) throw envError;
    if (failures.length > 0) {
      const error = new CriticalHookDeliveryError(failures);
      this.#logger.error({ operationId, hookType: type, hookIds: failures.map((f) => f.hookId) }, error.message);
      throw error;
    }
  }

  /**
   * M1–M3: local `beforeToolCall` handlers get `event.mock(result)`; the first mock wins and the
   * remaining handlers are skipped. Delivers no webhooks. Queue mode has no mocks (D8).
   */
  async dispatchBeforeToolCall(
    operationId: string,
    event: Record<string, unknown>,
    serializedHooks?: readonly unknown[],
  ): Promise<{ isMocked: true; result: ToolCallResult } | null> {
    assertEvent(event);
    if (this.mode === 'queue') return null;
    const hooks = this.#callerHooks(operationId, serializedHooks).filter(
      (h): h is ParsedAgentHook => h.type === 'beforeToolCall' && 'handler' in h && typeof h.handler === 'function' && matchesHook(h, event),
    );
    let mocked: { result: ToolCallResult } | undefined;
    for (const hook of hooks) {
      const mock = (result: ToolCallResult): boolean => {
        if (mocked) return false;
        mocked = { result };
        return true;
      };
      try {
        await hook.handler!({ ...event, mock });
      } catch (error) {
        this.#logger.warn({ operationId, hookId: hook.id, err: error instanceof Error ? error.name : 'error' }, 'beforeToolCall handler failed');
      }
      if (mocked) break; // M1: mock-then-throw still counts
    }
    return mocked ? { isMocked: true, result: mocked.result } : null;
  }

  /** R1–R7: run the beforeToolCall controls; the first deny blocks; an allow does not end the check. */
  evaluateToolCall(operationId: string, context: ToolCallHookContext, opts: EvaluateOptions = {}): Promise<ToolCallControlOutcome> {
    return this.#evaluate(operationId, 'beforeToolCall', context, undefined, opts);
  }

  /** R3: the afterToolCall controls review the full result before it is archived or shown. */
  evaluateAfterToolCall(
    operationId: string,
    context: ToolCallHookContext,
    result: ToolCallResult,
    opts: EvaluateOptions = {},
  ): Promise<ToolCallControlOutcome> {
    return this.#evaluate(operationId, 'afterToolCall', context, result, opts);
  }

  async #evaluate(
    operationId: string,
    type: 'beforeToolCall' | 'afterToolCall',
    context: ToolCallHookContext,
    result: ToolCallResult | undefined,
    opts: EvaluateOptions,
  ): Promise<ToolCallControlOutcome> {
    if (opts.signal?.aborted) return { status: 'cancelled' };
    const seamed = this.#seam ? await this.#seam.before(type, operationId, context, result, opts.signal) : undefined;
    if (seamed?.outcome) return seamed.outcome;
    const effectiveContext = seamed?.context ?? context;
    const effectiveResult = seamed?.result ?? result;
    const outcome = await evaluateControls({
      type,
      context: effectiveContext,
      result: effectiveResult,
      callerHooks: this.#callerHooks(operationId, opts.serializedHooks),
      envHooks: opts.environmentHooks === false ? NO_HOOKS : this.#envHooks,
      run: this.#runControl,
      logger: this.#logger,
      signal: opts.signal,
    });
    if (outcome.status !== 'allow') return outcome;
    if (seamed?.context && type === 'beforeToolCall') return { status: 'allow', args: effectiveContext.args };
    if (seamed?.result && type === 'afterToolCall') return { status: 'allow', result: effectiveResult };
    return outcome;
  }

  /** Waits for pending agent_startup / agent_shutdown records, then releases connection pools and timers. */
  async close(): Promise<void> {
    await this.#seam?.drain();
    await this.#send.close();
    await this.#delivery.close();
  }
}
