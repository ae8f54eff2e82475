import {
  EnforcementModeSchema,
  type AgentContext,
  type CompositionConfig,
  type EnforcementMode,
  type HostErrorReason,
  type InterceptionPoint,
  type InterceptionRecord,
  type JsonValue,
  type Verdict,
} from '../contract/agentHooks.ts';
import type { PendingApproval } from '../contract/approval.ts';
import { toResolverFunction, type ApprovalRedactor, type ApprovalResolver, type SeamConfig } from './approval.ts';
import { resolveComposition, summarize } from './composition.ts';
import { DEFAULT_MAX_DEPTH, findDomainViolation } from './json/canonicalJson.ts';
import { validateEnvelope, type EnvelopeLimits } from './envelope.ts';
import { ApprovalPendingError, InterceptionBlockedError, HostFailureError, EmissionCancelledError } from '../contract/errors.ts';
import type { DispatchEnv, DispatchOutcome } from './fold.ts';
import { resolveIdentityProvider, type IdentityProviderOption, type ResolvedIdentityProvider } from './identity.ts';
import { toRegistered, type Interceptor, type RegisteredInterceptor } from './interceptor.ts';
import { genAiTracingOn, recordGuardrailSpan } from './genAiSpans.ts';
import { jsonEqual } from './json/jsonEqual.ts';
import { dispatchParallel } from './parallel.ts';
import { isInterceptionPoint, writeTarget } from './points.ts';
import { HostError } from './reasons.ts';
import { buildRecord, proceeds } from './record.ts';
import { dispatchFirstDeny, dispatchRunAll } from './sequential.ts';
import { SessionSequencer, type SequenceProvider } from './sequence.ts';
import { assertTimeout, DEFAULT_TIMEOUT_MS } from './timeouts.ts';
import { hostErrorVerdict, isPermit } from './verdict.ts';
import { isObject } from '../util/isObject.ts';

/** Receives exactly one record per emission. Its failures are counted, never propagated. */
export type RecordSink = (record: InterceptionRecord) => void | Promise<void>;

export type InterceptionEmitterOptions = EnvelopeLimits & {
  /** `enforce` or `evaluate_only`; default `enforce`. */
  mode?: EnforcementMode;
  /** Composition profile; default `sequential/first_deny` with `on_approval: "stop"`. */
  composition?: CompositionConfig;
  /** Identity provider; default `jcs-sha256`. */
  identityProvider?: IdentityProviderOption;
  /** Interceptors in registration order; an object registers each under its key as the record name. */
  interceptors?: Interceptor[] | Record<string, Interceptor>;
  /** Approval resolver; none means a liftable deny stands as a deny. */
  resolver?: ApprovalResolver | null;
  /** Redaction seam for the approval request. */
  approvalRedactor?: ApprovalRedactor;
  /** Per-interceptor bound; default 5000 ms, `null` disables. */
  timeoutMs?: number | null;
  /** Per-resolver-call bound; default 5000 ms, `null` disables. */
  resolverTimeoutMs?: number | null;
  recordSink?: RecordSink;
  /** When set, the emitter assigns each context's `sequence` from it (e.g. a store resuming after a restart). */
  sequenceProvider?: SequenceProvider;
  /** In-memory record buffer size (drop-oldest, counted in `recordsDropped`); default 1024. */
  recordBufferSize?: number;
};

export type EmitOptions = {
  signal?: AbortSignal;
  /**
   * The host's own limit on what a transform may leave as `target` (e.g. tool arguments must stay
   * an object). Called only for a permitted, changed target in `enforce` mode; a returned string
   * (payload-free: a constraint, never a value) turns the emission into
   * `host_error:transform_invalid` — the value could not be set — so the record says
   * what happened and the action fails closed instead of going on with the original.
   */
  acceptTarget?: (target: JsonValue) => string | undefined;
};

/** A host projection failure: the host could not construct a context at all. */
export type HostFailure = {
  interceptionPoint: InterceptionPoint;
  sessionId?: string;
  sequence?: number;
  timestamp?: string;
  /** Failure type or path only — never the content that failed to project. */
  message?: string;
};

type Emission = { record: InterceptionRecord; combined: Verdict; context: AgentContext | undefined; pending?: PendingApproval | undefined };

/**
 * The AGENT-HOOKS-0.1 emitter: validates the envelope, computes identities,
 * dispatches interceptors per the declared composition profile, consults the
 * approval seam, applies the combined verdict to the context (target write-back)
 * and produces exactly one payload-free record per emission, failures and
 * cancellations included.
 */
export class InterceptionEmitter {
  readonly mode: EnforcementMode;
  readonly composition: CompositionConfig;
  readonly #identity: ResolvedIdentityProvider;
  readonly #interceptors: RegisteredInterceptor[] = [];
  readonly #resolver: SeamConfig['resolver'];
  readonly #redactor: ApprovalRedactor | undefined;
  readonly #timeoutMs: number | null;
  readonly #resolverTimeoutMs: number | null;
  readonly #sink: RecordSink | undefined;
  readonly #sequencer: SessionSequencer | undefined;
  readonly #limits: EnvelopeLimits;
  readonly #bufferSize: number;
  readonly #records: InterceptionRecord[] = [];
  #recordsDropped = 0;
  #sinkFailures = 0;

  constructor(options: InterceptionEmitterOptions = {}) {
    this.mode = EnforcementModeSchema.parse(options.mode ?? 'enforce');
    this.composition = resolveComposition(options.composition);
    this.#identity = resolveIdentityProvider(options.identityProvider);
    this.#resolver = options.resolver == null ? undefined : toResolverFunction(options.resolver);
    this.#redactor = options.approvalRedactor;
    this.#timeoutMs = options.timeoutMs === undefined ? DEFAULT_TIMEOUT_MS : options.timeoutMs;
    this.#resolverTimeoutMs = options.resolverTimeoutMs === undefined ? DEFAULT_TIMEOUT_MS : options.resolverTimeoutMs;
    assertTimeout('timeoutMs', this.#timeoutMs);
    assertTimeout('resolverTimeoutMs', this.#resolverTimeoutMs);
    this.#sink = options.recordSink;
    this.#sequencer = options.sequenceProvider === undefined ? undefined : new SessionSequencer(options.sequenceProvider);
    this.#limits = { maxDepth: options.maxDepth, maxContextBytes: options.maxContextBytes };
    this.#bufferSize = options.recordBufferSize ?? 1024;
    const initial = options.interceptors ?? [];
    if (Array.isArray(initial)) for (const i of initial) this.register(i);
    else for (const [name, i] of Object.entries(initial)) this.register(i, name);
  }

  /** Register an interceptor after those already registered; `name` labels it on records (payload-free). */
  register(interceptor: Interceptor, name?: string): this {
    this.#interceptors.push(toRegistered(interceptor, name));
    return this;
  }

  get interceptorsRegistered(): number {
    return this.#interceptors.length;
  }

  /** Whether a liftable deny can be lifted here: a resolver is registered and the mode is `enforce`. */
  get consultsApprovals(): boolean {
    return this.#resolver !== undefined && this.mode === 'enforce';
  }

  /** The declared provider name; null means identity-unbound. */
  get identityProvider(): string | null {
    return this.#identity.name;
  }

  /** Recent records, oldest first (bounded; see `recordsDropped`). */
  get records(): readonly InterceptionRecord[] {
    return [...this.#records];
  }

  get recordsDropped(): number {
    return this.#recordsDropped;
  }

  /** How many times the record sink threw or rejected. */
  get sinkFailures(): number {
    return this.#sinkFailures;
  }

  /**
   * Run one emission. Resolves to the effective target (post-transform, also
   * written back into `ctx`) when the action may proceed; rejects with
   * `InterceptionBlockedError` when it must not — an `ApprovalPendingError` when the resolver left
   * a durable approval request pending. A cancelled emission is recorded, then rejects with the
   * signal's reason.
   */
  async emit(ctx: AgentContext, options: EmitOptions = {}): Promise<JsonValue> {
    const e = await this.#traced(ctx, options);
    if (!proceeds(e.record)) {
      throw e.pending === undefined ? new InterceptionBlockedError(e.record, e.combined) : new ApprovalPendingError(e.record, e.combined, e.pending);
    }
    return e.context?.target ?? null;
  }

  /** Run one emission and return its record; the caller MUST honour `record.verdict` itself (prefer `emit`). */
  async emitUnchecked(ctx: AgentContext, options: EmitOptions = {}): Promise<InterceptionRecord> {
    return (await this.#traced(ctx, options)).record;
  }

  /** One emission, and its `apply_guardrail` span when an OpenTelemetry SDK is registered. */
  async #traced(ctx: AgentContext, options: EmitOptions): Promise<Emission> {
    if (!genAiTracingOn()) return this.#emit(ctx, options);
    const startedAt = Date.now();
    const e = await this.#emit(ctx, options);
    const toolCall = isObject(ctx) && isObject(ctx.tool_call) ? ctx.tool_call : undefined;
    recordGuardrailSpan(e.record, { startedAt, pending: e.pending !== undefined, ...(toolCall ? { toolCall } : {}) });
    return e;
  }

  /**
   * Host projection failure: the host could not build a context for a
   * point. Records the fail-closed deny (null identities, nobody ran) through
   * the same stream, consuming the session's next sequence when the emitter
   * assigns sequences.
   */
  async recordHostFailure(failure: HostFailure): Promise<InterceptionRecord> {
    let sequence = failure.sequence ?? -1;
    if (this.#sequencer !== undefined && failure.sessionId !== undefined) {
      sequence = await this.#sequencer.assign(failure.sessionId).catch(() => -1);
    }
    const combined = hostErrorVerdict(HostError.ContextInvalid, failure.message);
    const record = this.#record(failure.interceptionPoint, combined, {
      context: failure.timestamp === undefined ? undefined : { timestamp: failure.timestamp },
      sessionId: failure.sessionId ?? '',
      sequence,
      inputIdentity: null,
      enforcedIdentity: null,
      outcome: { combined, decidedBy: null, verdicts: [] },
    });
    await this.#deliver(record);
    if (genAiTracingOn()) recordGuardrailSpan(record, { startedAt: Date.now(), pending: false });
    return record;
  }

  /**
   * A host self-verdict over a context the host did build (a stream that died before its
   * last segment was evaluated). The envelope is checked and the input identity computed as for
   * any emission, no interceptor is consulted, and the record is the `reason` deny — one record,
   * the session's next sequence, so the audit stream shows what was withheld and why.
   */
  async recordHostDeny(ctx: AgentContext, reason: HostErrorReason, message?: string): Promise<InterceptionRecord> {
    if (this.#sequencer !== undefined && isObject(ctx)) {
      try {
        ctx.sequence = await this.#sequencer.assign(sessionIdOf(ctx));
      } catch {
        return (await this.#finish(ctx, undefined, rejected('sequence provider failed'), null, null)).record;
      }
    }
    const envelope = validateEnvelope(ctx, this.#limits);
    if (!envelope.ok) return (await this.#finish(ctx, undefined, rejected(envelope.detail), null, null)).record;
    let identity: string | null;
    try {
      identity = this.#identity.compute(envelope.context);
    } catch (err) {
      const detail = err instanceof HostFailureError ? err.detail : 'identity provider failed';
      return (await this.#finish(envelope.context, undefined, rejected(detail), null, null)).record;
    }
    const combined = hostErrorVerdict(reason, message);
    const record = (await this.#finish(envelope.context, envelope.context, { combined, decidedBy: null, verdicts: [] }, identity, identity)).record;
    if (genAiTracingOn()) recordGuardrailSpan(record, { startedAt: Date.now(), pending: false });
    return record;
  }

  async #emit(ctx: AgentContext, options: EmitOptions): Promise<Emission> {
    const signal = options.signal;
    if (this.#sequencer !== undefined && isObject(ctx)) {
      const sessionId = sessionIdOf(ctx);
      try {
        ctx.sequence = await this.#sequencer.assign(sessionId);
      } catch {
        return this.#finish(ctx, undefined, rejected('sequence provider failed'), null, null);
      }
    }
    const envelope = validateEnvelope(ctx, this.#limits);
    if (!envelope.ok) return this.#finish(ctx, undefined, rejected(envelope.detail), null, null);
    const context = envelope.context;

    // Input identity binds the context before any interceptor sees it.
    let inputIdentity: string | null;
    try {
      inputIdentity = this.#identity.compute(context);
    } catch (err) {
      return this.#finish(context, undefined, rejected(err instanceof HostFailureError ? err.detail : 'identity provider failed'), null, null);
    }
    if (signal?.aborted) return this.#cancelled(context, inputIdentity, signal.reason);
    if (this.#interceptors.length === 0) {
      // No interceptor denies whatever the profile; a deliberate passthrough registers an allow-all interceptor.
      const combined = hostErrorVerdict(HostError.NoInterceptor);
      return this.#finish(context, context, { combined, decidedBy: null, verdicts: [] }, inputIdentity, inputIdentity);
    }

    const work = structuredClone(context);
    let outcome: DispatchOutcome;
    try {
      outcome = await this.#dispatch(work, signal);
    } catch (err) {
      if (err instanceof EmissionCancelledError) return this.#cancelled(context, inputIdentity, err.cause);
      throw err;
    }

    // A permitted fold the host cannot set (its own `acceptTarget` limit) is transform_invalid,
    // decided before identity so the reason names the cause whatever the identity provider.
    const changed = this.mode === 'enforce' && isPermit(outcome.combined) && !jsonEqual(work.target, context.target);
    // A fold that left I-JSON (an integer beyond 2^53 a remote verdict carried exactly, …)
    // fails closed whatever the identity provider — null included — before the host sees the value.
    const outside = changed ? findDomainViolation(work.target, this.#limits.maxDepth ?? DEFAULT_MAX_DEPTH) : null;
    if (outside !== null) {
      outcome = {
        ...outcome,
        combined: hostErrorVerdict(HostError.ContextInvalid, `post-fold context rejected: ${outside.replace(/^\$/, '$target')}`),
        decidedBy: null,
      };
    }
    const refusal = changed && outside === null ? options.acceptTarget?.(work.target) : undefined;
    if (refusal !== undefined) outcome = { ...outcome, combined: hostErrorVerdict(HostError.TransformInvalid, refusal), decidedBy: null };

    // Enforced identity over the post-composition context. A fold that
    // left the provider's domain fails closed rather than proceeding unbound.
    let enforcedIdentity = inputIdentity;
    if (this.mode === 'enforce' && this.#identity.name !== null) {
      try {
        enforcedIdentity = this.#identity.compute(work);
      } catch (err) {
        enforcedIdentity = null;
        if (isPermit(outcome.combined)) {
          const detail = err instanceof HostFailureError ? err.detail : 'identity provider failed';
          outcome = { ...outcome, combined: hostErrorVerdict(HostError.ContextInvalid, `post-fold context rejected: ${detail}`), decidedBy: null };
        }
      }
    }
    // A permitted transform is observable in the action; a blocked emission discards folds.
    if (changed && isPermit(outcome.combined)) {
      writeTarget(context, work.target);
    }
    return this.#finish(context, context, outcome, inputIdentity, enforcedIdentity);
  }

  #dispatch(work: AgentContext, signal: AbortSignal | undefined): Promise<DispatchOutcome> {
    const env: DispatchEnv = {
      interceptors: this.#interceptors,
      mode: this.mode,
      composition: this.composition,
      timeoutMs: this.#timeoutMs,
      signal,
      seam: {
        mode: this.mode,
        resolver: this.#resolver,
        redactor: this.#redactor,
        identity: this.#identity,
        timeoutMs: this.#resolverTimeoutMs,
        signal,
      },
    };
    switch (this.composition.profile) {
      case 'sequential/first_deny':
        return dispatchFirstDeny(work, env);
      case 'sequential/run_all':
        return dispatchRunAll(work, env);
      default:
        return dispatchParallel(work, env);
    }
  }

  /** Cancellation still leaves its fail-closed record, then surfaces to the caller. */
  async #cancelled(context: AgentContext, inputIdentity: string | null, reason: unknown): Promise<never> {
    const combined = hostErrorVerdict(HostError.InterceptorFailed, 'emission cancelled (AbortError)');
    await this.#finish(context, context, { combined, decidedBy: null, verdicts: [] }, inputIdentity, inputIdentity);
    throw reason;
  }

  async #finish(
    raw: unknown,
    context: AgentContext | undefined,
    outcome: DispatchOutcome,
    inputIdentity: string | null,
    enforcedIdentity: string | null,
  ): Promise<Emission> {
    const source = isObject(raw) ? (raw as Partial<AgentContext>) : undefined;
    const point = isInterceptionPoint(source?.interception_point) ? source.interception_point : 'agent_startup';
    const sequence = typeof source?.sequence === 'number' && Number.isInteger(source.sequence) ? source.sequence : -1;
    const record = this.#record(point, outcome.combined, {
      context: source,
      sessionId: isObject(raw) ? sessionIdOf(raw) : '',
      sequence,
      inputIdentity,
      enforcedIdentity,
      outcome,
    });
    await this.#deliver(record);
    return { record, combined: outcome.combined, context, pending: outcome.pending };
  }

  #record(
    point: InterceptionPoint,
    combined: Verdict,
    p: {
      context: Partial<AgentContext> | undefined;
      sessionId: string;
      sequence: number;
      inputIdentity: string | null;
      enforcedIdentity: string | null;
      outcome: DispatchOutcome;
    },
  ): InterceptionRecord {
    return buildRecord({
      point,
      mode: this.mode,
      combined,
      inputIdentity: p.inputIdentity,
      enforcedIdentity: p.enforcedIdentity,
      identityProvider: this.#identity.name,
      sessionId: p.sessionId,
      sequence: p.sequence,
      context: p.context,
      decidedBy: p.outcome.decidedBy,
      composition: this.composition,
      verdicts: summarize(
        p.outcome.verdicts,
        this.#interceptors.map((i) => i.name),
      ),
      interceptorsRegistered: this.#interceptors.length,
      resolvedBy: p.outcome.resolvedBy,
    });
  }

  /** Buffer, then sink. Audit delivery must never alter control flow, so sink failures are only counted. */
  async #deliver(record: InterceptionRecord): Promise<void> {
    this.#records.push(record);
    if (this.#records.length > this.#bufferSize) {
      this.#records.shift();
      this.#recordsDropped++;
    }
    if (this.#sink === undefined) return;
    try {
      await this.#sink(structuredClone(record));
    } catch {
      this.#sinkFailures++;
    }
  }
}

function rejected(detail: string): DispatchOutcome {
  return { combined: hostErrorVerdict(HostError.ContextInvalid, detail), decidedBy: null, verdicts: [] };
}

function sessionIdOf(ctx: Record<string, unknown>): string {
  const s = ctx.session;
  if (isObject(s) && typeof s.id === 'string') return s.id;
  return '';
}
