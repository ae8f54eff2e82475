import { randomUUID } from 'node:crypto';
import type { JsonValue } from '../../contract/agentHooks.ts';
import { activeRun, AgentRun, type AdmittedInput, type Persistence, type PersistEntry, type Streaming, type ToolSeamHostError } from './agentRun.ts';
import { AgentContextBuilder } from '../builder.ts';
import { InterceptionEmitter, type InterceptionEmitterOptions } from '../emitter.ts';
import { AgentHooksInstallError, AgentRunStateError } from '../../contract/errors.ts';
import type { Interceptor } from '../interceptor.ts';

/**
 * What a dispatcher offers an AGENT-HOOKS-0.1 bundle (`HookDispatcher` implements it): the bundle
 * becomes the dispatcher's tool-seam emitter, and the tool calls of an operation with an active
 * run (`startRun({ operationId })`) join that run's session. One installation per dispatcher.
 */
export type AgentHooksHost = {
  attachAgentHooks(binding: AgentHooksBinding): AgentHooksAttachment | void;
};

/** What an installation hands back: `release` at a linked run's end, so the operation's next run gets its own session. */
export type AgentHooksAttachment = { release(operationId: string): void };

export type AgentHooksBinding = {
  emitter: InterceptionEmitter;
  /** The session of an operation's active run, or `undefined` (the dispatcher's own per-operation session). */
  session: (operationId: string) => AgentContextBuilder | undefined;
  posture: ToolSeamHostError;
};

export type AgentHooksOptions = Omit<InterceptionEmitterOptions, 'interceptors'> & {
  /** Interceptors in order (at least one, or an explicit `[]`); an object names each on the records. */
  interceptors?: Interceptor[] | Record<string, Interceptor>;
  /** An emitter the application configured itself, instead of `interceptors` and the emitter options. */
  emitter?: InterceptionEmitter;
  /**
   * An application-owned long session (`createAgentHooks({ emitter, session })`): every run joins it, emits
   * `input` … `output` only, and the application emits its `agent_startup` / `agent_shutdown`.
   */
  session?: AgentContextBuilder;
  /** AgentContext `agent.id` of sessions the bundle owns; default `agent`. */
  agentId?: string;
  /** AgentContext `agent.framework`, `^[a-z0-9_-]+$`; default `hookrelay`. */
  framework?: string;
  /** `agent_startup`'s `tools_registered`; default `[]`. */
  tools?: string[];
  /** `model.id` of model calls that do not name one; default `model`. */
  modelId?: string;
  /** `buffered` (default): nothing reaches the caller before `output` permits it. `incremental`: the opt-in exception, segments released under covering verdicts. */
  streaming?: Streaming;
  /** When `persist` runs: `after_output` (default) or `per_model_call` (each exchange after its post_model_call). */
  persistence?: Persistence;
  /** The application's durable write (history, session store); runs only after the verdict that covers it. */
  persist?: (entry: PersistEntry) => void | Promise<void>;
  /** What a `host_error:*` deny at a tool point does: `terminate` the run (default) or `continue` with a blocked tool result. */
  toolSeamHostError?: ToolSeamHostError;
  /** Install on a dispatcher: its tool calls for a run's `operationId` join the run's session. */
  dispatcher?: AgentHooksHost;
};

export type StartRunOptions = {
  /** The request entering the agent: a string is `{ content, role: 'user' }`. */
  input: string | { content: unknown; role?: AdmittedInput['role'] };
  /**
   * Session id of a session this run owns; default a random UUID, or `<operationId>/<random UUID>`
   * for a run linked to an operation — minted per run, so running an operation twice never
   * reuses a session (no second agent_startup under one id, no sequence clash in a record store).
   * One run = one session unless the bundle has a `session`.
   */
  sessionId?: string;
  /** The dispatcher operation this run drives (needs `dispatcher`): its evaluated tool calls join the run's session. */
  operationId?: string;
  /** Overrides the bundle's `tools` for this run's `agent_startup`. */
  tools?: string[];
  /** The caller-bound egress: receives each released text chunk, only after the verdict that covers it. */
  onRelease?: (text: string) => void | Promise<void>;
  /** Cancels pending emissions (each records its cancellation) and is passed to model and tool callbacks. */
  signal?: AbortSignal;
};

const FRAMEWORK = /^[a-z0-9_-]+$/;
const STREAMING: readonly Streaming[] = ['buffered', 'incremental'];
const PERSISTENCE: readonly Persistence[] = ['after_output', 'per_model_call'];
const POSTURES: readonly ToolSeamHostError[] = ['terminate', 'continue'];
const ROLES = ['user', 'system', 'external'] as const;

/** Bundles by what they are installed on: a second installation there is refused, so no two bundles judge one boundary (I1). */
const installedOnHost = new WeakMap<object, AgentHooks>();
const installedOnSession = new WeakMap<AgentContextBuilder, AgentHooks>();

function oneOf<T extends string>(field: string, value: unknown, allowed: readonly T[], fallback: T): T {
  if (value === undefined) return fallback;
  if (!allowed.includes(value as T)) throw new TypeError(`${field} must be one of ${allowed.map((a) => `'${a}'`).join(', ')}`);
  return value as T;
}

/**
 * One AGENT-HOOKS-0.1 bundle for one agent: the emitter (its interceptors, mode, composition,
 * identity provider, record sink) plus how runs stream and persist. `startRun` wraps one run of
 * the agent's loop. Install one bundle per agent; a nested agent gets its own.
 */
export class AgentHooks {
  readonly emitter: InterceptionEmitter;
  readonly #options: AgentHooksOptions;
  readonly #streaming: Streaming;
  readonly #persistence: Persistence;
  readonly #posture: ToolSeamHostError;
  readonly #runsByOperation = new Map<string, AgentRun>();
  #attachment: AgentHooksAttachment | undefined;
  readonly #activeSessions = new Set<string>();

  constructor(options: AgentHooksOptions) {
    if (options === null || typeof options !== 'object') throw new TypeError('createAgentHooks(options): options must be an object');
    const { emitter, interceptors, session, dispatcher } = options;
    if (emitter !== undefined && !(emitter instanceof InterceptionEmitter)) throw new TypeError('emitter must be an InterceptionEmitter');
    if (emitter !== undefined && interceptors !== undefined)
      throw new TypeError('pass either `emitter` or `interceptors`, not both: the emitter already has its interceptors');
    if (emitter === undefined && interceptors === undefined) {
      throw new TypeError(
        'createAgentHooks needs `interceptors` (at least one; `[]` only on purpose: every point is then denied host_error:no_interceptor in enforce mode) or an `emitter`',
      );
    }
    if (session !== undefined && !(session instanceof AgentContextBuilder)) throw new TypeError('session must be an AgentContextBuilder');
    const framework = options.framework ?? 'hookrelay';
    if (typeof framework !== 'string' || !FRAMEWORK.test(framework)) throw new TypeError('framework must match ^[a-z0-9_-]+$ (agent.framework)');
    if (options.agentId !== undefined && (typeof options.agentId !== 'string' || options.agentId === ''))
      throw new TypeError('agentId must be a non-empty string');
    if (options.tools !== undefined && (!Array.isArray(options.tools) || !options.tools.every((t) => typeof t === 'string')))
      throw new TypeError('tools must be an array of tool names');
    if (options.persist !== undefined && typeof options.persist !== 'function') throw new TypeError('persist must be a function');
    this.#streaming = oneOf('streaming', options.streaming, STREAMING, 'buffered');
    this.#persistence = oneOf('persistence', options.persistence, PERSISTENCE, 'after_output');
    this.#posture = oneOf('toolSeamHostError', options.toolSeamHostError, POSTURES, 'terminate');

    if (session !== undefined && installedOnSession.has(session)) {
      throw new AgentHooksInstallError(
        `session ${session.sessionId} already has an AGENT-HOOKS-0.1 bundle: install one bundle per agent (stacked bundles are refused)`,
      );
    }
    if (dispatcher !== undefined) {
      if (typeof dispatcher?.attachAgentHooks !== 'function') throw new TypeError('dispatcher must be a HookDispatcher');
      if (installedOnHost.has(dispatcher))
        throw new AgentHooksInstallError('this dispatcher already has an AGENT-HOOKS-0.1 bundle: install one bundle per agent (stacked bundles are refused)');
    }

    this.#options = options;
    this.emitter = emitter ?? new InterceptionEmitter({ ...options, interceptors: interceptors ?? [] });
    // The dispatcher refuses too when it was built with its own `emitter` (one seam per dispatcher).
    this.#attachment =
      dispatcher?.attachAgentHooks({
        emitter: this.emitter,
        session: (operationId) => this.#runsByOperation.get(operationId)?.builder,
        posture: this.#posture,
      }) ?? undefined;
    if (dispatcher !== undefined) installedOnHost.set(dispatcher, this);
    if (session !== undefined) installedOnSession.set(session, this);
  }

  get streaming(): Streaming {
    return this.#streaming;
  }

  get persistence(): Persistence {
    return this.#persistence;
  }

  /**
   * Start one run: `agent_startup` (when the run owns its session) and `input` are emitted at
   * once; `run.ready` settles with the admitted input. Wrap the loop's model and tool calls in
   * `run.modelCall` / `run.toolCall`, hand the final answer to `run.output`, then `run.end()`.
   */
  startRun(options: StartRunOptions): AgentRun {
    if (options === null || typeof options !== 'object') throw new TypeError('startRun(options): options must be an object with `input`');
    for (let r = activeRun.getStore(); r !== undefined; r = r.parent) {
      if (r.bundle === this) {
        throw new AgentHooksInstallError(
          'startRun() inside a run of the same bundle: a nested agent needs its own createAgentHooks() bundle, so its model and tool activity is intercepted as its own',
        );
      }
    }
    const input = normalizeInput(options.input);
    const app = this.#options.session;
    const operationId = options.operationId;
    if (operationId !== undefined) {
      if (this.#options.dispatcher === undefined)
        throw new TypeError('startRun({ operationId }) needs a bundle installed on a dispatcher (createAgentHooks({ dispatcher }))');
      if (this.#runsByOperation.has(operationId)) throw new AgentRunStateError(`operation ${operationId} already has an active run`);
    }
    const builder =
      app ??
      new AgentContextBuilder({
        agentId: this.#options.agentId ?? 'agent',
        framework: this.#options.framework ?? 'hookrelay',
        sessionId: options.sessionId ?? (operationId === undefined ? randomUUID() : `${operationId}/${randomUUID()}`),
      });
    if (this.#activeSessions.has(builder.sessionId)) {
      throw new AgentRunStateError(`session ${builder.sessionId} already has an active run: end() it first (the runs of one session are sequential)`);
    }
    this.#activeSessions.add(builder.sessionId);
    const run = new AgentRun({
      emitter: this.emitter,
      builder,
      ownsSession: app === undefined,
      tools: [...(options.tools ?? this.#options.tools ?? [])],
      modelId: this.#options.modelId ?? 'model',
      streaming: this.#streaming,
      persistence: this.#persistence,
      persist: this.#options.persist,
      toolSeamHostError: this.#posture,
      input,
      onRelease: options.onRelease,
      signal: options.signal,
      owner: this,
      onEnd: () => {
        this.#activeSessions.delete(builder.sessionId);
        if (operationId !== undefined) {
          this.#runsByOperation.delete(operationId);
          this.#attachment?.release(operationId);
        }
      },
    });
    if (operationId !== undefined) this.#runsByOperation.set(operationId, run);
    return run;
  }
}

function normalizeInput(raw: StartRunOptions['input']): AdmittedInput {
  if (typeof raw === 'string') return { content: raw, role: 'user' };
  if (raw === null || typeof raw !== 'object' || !('content' in raw)) throw new TypeError('startRun({ input }): input must be a string or { content, role? }');
  const role = raw.role ?? 'user';
  if (!ROLES.includes(role)) throw new TypeError("input.role must be one of 'user', 'system', 'external'");
  return { content: raw.content as JsonValue, role }; // projected to JSON by the run, like every native value
}

/** One AGENT-HOOKS-0.1 bundle for one agent (see `AgentHooks`). */
export function createAgentHooks(options: AgentHooksOptions): AgentHooks {
  return new AgentHooks(options);
}
