import { randomUUID } from 'node:crypto';
import type { InterceptionRecord } from '../contract/agentHooks.ts';
import { AgentContextBuilder } from '../intercept/builder.ts';
import type { InterceptionEmitter } from '../intercept/emitter.ts';
import { HostError } from '../intercept/reasons.ts';
import { proceeds } from '../intercept/record.ts';
import type { Logger } from '../observability/logger.ts';

/** What the session table reads from the seam's options (InterceptionSeamOptions). */
type SessionTableOptions = {
  agentId?: string | undefined;
  framework?: string | undefined;
  session?: AgentContextBuilder | ((operationId: string) => AgentContextBuilder | undefined) | undefined;
  logger?: Pick<Logger, 'warn'> | undefined;
};

/** How many ended operations a seam remembers (a long-lived server unregisters many). */
const ENDED_OPERATIONS_KEPT = 10_000;
export const DEFAULT_DENY_REASON = 'Blocked by interceptor.';
const PROCEED: Promise<string | undefined> = Promise.resolve(undefined);

export type Session = {
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

/** I4: a startup that did not permit the session (policy deny or host error) closes it to every later point. */
function startupRefusal(record: InterceptionRecord): string | undefined {
  return proceeds(record) ? undefined : (record.verdict.reason ?? DEFAULT_DENY_REASON);
}

/**
 * The seam's per-process bookkeeping: the open sessions by operation, the operations it ended,
 * and the lifecycle emissions (agent_startup / agent_shutdown) not yet recorded.
 */
export function createSessionTable(emitter: InterceptionEmitter, options: SessionTableOptions) {
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

  /** A dispatcher-owned session: its agent_startup goes out now; tool calls wait for its verdict. */
  const openOwned = (operationId: string): Session => {
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
    return { builder, owned: true, startup, inflight: new Set() };
  };

  const open = (operationId: string): Session => {
    const app = applicationSession(operationId);
    const session: Session = app ? { builder: app, owned: false, startup: PROCEED, inflight: new Set() } : openOwned(operationId);
    sessions.set(operationId, session);
    return session;
  };

  return {
    sessions,
    open,
    track,
    markEnded,
    hasEnded: (operationId: string) => ended.has(operationId),
    /** The operation runs again (or only this dispatcher closed): a later tool call may open a session. */
    clearEnded: (operationId: string) => ended.delete(operationId),
    /** Settles once every lifecycle emission started so far has been recorded. */
    drain: async (): Promise<void> => {
      await Promise.allSettled([...lifecycle]);
    },
  };
}
