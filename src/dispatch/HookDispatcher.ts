import { newDeliveryId } from '../contract/deliveryId.ts';
import { ENV_HOOK_ID_PREFIX, isHookType, type HookType } from '../contract/hookTypes.ts';
import { isControlHook, type AgentHook, type ParsedAgentHook, type ParsedSerializedHook, type SerializedHook, serializeHook } from '../contract/hook.ts';
import { EventValidationError } from '../contract/errors.ts';
import { serializeEventJson } from '../contract/events.ts';
import { assertTemplateSources, parseHookBatch, parseSerializedHooks } from '../contract/validate.ts';
import { parseTemplateEnvPattern, type TemplateEnvPattern } from '../contract/templateSources.ts';
import type { ToolCallHookContext, ToolCallResult } from '../contract/toolContext.ts';
import { ENV_HOOK_VARIABLES, loadEnvHooks } from '../config/envHooks.ts';
import { DeliveryConfigError } from '../delivery/errors.ts';
import { FetchTransport } from '../delivery/fetchTransport.ts';
import { deliverNotification } from '../delivery/deliver.ts';
import { parseSigningSecrets } from '../delivery/signing.ts';
import { createLazyQStashPublisher } from '../delivery/lazyQStashPublisher.ts';
import type { QStashPublisher } from '../delivery/types.ts';
import { createWebhookPayloadBuilder, type WebhookPayloadBuilder } from '../payload/buildPayload.ts';
import type { EmailLookup } from '../payload/emailCache.ts';
import { createLogger, type Logger } from '../observability/logger.ts';
import { evaluateControls, type ControlHook, type ToolCallControlOutcome } from '../control/evaluateControls.ts';
import { executeToolCallWebhook, type ToolCallWebhookResult } from '../control/decisionWebhook.ts';
import { CriticalHookDeliveryError, WebhookDeliveryFailure, type CriticalFailure } from './criticalError.ts';
import { matchesHook } from './matcher.ts';
import type { ToolSeam } from './toolSeam.ts';
import { createInterceptionSeam, type InterceptionPosture, type InterceptionSessionOption } from './interceptionSeam.ts';
import { shutdownReasonFor } from './shutdownReason.ts';
import type { InterceptionEmitter } from '../interception/emitter.ts';

/** What queue mode needs from a producer (`createHookProducer` provides it). */
export type DispatchProducer = {
  enqueue(input: { operationId: string; type: HookType; event: Record<string, unknown>; hooks: SerializedHook[] }): Promise<{ deliveryIds: string[]; queued: boolean }>;
};

/** A producer the dispatcher owns (and closes): the composition root supplies the factory, so dispatch never imports queue. */
export type OwnedProducer = DispatchProducer & { close(): Promise<void> };
export type OwnedProducerFactory = (options: { env: Record<string, string | undefined>; templateEnv?: string }) => OwnedProducer;
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
   * default HOOKRELAY_TEMPLATE_ENV read at construction, else `*`. hookrelay's own variables never.
   */
  templateEnv?: string;
  /** Local-mode QStash publisher; default built from QSTASH_URL / QSTASH_TOKEN at send time. */
  qstash?: QStashPublisher;
};

export type EvaluateOptions = {
  signal?: AbortSignal;
  /** Restored caller hooks, with D9 precedence (D9a). */
  serializedHooks?: readonly unknown[];
  /** Run the environment's hooks after the caller's (default true). Deferred rounds run them once, last (L3). */
  environmentHooks?: boolean;
};

type HookEvent = Record<string, unknown> & { operationId: string };
const NO_HOOKS: RunnableHook[] = [];
const NO_SECRETS: readonly string[] = [];
/** A hook ready to run: parsed, with `env` marking an operator-trusted environment hook. */
type RunnableHook = (ParsedAgentHook | ParsedSerializedHook) & { env?: boolean };

function assertEvent(event: unknown): asserts event is HookEvent {
  // D10: loose validation; any object with a string operationId.
  if (event === null || typeof event !== 'object' || typeof (event as { operationId?: unknown }).operationId !== 'string') {
    throw new TypeError('event must be an object with a string operationId');
  }
  for (const key of ['stepIndex', 'callIndex'] as const) {
    const v = (event as Record<string, unknown>)[key];
    if (v !== undefined && (typeof v !== 'number' || !Number.isInteger(v) || v < 0)) throw new TypeError(`event.${key} must be an integer ≥ 0`);
  }
}

/** JSON-safe copy of an event for queue mode: drops functions (`mock`) and `finalState` (B4a). */
function queueEvent(event: HookEvent): HookEvent {
  const { mock: _mock, finalState: _finalState, ...rest } = event;
  return rest as HookEvent;
}

/**
 * Registers hooks per agent operation and dispatches lifecycle events to them in registration
 * order (D1). Local mode runs handlers and delivers webhooks inline (one attempt each, D6);
 * queue mode hands webhook deliveries to a producer (D8). Knows nothing of HTTP itself.
 */
export class HookDispatcher {
  readonly mode: 'local' | 'queue';
  readonly #producer: DispatchProducer | undefined;
  readonly #ownedProducer: OwnedProducer | undefined;
  readonly #env: Record<string, string | undefined>;
  readonly #logger: Logger;
  readonly #appUrl: string | undefined;
  readonly #transport: FetchTransport;
  readonly #templateEnv: TemplateEnvPattern;
  readonly #payloads: WebhookPayloadBuilder;
  readonly #qstash: QStashPublisher | undefined;
  readonly #seam: ToolSeam | undefined;
  readonly #registry = new Map<string, ParsedAgentHook[]>();
  // Bound once: the evaluation hot path creates no closures per call.
  readonly #envHooksThunk = (): RunnableHook[] => this.#envHooks();
  readonly #runControlBound = (hook: ControlHook, event: Record<string, unknown>, signal: AbortSignal | undefined): Promise<ToolCallWebhookResult> =>
    this.#runControl(hook, event, signal);
  #qstashCache: { url: string | undefined; token: string; publisher: QStashPublisher } | undefined;
  #secretsCache: { raw: string; secrets: readonly string[] } | undefined;
  #envHooksCache: { key: string; hooks: RunnableHook[] } | undefined;

  constructor(options: HookDispatcherOptions = {}, defaults: DispatcherDefaults = {}) {
    this.mode = options.mode ?? 'local';
    this.#env = options.env ?? process.env;
    // W2: an invalid pattern fails construction (TemplateEnvPatternError names the variable).
    this.#templateEnv = parseTemplateEnvPattern(options.templateEnv ?? this.#env.HOOKRELAY_TEMPLATE_ENV);
    // Queue mode without a producer gets one configured from the same environment (SPEC §13),
    // owned (and closed) by this dispatcher; it connects on its first enqueue.
    if (this.mode === 'queue' && !options.producer && !defaults.createProducer) {
      throw new TypeError("queue mode needs a producer: pass `producer: createHookProducer()` (from 'hookrelay/queue'), or construct the dispatcher from the 'hookrelay' entry");
    }
    this.#ownedProducer =
      this.mode === 'queue' && !options.producer ? defaults.createProducer!({ env: this.#env, ...(options.templateEnv !== undefined ? { templateEnv: options.templateEnv } : {}) }) : undefined;
    this.#producer = options.producer ?? this.#ownedProducer;
    // A library logs only what needs attention (failed deliveries, D5), to stderr, unless told otherwise.
    this.#logger = options.logger ?? createLogger({ level: this.#env.LOG_LEVEL ?? 'warn', pretty: false, destination: process.stderr });
    this.#appUrl = options.appUrl ?? (this.#env.APP_URL || undefined);
    this.#transport = new FetchTransport({ allowedCidrs: options.allowedCidrs ?? this.#env.HOOKRELAY_ALLOWED_CIDRS });
    this.#payloads = createWebhookPayloadBuilder({ emailLookup: options.emailLookup, logger: this.#logger });
    this.#qstash = options.qstash;
    this.#seam = options.emitter
      ? createInterceptionSeam(options.emitter, { posture: options.interceptionPosture, session: options.interceptionSession, logger: this.#logger })
      : undefined;
  }

  /** I4: true when an AGENT-HOOKS-0.1 emitter reviews this dispatcher's tool calls (post_tool_call too). */
  get intercepts(): boolean {
    return this.#seam !== undefined;
  }

  /** D4a/D9: validate the whole batch first; append; duplicate ids rejected; snapshots stored. */
  register(operationId: string, hooks: AgentHook[] | SerializedHook[]): void {
    if (typeof operationId !== 'string' || operationId === '') throw new TypeError('operationId must be a non-empty string');
    const existing = this.#registry.get(operationId);
    const parsed = parseHookBatch(hooks, new Set((existing ?? []).map((h) => h.id)));
    assertTemplateSources(parsed, this.#templateEnv); // W2: the operator's pattern, before anything is stored
    loadEnvHooks(this.#env); // §14: an invalid environment configuration fails registration, naming the variables
    // The session opens first: an invalid interceptionSession throws before anything is registered.
    if (existing === undefined) this.#seam?.onStartup(operationId);
    this.#registry.set(operationId, [...(existing ?? []), ...parsed]);
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
    const hooks = this.#registry.get(operationId);
    if (!hooks) return undefined;
    return hooks.map(serializeHook).filter((h): h is ParsedSerializedHook => h !== undefined);
  }

  /** Caller hooks by D9 precedence, restored ones re-validated (D4b), env ids dropped from restores. */
  #callerHooks(operationId: string, serializedHooks: readonly unknown[] | undefined): RunnableHook[] {
    const restored = () =>
      parseSerializedHooks(
        // D4b: anything but an array is corrupt too (parseSerializedHooks throws HookConfigError).
        Array.isArray(serializedHooks)
          ? serializedHooks.filter((h) => !(h && typeof h === 'object' && String((h as { id?: unknown }).id).startsWith(ENV_HOOK_ID_PREFIX)))
          : (serializedHooks as unknown as unknown[]),
      );
    const memory = this.#registry.get(operationId);
    if (this.mode === 'queue') {
      if (serializedHooks != null) return restored();
      return (memory ?? []).map(serializeHook).filter((h): h is ParsedSerializedHook => h !== undefined);
    }
    if (memory) return memory;
    return serializedHooks != null ? restored() : [];
  }

  /** E4/L1: the hooks of the current environment (throws naming the variables when invalid). */
  environmentHooks(): ParsedSerializedHook[] {
    return loadEnvHooks(this.#env);
  }

  /** E4: the current environment's hooks, rebuilt at every call; trusted targets (Q5). */
  #envHooks(): RunnableHook[] {
    const env = this.#env;
    const url = env[ENV_HOOK_VARIABLES.url];
    if (url === undefined || url.trim() === '') return NO_HOOKS; // E2: unset or blank = off
    // The result depends only on these five values: rebuild when any of them changes (a rotated
    // token needs no rebuild: it stays a template, resolved at send time, W2).
    const key = JSON.stringify([
      url,
      env[ENV_HOOK_VARIABLES.token] === undefined || env[ENV_HOOK_VARIABLES.token]!.trim() === '',
      env[ENV_HOOK_VARIABLES.events],
      env[ENV_HOOK_VARIABLES.responseHandling],
      env[ENV_HOOK_VARIABLES.onError],
    ]);
    const cached = this.#envHooksCache;
    if (cached && cached.key === key) return cached.hooks;
    const hooks = loadEnvHooks(env).map((h) => ({ ...h, env: true }));
    this.#envHooksCache = { key, hooks };
    return hooks;
  }

  /**
   * Dispatch one event to the matching hooks of `type`, in order (D1). Ordinary errors are logged
   * and dispatch continues (D5); `fallback: 'none'` failures are thrown together after the tier
   * (caller hooks, then environment hooks) has run (D6).
   */
  async dispatch(operationId: string, type: HookType, event: Record<string, unknown>, serializedHooks?: readonly unknown[]): Promise<void> {
    if (!isHookType(type)) throw new TypeError(`unknown hook type "${String(type)}"`);
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
    const failures = this.mode === 'queue' ? await this.#enqueue(operationId, type, event, hooks) : await this.#runLocal(operationId, type, event, hooks);
    if (envError !== undefined) throw envError;
    if (failures.length > 0) {
      const error = new CriticalHookDeliveryError(failures);
      this.#logger.error({ operationId, hookType: type, hookIds: failures.map((f) => f.hookId) }, error.message);
      throw error;
    }
  }

  async #runLocal(operationId: string, type: HookType, event: HookEvent, hooks: RunnableHook[]): Promise<CriticalFailure[]> {
    const failures: CriticalFailure[] = [];
    for (const hook of hooks) {
      const handler = 'handler' in hook ? hook.handler : undefined;
      // D9b: beforeToolCall handlers run only in dispatchBeforeToolCall (with `mock`); a hook with
      // a handler is represented locally by that handler (D3/D8), so its webhook is not sent here.
      if (handler && type === 'beforeToolCall') continue;
      if (handler) {
        try {
          await handler(event);
        } catch (error) {
          // D5/D6: handler errors are logged, never critical.
          this.#logger.warn({ operationId, hookId: hook.id, hookType: type, err: error instanceof Error ? error.name : 'error' }, 'hook handler failed');
        }
        continue;
      }
      if (!hook.webhook) continue;
      let failure: CriticalFailure | undefined;
      try {
        failure = await this.#deliverLocal(operationId, type, event, { ...hook, webhook: hook.webhook });
      } catch (error) {
        // D5: e.g. an event that cannot be serialized, an invalid HOOKRELAY_SIGNING_SECRETS: this
        // hook failed (critical with fallback 'none', D6); its siblings still run.
        const errorClass = error instanceof DeliveryConfigError ? 'configuration' : error instanceof EventValidationError ? error.errorClass : 'internal_error';
        const fields = { operationId, hookId: hook.id, hookType: type, errorClass, err: error instanceof Error ? error.name : 'error' };
        if (hook.webhook.fallback === 'none') {
          this.#logger.error(fields, 'critical webhook delivery failed');
          failure = { hookId: hook.id, cause: new WebhookDeliveryFailure(errorClass) };
        } else {
          this.#logger.warn(fields, 'webhook delivery failed');
        }
      }
      if (failure) failures.push(failure);
    }
    return failures;
  }

  /** One attempt, no retries (D6): retries belong to the worker (Q3). */
  async #deliverLocal(
    operationId: string,
    type: HookType,
    event: HookEvent,
    hook: RunnableHook & { webhook: NonNullable<RunnableHook['webhook']> },
  ): Promise<CriticalFailure | undefined> {
    const deliveryId = newDeliveryId();
    const payload = await this.#payloads.build({ hook, event, extra: { deliveryId, occurredAt: new Date().toISOString() } });
    if (payload === undefined) return undefined;
    const result = await deliverNotification({
      webhook: hook.webhook,
      hookId: hook.id,
      payload: serializeEventJson(payload, 'webhook payload'), // D10: a typed error, never a raw RangeError
      deliveryId,
      generation: 0,
      env: this.#env,
      templateEnv: this.#templateEnv,
      environmentHook: hook.env === true,
      appUrl: this.#appUrl,
      trusted: hook.env === true,
      signingSecrets: this.#signingSecrets(),
      qstash: hook.webhook.delivery === 'qstash' ? this.#qstashPublisher() : undefined,
      fetchTransport: this.#transport,
      logger: this.#logger,
    });
    if (result.ok) return undefined;
    const cause = new WebhookDeliveryFailure(result.errorClass, result.httpStatus);
    const fields = { operationId, hookId: hook.id, hookType: type, errorClass: result.errorClass, httpStatus: result.httpStatus };
    if (result.critical) {
      this.#logger.error(fields, 'critical webhook delivery failed');
      return { hookId: hook.id, cause };
    }
    this.#logger.warn(fields, 'webhook delivery failed');
    return undefined;
  }

  #qstashPublisher(): QStashPublisher | undefined {
    if (this.#qstash) return this.#qstash;
    const token = this.#env.QSTASH_TOKEN;
    if (!token) return undefined; // D7: a missing token falls back to fetch (or is critical with 'none')
    const url = this.#env.QSTASH_URL;
    // Read at send time (a rotated token applies at once); one client per (url, token).
    const cached = this.#qstashCache;
    if (cached && cached.url === url && cached.token === token) return cached.publisher;
    const publisher = createLazyQStashPublisher({ url, token }, (message) => this.#logger.error({}, message));
    this.#qstashCache = { url, token, publisher };
    return publisher;
  }

  /** HOOKRELAY_SIGNING_SECRETS of the current environment, parsed once per distinct value. */
  #signingSecrets(): readonly string[] {
    const raw = this.#env.HOOKRELAY_SIGNING_SECRETS;
    if (raw === undefined || raw === '') return NO_SECRETS;
    const cached = this.#secretsCache;
    if (cached && cached.raw === raw) return cached.secrets;
    const secrets = parseSigningSecrets(raw); // throws DeliveryConfigError (names the entry, never a secret)
    this.#secretsCache = { raw, secrets };
    return secrets;
  }

  /** D8: queue mode records every matching delivery (ledger + job); webhooks only. */
  async #enqueue(operationId: string, type: HookType, event: HookEvent, hooks: RunnableHook[]): Promise<CriticalFailure[]> {
    const webhooks = hooks.filter((h) => h.webhook !== undefined);
    if (webhooks.length === 0 || !this.#producer) return [];
    const serialized = webhooks.map((h) => ({ id: h.id, type: h.type, ...(h.matcher !== undefined ? { matcher: h.matcher } : {}), webhook: h.webhook! }));
    try {
      await this.#producer.enqueue({ operationId, type, event: queueEvent(event), hooks: serialized });
      return [];
    } catch (error) {
      this.#logger.error({ operationId, hookType: type, err: error instanceof Error ? error.message : 'error' }, 'could not record hook deliveries');
      return webhooks.filter((h) => h.webhook?.fallback === 'none').map((h) => ({ hookId: h.id, cause: error }));
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
      envHooks: opts.environmentHooks === false ? NO_HOOKS : this.#envHooksThunk,
      run: this.#runControlBound,
      logger: this.#logger,
      signal: opts.signal,
    });
    if (outcome.status !== 'allow') return outcome;
    if (seamed?.context && type === 'beforeToolCall') return { status: 'allow', args: effectiveContext.args };
    if (seamed?.result && type === 'afterToolCall') return { status: 'allow', result: effectiveResult };
    return outcome;
  }

  async #runControl(hook: ControlHook, event: Record<string, unknown>, signal: AbortSignal | undefined): Promise<ToolCallWebhookResult> {
    let payload: string;
    let signingSecrets: readonly string[];
    try {
      const built = await this.#payloads.build({ hook: hook as ControlHook & { webhook: NonNullable<ControlHook['webhook']> }, event, control: true, signal });
      if (built === undefined || signal?.aborted) return { status: 'cancelled' as const };
      payload = JSON.stringify(built);
      signingSecrets = this.#signingSecrets();
    } catch {
      // L5/R5: a control that cannot be sent (unserializable context, invalid signing secrets)
      // is an error handled by its onError, never an allow and never a rejection of evaluate*.
      return { status: 'error', code: 'configuration' };
    }
    return await executeToolCallWebhook({
      webhook: hook.webhook!,
      payload,
      env: this.#env,
      templateEnv: this.#templateEnv,
      environmentHook: hook.env === true,
      appUrl: this.#appUrl,
      trusted: hook.env === true,
      signingSecrets,
      fetchTransport: this.#transport,
      ...(signal ? { signal } : {}),
    });
  }

  /** Waits for pending agent_startup / agent_shutdown records, then releases connection pools and timers. */
  async close(): Promise<void> {
    await this.#seam?.drain();
    await this.#transport.close();
    await this.#ownedProducer?.close();
  }
}
