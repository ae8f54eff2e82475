import { assertPrintableId } from '../contract/terminalText.ts';
import { CriticalHookDeliveryError, type DispatchReport, EventNotAcceptedError, type NotAcceptedDelivery, AgentHooksInstallError } from '../contract/errors.ts';
import type { EndpointGuard } from '../contract/endpoint.ts';
import { DEFAULT_TENANT, parseTenant, TenantMismatchError } from '../contract/tenant.ts';
import type { HookEventOf } from '../contract/events.ts';
import { type AgentHook, isControlHook, type ParsedAgentHook, type ParsedSerializedHook, type SerializedHook, serializeHook } from '../contract/hook.ts';
import { type HookType, isHookType } from '../contract/hookTypes.ts';
import { matchesHook } from '../contract/matcher.ts';
import { ToolCallHookContextSchema, type ToolCallHookContext, type ToolCallResult } from '../contract/toolContext.ts';
import type { z } from 'zod';
import { loadEnvHooks } from '../config/envHooks.ts';
import { resolveConfig } from '../config/resolveConfig.ts';
import type { QStashPublisher } from '../send/types.ts';
import { createWebhookPayloadBuilder } from '../notify/buildPayload.ts';
import type { EmailLookup } from '../notify/emailCache.ts';
import { refuseEmptyToolCallIds } from '../notify/toolCallContext.ts';
import { createLogger, type Logger } from '../observability/logger.ts';
import { activeTracer, inSpan } from '../observability/tracing.ts';
import { evaluateControls, type ToolCallControlOutcome } from '../decide/evaluateControls.ts';
import type { AgentHooksAttachment, AgentHooksBinding } from '../intercept/run/bundle.ts';
import type { InterceptionEmitter } from '../intercept/emitter.ts';
import { type ControlRunner, createControlRunner } from '../decide/controlRunner.ts';
import type { DeliveryPort } from './deliveryPort.ts';
import { createEnvHookSource } from './envHookSource.ts';
import { HookRegistry } from './hookRegistry.ts';
import { createInterceptionSeam, type InterceptionPosture, type InterceptionSessionOption } from './interceptionSeam.ts';
import { createLocalDelivery } from './localDelivery.ts';
import { createQueueDelivery, type DispatchProducer, type OwnedProducer, type OwnedProducerFactory } from './queueDelivery.ts';
import { assertEvent, type RunnableHook } from './runnableHook.ts';
import { withOperationId } from './operationEvent.ts';
import { withReadableError } from '../util/errorMessage.ts';
import { assertStorableEvent } from '../contract/storableText.ts';
import { SendContext } from '../notify/sendContext.ts';
import { shutdownReasonFor } from './shutdownReason.ts';
import type { ToolSeam } from './toolSeam.ts';
import { withDefined } from '../util/withDefined.ts';
import { isObject } from '../util/isObject.ts';

export type { DispatchProducer } from './queueDelivery.ts';
/** What the package entry injects (not options a caller sets). */
export type DispatcherDefaults = { createProducer?: OwnedProducerFactory };

export type HookDispatcherOptions = {
  mode?: 'local' | 'queue';
  producer?: DispatchProducer;
  /** The environment templates, env hooks and QStash settings are read from, at each use. */
  env?: Record<string, string | undefined>;
  /**
   * AGENT-HOOKS-0.1 emitter consulted at the tool seam (I4): pre_tool_call / post_tool_call first.
   * Alone it covers only the tool points, so it needs `interceptionPoints: 'tool-seam'` (else
   * `AgentHooksInstallError`); the whole run is `createAgentHooks({ dispatcher, … })`.
   */
  emitter?: InterceptionEmitter;
  /**
   * I4: the acknowledgement that an `emitter` given here intercepts only the tool seam
   * (agent_startup, pre_tool_call, post_tool_call, agent_shutdown) — never input, pre_model_call,
   * post_model_call or output, which only the run adapter emits.
   */
  interceptionPoints?: 'tool-seam';
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
   * F1 (queue mode): what `dispatch` does with deliveries the producer could not accept (Postgres
   * away and no spool, a hook it refuses): `report` (default) returns them in the dispatch
   * report's `notAccepted` and goes on (D5: ordinary errors never stop a dispatch); `throw` throws
   * an EventNotAcceptedError naming them once the tier ran.
   */
  onNotAccepted?: 'report' | 'throw';
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
  /**
   * I4: pass the call through the AGENT-HOOKS-0.1 seam (default true). A deferred result judged
   * in several rounds passes it in the first round only: one result, one post_tool_call.
   */
  interception?: boolean;
  /**
   * N1: the operation's tenant, for a process where it is not registered (a cold worker
   * evaluating restored hooks); default: the tenant it was registered under, else 'default'.
   * Naming another tenant than the registration's throws TenantMismatchError.
   */
  tenant?: string;
};

/** N1: what `register` takes besides the hooks. */
export type RegisterOptions = {
  /** The tenant the operation belongs to (default 'default'; 1–128 characters of `[A-Za-z0-9._:-]`); never read from hook config or events. */
  tenant?: string;
};

/** A tool context whose `operationId` may be left out: the methods take it from their first argument. */
export type ToolCallContextInput = z.input<typeof ToolCallContextInputSchema>;
const ToolCallContextInputSchema = ToolCallHookContextSchema.partial({ operationId: true });

const NO_HOOKS: RunnableHook[] = [];

/** F1 `onNotAccepted: 'throw'`: one error for the dispatch, its reason the producer's when it gave one. */
function notAcceptedError(notAccepted: readonly NotAcceptedDelivery[]): EventNotAcceptedError {
  const first = notAccepted[0]!.error;
  const reason = first instanceof EventNotAcceptedError ? first.reason : 'refused';
  return new EventNotAcceptedError({ reason, hookIds: notAccepted.map((n) => n.hookId), cause: first });
}

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
  readonly #onNotAccepted: 'report' | 'throw';
  #seam: ToolSeam | undefined;

  constructor(options: HookDispatcherOptions = {}, defaults: DispatcherDefaults = {}) {
    this.mode = options.mode ?? 'local';
    if (options.onNotAccepted !== undefined && options.onNotAccepted !== 'report' && options.onNotAccepted !== 'throw')
      throw new TypeError("onNotAccepted must be 'report' or 'throw'");
    this.#onNotAccepted = options.onNotAccepted ?? 'report';
    // Resolved once, through the settings schema (a bad value is a SettingsError naming it).
    const config = resolveConfig(['APP_URL', 'HOOKRELAY_ALLOWED_CIDRS', 'LOG_LEVEL'], { env: options.env, templateEnv: options.templateEnv });
    const env = config.env as Record<string, string | undefined>;
    this.#env = env;
    // W2: an invalid pattern fails construction (TemplateEnvPatternError names the variable).
    const templateEnv = config.templateEnv;
    if (this.mode === 'queue' && !options.producer && !defaults.createProducer) {
      throw new TypeError(
        "queue mode needs a producer: pass `producer: createHookProducer()` (from 'hookrelay/queue'), or construct the dispatcher from the 'hookrelay' entry",
      );
    }
    const settings = config.settings;
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
      // Queue mode without a producer gets one configured from the same environment,
      // owned (and closed) by this dispatcher; it connects on its first enqueue.
      const owned: OwnedProducer | undefined = options.producer
        ? undefined
        : defaults.createProducer!({ env, ...withDefined({ templateEnv: options.templateEnv, logger: options.logger }) });
      this.#delivery = createQueueDelivery(options.producer ?? owned!, this.#logger, owned);
    } else {
      this.#delivery = createLocalDelivery(this.#send, payloads);
    }
    this.#runControl = createControlRunner(this.#send, payloads, options.endpointGuard);
    if (options.interceptionPoints !== undefined && options.interceptionPoints !== 'tool-seam') {
      throw new TypeError("interceptionPoints must be 'tool-seam' (the only boundary a dispatcher emitter can enforce)");
    }
    if (options.emitter !== undefined && options.interceptionPoints !== 'tool-seam') {
      // I4: an incomplete enforcement boundary cannot be configured by mistake.
      throw new AgentHooksInstallError(
        "a dispatcher `emitter` without the run adapter intercepts only the tool seam: input, pre_model_call, post_model_call and output would never be emitted. Install the whole bundle with createAgentHooks({ dispatcher, interceptors }) and wrap each run in startRun({ operationId }), or pass interceptionPoints: 'tool-seam' to accept a tool-seam-only boundary",
        { missing: ['input', 'pre_model_call', 'post_model_call', 'output'] },
      );
    }
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

  /**
   * I4: the id of the operation's open AGENT-HOOKS-0.1 session in this dispatcher (a dispatcher-owned
   * one is `<operationId>/<uuid>`, minted per run), or `undefined` when none is open.
   */
  interceptionSessionId(operationId: string): string | undefined {
    return this.#seam?.sessionId(operationId);
  }

  /** I4: true when an AGENT-HOOKS-0.1 emitter reviews this dispatcher's tool calls (post_tool_call too). */
  get intercepts(): boolean {
    return this.#seam !== undefined;
  }

  /** D4a/D9: validate the whole batch first; append; duplicate ids rejected; snapshots stored. */
  register(operationId: string, hooks: AgentHook[] | SerializedHook[], options: RegisterOptions = {}): void {
    if (typeof operationId !== 'string' || operationId === '') throw new TypeError('operationId must be a non-empty string');
    assertPrintableId(operationId, 'register', 'operationId');
    const tenant = parseTenant(options?.tenant, 'register: options.tenant');
    this.#registry.add(operationId, hooks, tenant, (isNew) => {
      loadEnvHooks(this.#env); // E2: an invalid environment configuration fails registration, naming the variables
      // The session opens first: an invalid interceptionSession throws before anything is registered.
      if (isNew) this.#seam?.onStartup(operationId);
    });
  }

  /** N1: the operation's tenant: its registration's; one named by the caller must agree with it. */
  #tenantOf(operationId: string, named: string | undefined): string {
    const registered = this.#registry.tenantOf(operationId);
    if (named === undefined) return registered ?? DEFAULT_TENANT;
    const tenant = parseTenant(named, 'options.tenant');
    if (registered !== undefined && registered !== tenant) throw new TenantMismatchError(operationId, registered, tenant);
    return tenant;
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

  /**
   * Whether the operation has at least one hook registered in this dispatcher (LobeHub's
   * `hasHooks`). In-memory registrations only: restored hooks and environment hooks are not
   * counted, and an empty batch registers nothing (D9).
   */
  hasHooks(operationId: string): boolean {
    return this.#registry.has(operationId);
  }

  /** D9a: `undefined` for an unknown operation, `[]` when it has no webhook hooks. Templates unresolved. */
  getSerializedHooks(operationId: string): SerializedHook[] | undefined {
    return this.#registry.serialized(operationId);
  }

  /** E4/L1: the hooks of the current environment (throws naming the variables when invalid). */
  environmentHooks(): ParsedSerializedHook[] {
    return loadEnvHooks(this.#env);
  }

  /**
   * D9/D9a: the caller webhook hooks (serialized shape, templates unresolved) that `dispatch` or
   * `evaluate*` given these `serializedHooks` runs — `undefined` means none were stored, so the
   * in-memory registration is used in either mode. The operation store counts controls from this
   * set and passes the same set on, so a counted control is always asked (never fails open).
   */
  resolveCallerHooks(operationId: string, serializedHooks?: readonly unknown[]): ParsedSerializedHook[] {
    return this.#callerHooks(operationId, serializedHooks).flatMap((h) => serializeHook(h as ParsedAgentHook) ?? []);
  }

  #callerHooks(operationId: string, serializedHooks: readonly unknown[] | undefined): RunnableHook[] {
    return this.#registry.callerHooks(this.mode, operationId, serializedHooks);
  }

  /**
   * Dispatch one event to the matching hooks of `type`, in order (D1). The event is typed by its
   * hook type (`HookEventOf<T>`) and validated loosely at run time (D10). Ordinary errors are logged
   * and dispatch continues (D5); `fallback: 'none'` failures are thrown together after the tier
   * (caller hooks, then environment hooks) has run (D6). Resolves to what it could not hand on
   * (F1, queue mode: `notAccepted`; see the `onNotAccepted` option).
   */
  async dispatch<T extends HookType>(operationId: string, type: T, event: HookEventOf<T>, serializedHooks?: readonly unknown[]): Promise<DispatchReport> {
    if (activeTracer() === undefined) return this.#dispatch(operationId, type, event, serializedHooks);
    // `hookrelay.dispatch`: the enqueue (queue mode) or the inline send (local mode) are its children.
    return inSpan(
      'hookrelay.dispatch',
      { attributes: { 'hookrelay.operation_id': operationId, 'hookrelay.hook_type': String(type), 'hookrelay.mode': this.mode } },
      () => this.#dispatch(operationId, type, event, serializedHooks),
    );
  }

  async #dispatch<T extends HookType>(
    operationId: string,
    type: T,
    event: HookEventOf<T>,
    serializedHooks: readonly unknown[] | undefined,
  ): Promise<DispatchReport> {
    if (!isHookType(type)) throw new TypeError(`unknown hook type "${String(type)}"`);
    // onError: a readable errorMessage from whatever error shape the runtime had (errorMessage.ts).
    if (type === 'onError' && isObject(event)) {
      event = withReadableError(event as Record<string, unknown>) as HookEventOf<T>;
    }
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
    const { critical, notAccepted } = await this.#delivery.deliver(operationId, type, event, hooks, this.#registry.tenantOf(operationId));
    if (critical.length > 0) {
      // D6: critical stays critical — an invalid environment configuration travels with it, never instead of it.
      const error = new CriticalHookDeliveryError(critical, envError === undefined ? [] : [envError]);
      this.#logger.error({ operationId, hookType: type, hookIds: critical.map((f) => f.hookId) }, error.message);
      throw error;
    }
    if (envError !== undefined) throw envError;
    if (notAccepted.length > 0 && this.#onNotAccepted === 'throw') throw notAcceptedError(notAccepted);
    return { notAccepted };
  }

  /**
   * M1–M3: local `beforeToolCall` handlers get `event.mock(result)`; the first mock wins and the
   * remaining handlers are skipped. Delivers no webhooks. Queue mode has no mocks (D8). An event
   * without `operationId` takes `operationId` (a different one is an `OperationIdMismatchError`).
   */
  async dispatchBeforeToolCall(
    operationId: string,
    toolEvent: Record<string, unknown>,
    serializedHooks?: readonly unknown[],
  ): Promise<{ isMocked: true; result: ToolCallResult } | null> {
    const event = withOperationId(operationId, toolEvent);
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

  /**
   * R1–R7: run the beforeToolCall controls; the first deny blocks; an allow does not end the check.
   * A context without `operationId` takes `operationId` (a different one is an `OperationIdMismatchError`).
   */
  async evaluateToolCall(operationId: string, context: ToolCallContextInput, opts: EvaluateOptions = {}): Promise<ToolCallControlOutcome> {
    refuseEmptyToolCallIds(context);
    return this.#evaluate(operationId, 'beforeToolCall', withOperationId(operationId, context) as ToolCallHookContext, undefined, opts);
  }

  /**
   * R3: the afterToolCall controls review the full result before it is archived or shown. A
   * context without `operationId` takes `operationId`; one naming another operation is allowed
   * here (P4/L3: a deferred result's rounds run the intervention operation's hooks over it).
   */
  async evaluateAfterToolCall(
    operationId: string,
    context: ToolCallContextInput,
    result: ToolCallResult,
    opts: EvaluateOptions = {},
  ): Promise<ToolCallControlOutcome> {
    refuseEmptyToolCallIds(context);
    return this.#evaluate(operationId, 'afterToolCall', withOperationId(operationId, context, { allowOther: true }) as ToolCallHookContext, result, opts);
  }

  async #evaluate(
    operationId: string,
    type: 'beforeToolCall' | 'afterToolCall',
    context: ToolCallHookContext,
    result: ToolCallResult | undefined,
    opts: EvaluateOptions,
  ): Promise<ToolCallControlOutcome> {
    if (opts.signal?.aborted) return { status: 'cancelled' };
    const seam = opts.interception === false ? undefined : this.#seam;
    const seamed = seam ? await seam.before(type, operationId, context, result, opts.signal) : undefined;
    if (seamed?.outcome) return seamed.outcome;
    const effectiveContext = seamed?.context ?? context;
    const effectiveResult = seamed?.result ?? result;
    const tenant = this.#tenantOf(operationId, opts.tenant);
    const outcome = await evaluateControls({
      type,
      context: effectiveContext,
      result: effectiveResult,
      callerHooks: this.#callerHooks(operationId, opts.serializedHooks),
      envHooks: opts.environmentHooks === false ? NO_HOOKS : this.#envHooks,
      // N2: the decision guard keys its breaker by the operation's tenant.
      run: tenant === DEFAULT_TENANT ? this.#runControl : (hook, event, signal) => this.#runControl(hook, event, signal, tenant),
      logger: this.#logger,
      signal: opts.signal,
    });
    if (outcome.status !== 'allow') {
      // The seam allowed pre_tool_call, the controls did not: its post_tool_call says the call never ran.
      if (seam && type === 'beforeToolCall') await seam.closeToolCall(operationId, effectiveContext, outcome);
      return outcome;
    }
    if (seamed?.context && type === 'beforeToolCall') return { status: 'allow', args: effectiveContext.args };
    if (seamed?.result && type === 'afterToolCall') return { status: 'allow', result: effectiveResult };
    return outcome;
  }

  /**
   * Closes the AGENT-HOOKS-0.1 sessions this dispatcher still has open (agent_shutdown
   * `cancelled`: the process stops before those operations ended; a later run of one opens its
   * own session), waits for pending agent_startup / agent_shutdown records, then releases
   * connection pools and timers.
   */
  async close(): Promise<void> {
    this.#seam?.closeAll('cancelled');
    await this.#seam?.drain();
    await this.#send.close();
    await this.#delivery.close();
  }
}
