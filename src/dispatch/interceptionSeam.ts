import { randomUUID } from 'node:crypto';
import type { InterceptionRecord, JsonObject, JsonValue } from '../contract/agentHooks.ts';
import type { ToolCallHookContext, ToolCallResult } from '../contract/toolContext.ts';
import type { ToolCallControlOutcome } from '../decide/evaluateControls.ts';
import { blockedOutcome } from '../decide/evaluateControls.ts';
import { AgentContextBuilder } from '../intercept/builder.ts';
import type { EmitOptions, InterceptionEmitter } from '../intercept/emitter.ts';
import { InterceptionBlockedError } from '../contract/errors.ts';
import { HostError, isReservedReason } from '../intercept/reasons.ts';
import { proceeds } from '../intercept/record.ts';
import type { Logger } from '../observability/logger.ts';
import { refuseArgs, refuseResult, resultFromTarget } from './seamTransforms.ts';
import type { ShutdownReason } from './shutdownReason.ts';
import type { ToolSeam } from './toolSeam.ts';
import { isObject } from '../util/isObject.ts';

/** I4: what an infrastructure `host_error:*` deny does to the run; policy denies always continue. */
export type InterceptionPosture = 'terminate' | 'continue';

/**
 * An application-owned AGENT-HOOKS-0.1 session: one long session across several runs.
 * A builder: every operation joins it. A function: the session of that operation, or `undefined`
 * for a dispatcher-owned per-operation session. The dispatcher emits only the tool points into an
 * application-owned session; its `agent_startup` / `agent_shutdown` belong to the application.
 */
export type InterceptionSessionOption = AgentContextBuilder | ((operationId: string) => AgentContextBuilder | undefined);

export type InterceptionSeamOptions = {
  posture?: InterceptionPosture;
  /** AgentContext `agent.id` / `agent.framework` of dispatcher-owned sessions. */
  agentId?: string;
  framework?: string;
  session?: InterceptionSessionOption;
  logger?: Pick<Logger, 'warn'>;
};

/** Reserved reasons that are policy outcomes, not infrastructure failures (I4). */
const POLICY_REASONS = new Set<string>([HostError.TransformConflict, HostError.CompositionDisagreement]);

const DEFAULT_DENY_REASON = 'Blocked by interceptor.';
/** How many ended operations a seam remembers (a long-lived server unregisters many). */
const ENDED_OPERATIONS_KEPT = 10_000;
const CANCELLED: ToolCallControlOutcome = Object.freeze({ status: 'cancelled' } as const);
const PROCEED: Promise<string | undefined> = Promise.resolve(undefined);
const PRE_OPTIONS: EmitOptions = { acceptTarget: refuseArgs };
const POST_OPTIONS: EmitOptions = { acceptTarget: refuseResult };

type Session = {
  builder: AgentContextBuilder;
  /** The dispatcher emits this session's agent_startup / agent_shutdown (false: the application does). */
  owned: boolean;
  /** Settles to `undefined` when the session may proceed, else the reason its agent_startup blocked it. */
  startup: Promise<string | undefined>;
  /** Tool emissions in flight: agent_shutdown waits for them, so it stays the session's last point. */
  inflight: Set<Promise<unknown>>;
};

/** A dispatcher-owned session's id: `<operationId>/<random UUID>`, minted when the session opens. */
function operationSessionId(operationId: string): string {
  return `${operationId}/${randomUUID()}`;
}

/** What a tool call that never ran hands post_tool_call: why it did not run, never a tool output. */
function notRun(outcome: ToolCallControlOutcome): ToolCallResult {
  if (outcome.status === 'blocked') return outcome.result;
  return { content: 'Tool call cancelled.', success: false, error: 'cancelled', state: { type: 'cancelled' } };
}

/** JSON-safe copy (drops undefined and functions) so the envelope sees plain JSON. */
function toJson<T extends JsonValue>(value: unknown): T {
  return JSON.parse(JSON.stringify(value ?? null)) as T;
}

/** I4: a startup that did not permit the session (policy deny or host error) closes it to every later point. */
function startupRefusal(record: InterceptionRecord): string | undefined {
  return proceeds(record) ? undefined : (record.verdict.reason ?? DEFAULT_DENY_REASON);
}

/** A blocked session stops the run whatever the posture: no point of it may proceed. */
function sessionBlocked(type: 'beforeToolCall' | 'afterToolCall', reason: string, result: ToolCallResult | undefined): ToolCallControlOutcome {
  const outcome = blockedOutcome(type, reason, result);
  return outcome.status === 'blocked' ? { ...outcome, terminate: true } : outcome;
}

/**
 * I4: connects an AGENT-HOOKS-0.1 emitter to the dispatcher's tool calls. `pre_tool_call` runs
 * before any decision webhook (a transform rewrites the args they see); `post_tool_call` runs
 * before the afterToolCall controls. Mapping: session.id = operationId, tool_call.id =
 * toolCallId, tool_call.name = `identifier/apiName`, tool_call.args = args.
 *
 * Sessions: a dispatcher-owned session opens with `agent_startup` at the first registration, or
 * at the first tool call of an operation this process never registered (a cold worker, a
 * restart); every tool call waits for that startup's verdict and is blocked with `terminate`
 * when it did not permit the session. `agent_shutdown` closes it at unregister, with the
 * mapped completion reason (`error` after a startup block).
 */
export function createInterceptionSeam(emitter: InterceptionEmitter, options: InterceptionSeamOptions = {}): ToolSeam {
  const posture = options.posture ?? 'terminate';
  const sessions = new Map<string, Session>();
  /**
   * Operations this dispatcher unregistered (oldest first, bounded): a late tool call for one of
   * them must not open a fresh session (a second agent_startup for an ended operation); it is
   * cancelled. A new registration of the operation clears it (a new run, a new session).
   */
  const ended = new Set<string>();
  const markEnded = (operationId: string) => {
    ended.delete(operationId);
    ended.add(operationId);
    if (ended.size > ENDED_OPERATIONS_KEPT) ended.delete(ended.values().next().value as string);
  };
  /** Lifecycle emissions not yet recorded (never rejecting): `drain` waits for them. */
  const lifecycle = new Set<Promise<void>>();

  const track = (run: Promise<unknown>, what: string, operationId: string): void => {
    const settled = run.then(
      () => undefined,
      (err: unknown) => {
        options.logger?.warn({ operationId, err: err instanceof Error ? err.name : 'error' }, `interception ${what} emission failed`);
      },
    );
    lifecycle.add(settled);
    void settled.then(() => lifecycle.delete(settled));
  };

  const applicationSession = (operationId: string): AgentContextBuilder | undefined => {
    const session = typeof options.session === 'function' ? options.session(operationId) : options.session;
    if (session !== undefined && !(session instanceof AgentContextBuilder)) {
      throw new TypeError('interceptionSession must be an AgentContextBuilder, or a function returning one (or undefined)');
    }
    return session;
  };

  const open = (operationId: string): Session => {
    const app = applicationSession(operationId);
    let session: Session;
    if (app) {
      session = { builder: app, owned: false, startup: PROCEED, inflight: new Set() };
    } else {
      // One session per run of the operation, never reused: a second run, a cold worker or a
      // restarted process opens its own (no second agent_startup under one id, no sequence
      // clash in a record store); the operation id prefix keeps them findable.
      const builder = new AgentContextBuilder({
        agentId: options.agentId ?? 'hookrelay',
        framework: options.framework ?? 'hookrelay',
        sessionId: operationSessionId(operationId),
      });
      const startup = emitter.emitUnchecked(builder.agentStartup({ toolsRegistered: [] })).then(startupRefusal, (err: unknown) => {
        // The emitter records its own failures; an emission that threw at all blocks the session.
        options.logger?.warn({ operationId, err: err instanceof Error ? err.name : 'error' }, 'interception agent_startup emission failed');
        return HostError.InterceptorFailed;
      });
      track(startup, 'agent_startup', operationId);
      session = { builder, owned: true, startup, inflight: new Set() };
    }
    sessions.set(operationId, session);
    return session;
  };

  const blocked = (type: 'beforeToolCall' | 'afterToolCall', error: InterceptionBlockedError, result: ToolCallResult | undefined): ToolCallControlOutcome => {
    const reason = error.record.verdict.reason ?? DEFAULT_DENY_REASON;
    const infrastructure = isReservedReason(reason) && !POLICY_REASONS.has(reason);
    const outcome = blockedOutcome(type, reason, result);
    return infrastructure && posture === 'terminate' && outcome.status === 'blocked' ? { ...outcome, terminate: true } : outcome;
  };

  return {
    onStartup(operationId) {
      if (!sessions.has(operationId)) open(operationId);
      ended.delete(operationId); // opened after `open` succeeded: an invalid session option changes nothing
    },

    onShutdown(operationId, reason: ShutdownReason) {
      markEnded(operationId);
      const session = sessions.get(operationId);
      if (!session) return;
      sessions.delete(operationId);
      if (!session.owned) return; // the application closes its own session
      const close = async () => {
        const refusal = await session.startup;
        await Promise.allSettled(session.inflight);
        await emitter.emitUnchecked(session.builder.agentShutdown({ reason: refusal === undefined ? reason : 'error' }));
      };
      track(close(), 'agent_shutdown', operationId);
    },

    async before(type, operationId, context, result, signal) {
      // Unregistered here: the operation ended, its session is closed; nothing reopens it.
      if (!sessions.has(operationId) && ended.has(operationId)) return { outcome: CANCELLED };
      const session = sessions.get(operationId) ?? open(operationId);
      const refusal = await session.startup;
      if (refusal !== undefined) return { outcome: sessionBlocked(type, refusal, result) };
      // Unregistered while waiting for the startup verdict: the session is closed, nothing may run in it.
      if (sessions.get(operationId) !== session || signal?.aborted) return { outcome: CANCELLED };
      const name = `${context.identifier}/${context.apiName}`;
      const args = toJson<JsonObject>(context.args);
      const original = type === 'afterToolCall' ? toJson(result) : null;
      const ctx =
        type === 'beforeToolCall'
          ? session.builder.preToolCall({ id: context.toolCallId, name, args })
          : session.builder.postToolCall({ id: context.toolCallId, name, args, value: original, isError: result?.success === false });
      const emitOptions = type === 'beforeToolCall' ? PRE_OPTIONS : POST_OPTIONS;
      const emission = emitter.emit(ctx, signal ? { ...emitOptions, signal } : emitOptions);
      session.inflight.add(emission);
      let target: JsonValue;
      try {
        target = await emission;
      } catch (error) {
        if (error instanceof InterceptionBlockedError) return { outcome: blocked(type, error, result) };
        if (signal?.aborted) return { outcome: CANCELLED };
        throw error;
      } finally {
        session.inflight.delete(emission);
      }
      // The emitter wrote back only a target the seam accepted (refuseArgs / refuseResult).
      if (type === 'beforeToolCall') {
        return isObject(target) && JSON.stringify(target) !== JSON.stringify(args)
          ? { context: { ...context, args: target as ToolCallHookContext['args'] } }
          : {};
      }
      return JSON.stringify(target) !== JSON.stringify(original) ? { result: resultFromTarget(target, result as ToolCallResult) } : {};
    },

    async closeToolCall(operationId, context, outcome) {
      const session = sessions.get(operationId);
      if (session === undefined || outcome.status === 'allow') return;
      // The pre_tool_call was allowed, then a decision webhook blocked (or a signal cancelled) the
      // call: post_tool_call still closes it in the audit stream, with the blocked result. The
      // verdict is recorded; it cannot change an outcome that already blocks.
      const ctx = session.builder.postToolCall({
        id: context.toolCallId,
        name: `${context.identifier}/${context.apiName}`,
        args: toJson<JsonObject>(context.args),
        value: toJson(notRun(outcome)),
        isError: true,
      });
      const emission = emitter.emitUnchecked(ctx);
      session.inflight.add(emission);
      try {
        await emission;
      } catch (err) {
        options.logger?.warn({ operationId, err: err instanceof Error ? err.name : 'error' }, 'interception post_tool_call emission failed');
      } finally {
        session.inflight.delete(emission);
      }
    },

    sessionId(operationId) {
      return sessions.get(operationId)?.builder.sessionId;
    },

    forget(operationId) {
      const session = sessions.get(operationId);
      if (session !== undefined && !session.owned) sessions.delete(operationId);
    },

    closeAll(reason) {
      // Sessions are per process: one this dispatcher still has open ends with it (its operation
      // may go on elsewhere, in a session of its own), so none is left without agent_shutdown.
      for (const [operationId, session] of [...sessions]) {
        if (!session.owned) continue;
        this.onShutdown(operationId, reason);
        ended.delete(operationId); // closing the dispatcher is not the operation's end
      }
    },

    async drain() {
      await Promise.allSettled([...lifecycle]);
    },
  };
}
