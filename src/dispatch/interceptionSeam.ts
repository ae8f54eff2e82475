import type { AgentContextBuilder } from '../intercept/builder.ts';
import type { InterceptionEmitter } from '../intercept/emitter.ts';
import type { Logger } from '../observability/logger.ts';
import { createSessionTable } from './seamSessions.ts';
import { CANCELLED, emitClosingPostToolCall, emitToolPoint, sessionBlocked } from './seamToolPoints.ts';
import type { ShutdownReason } from './shutdownReason.ts';
import type { ToolSeam } from './toolSeam.ts';

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
  const table = createSessionTable(emitter, options);
  const sessions = table.sessions;

  return {
    onStartup(operationId) {
      if (!sessions.has(operationId)) table.open(operationId);
      table.clearEnded(operationId); // opened after `open` succeeded: an invalid session option changes nothing
    },

    onShutdown(operationId, reason: ShutdownReason) {
      table.markEnded(operationId);
      const session = sessions.get(operationId);
      if (!session) return;
      sessions.delete(operationId);
      if (!session.owned) return; // the application closes its own session
      const close = async () => {
        const refusal = await session.startup;
        await Promise.allSettled(session.inflight);
        await emitter.emitUnchecked(session.builder.agentShutdown({ reason: refusal === undefined ? reason : 'error' }));
      };
      table.track(close(), 'agent_shutdown', operationId);
    },

    async before(type, operationId, context, result, signal) {
      // Unregistered here: the operation ended, its session is closed; nothing reopens it.
      if (!sessions.has(operationId) && table.hasEnded(operationId)) return { outcome: CANCELLED };
      const session = sessions.get(operationId) ?? table.open(operationId);
      const refusal = await session.startup;
      if (refusal !== undefined) return { outcome: sessionBlocked(type, refusal, result) };
      // Unregistered while waiting for the startup verdict: the session is closed, nothing may run in it.
      if (sessions.get(operationId) !== session || signal?.aborted) return { outcome: CANCELLED };
      return emitToolPoint(emitter, session, posture, type, context, result, signal);
    },

    async closeToolCall(operationId, context, outcome) {
      const session = sessions.get(operationId);
      if (session === undefined || outcome.status === 'allow') return;
      await emitClosingPostToolCall(emitter, session, operationId, context, outcome, options);
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
        table.clearEnded(operationId); // closing the dispatcher is not the operation's end
      }
    },

    drain: () => table.drain(),
  };
}
