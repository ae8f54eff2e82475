import type { InterceptionRecord, JsonObject, JsonValue } from '../contract/agentHooks.ts';
import type { ToolCallHookContext, ToolCallResult } from '../contract/toolContext.ts';
import type { ToolCallControlOutcome } from '../control/evaluateControls.ts';
import { blockedOutcome } from '../control/evaluateControls.ts';
import { AgentContextBuilder } from '../interception/builder.ts';
import type { EmitOptions, InterceptionEmitter } from '../interception/emitter.ts';
import { InterceptionBlocked } from '../interception/errors.ts';
import { HostError, isReservedReason } from '../interception/reasons.ts';
import { proceeds } from '../interception/record.ts';
import type { Logger } from '../observability/logger.ts';
import { refuseArgs, refuseResult, resultFromTarget } from './seamTransforms.ts';
import type { ShutdownReason } from './shutdownReason.ts';
import type { ToolSeam } from './toolSeam.ts';

/** I4: what an infrastructure `host_error:*` deny does to the run; policy denies always continue. */
export type InterceptionPosture = 'terminate' | 'continue';

/**
 * An application-owned AGENT-HOOKS-0.1 session (seed 003: one long session across several runs).
 * A builder: every operation joins it. A function: the session of that operation, or `undefined`
 * for a dispatcher-owned per-operation session. The dispatcher emits only the tool points into an
 * application-owned session; its `agent_startup` / `agent_shutdown` belong to the application.
 */
export type InterceptionSessionOption = AgentContextBuilder | ((operationId: string) => AgentContextBuilder | undefined);

export type InterceptionSeamOptions = {
  posture?: InterceptionPosture;
  /** AgentContext `agent.id` / `agent.framework` (§4.1) of dispatcher-owned sessions. */
  agentId?: string;
  framework?: string;
  session?: InterceptionSessionOption;
  logger?: Pick<Logger, 'warn'>;
};

/** Reserved reasons that are policy outcomes, not infrastructure failures (I4). */
const POLICY_REASONS = new Set<string>([HostError.TransformConflict, HostError.CompositionDisagreement]);

const DEFAULT_DENY_REASON = 'Blocked by interceptor.';
const CANCELLED: ToolCallControlOutcome = Object.freeze({ status: 'cancelled' } as const);
const PROCEED: Promise<string | undefined> = Promise.resolve(undefined);
const PRE_OPTIONS: EmitOptions = { acceptTarget: refuseArgs };
const POST_OPTIONS: EmitOptions = { acceptTarget: refuseResult };

type Session = {
  builder: AgentContextBuilder;
  /** The dispatcher emits this session's agent_startup / agent_shutdown (false: the application does). */
  owned: boolean;
  /** Settles to `undefined` when the session may proceed, else the reason its agent_startup blocked it (§6.1a). */
  startup: Promise<string | undefined>;
  /** Tool emissions in flight: agent_shutdown waits for them, so it stays the session's last point. */
  inflight: Set<Promise<JsonValue>>;
};

/** JSON-safe copy (drops undefined and functions) so the envelope sees plain JSON. */
function toJson<T extends JsonValue>(value: unknown): T {
  return JSON.parse(JSON.stringify(value ?? null)) as T;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** §6.1a: a startup that did not permit the session (policy deny or host error) closes it to every later point. */
function startupRefusal(record: InterceptionRecord): string | undefined {
  return proceeds(record) ? undefined : (record.verdict.reason ?? DEFAULT_DENY_REASON);
}

/** A blocked session stops the run whatever the posture: no point of it may proceed (§6.1a). */
function sessionBlocked(type: 'beforeToolCall' | 'afterToolCall', reason: string): ToolCallControlOutcome {
  const outcome = blockedOutcome(type, reason);
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
 * when it did not permit the session (§6.1a). `agent_shutdown` closes it at unregister, with the
 * mapped completion reason (`error` after a startup block, §6.1a).
 */
export function createInterceptionSeam(emitter: InterceptionEmitter, options: InterceptionSeamOptions = {}): ToolSeam {
  const posture = options.posture ?? 'terminate';
  const sessions = new Map<string, Session>();
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
      const builder = new AgentContextBuilder({ agentId: options.agentId ?? 'hookrelay', framework: options.framework ?? 'hookrelay', sessionId: operationId });
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

  const blocked = (type: 'beforeToolCall' | 'afterToolCall', error: InterceptionBlocked): ToolCallControlOutcome => {
    const reason = error.record.verdict.reason ?? DEFAULT_DENY_REASON;
    const infrastructure = isReservedReason(reason) && !POLICY_REASONS.has(reason);
    const outcome = blockedOutcome(type, reason);
    return infrastructure && posture === 'terminate' && outcome.status === 'blocked' ? { ...outcome, terminate: true } : outcome;
  };

  return {
    onStartup(operationId) {
      if (!sessions.has(operationId)) open(operationId);
    },

    onShutdown(operationId, reason: ShutdownReason) {
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
      const session = sessions.get(operationId) ?? open(operationId);
      const refusal = await session.startup;
      if (refusal !== undefined) return { outcome: sessionBlocked(type, refusal) };
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
        if (error instanceof InterceptionBlocked) return { outcome: blocked(type, error) };
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

    forget(operationId) {
      const session = sessions.get(operationId);
      if (session !== undefined && !session.owned) sessions.delete(operationId);
    },

    async drain() {
      await Promise.allSettled([...lifecycle]);
    },
  };
}
