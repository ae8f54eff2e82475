import type { JsonObject, JsonValue } from '../contract/agentHooks.ts';
import type { ToolCallHookContext, ToolCallResult } from '../contract/toolContext.ts';
import type { ToolCallControlOutcome } from '../control/evaluateControls.ts';
import { blockedOutcome } from '../control/evaluateControls.ts';
import { AgentContextBuilder } from '../interception/builder.ts';
import type { InterceptionEmitter } from '../interception/emitter.ts';
import { InterceptionBlocked } from '../interception/errors.ts';
import { HostError, isReservedReason } from '../interception/reasons.ts';
import type { Logger } from '../observability/logger.ts';
import type { ToolSeam } from './toolSeam.ts';

/** I4: what an infrastructure `host_error:*` deny does to the run; policy denies always continue. */
export type InterceptionPosture = 'terminate' | 'continue';

export type InterceptionSeamOptions = {
  posture?: InterceptionPosture;
  /** AgentContext `agent.id` / `agent.framework` (§4.1). */
  agentId?: string;
  framework?: string;
  logger?: Pick<Logger, 'warn'>;
};

/** Reserved reasons that are policy outcomes, not infrastructure failures (I4). */
const POLICY_REASONS = new Set<string>([HostError.TransformConflict, HostError.CompositionDisagreement]);

const DEFAULT_DENY_REASON = 'Blocked by interceptor.';

/** JSON-safe copy (drops undefined and functions) so the envelope sees plain JSON. */
function toJson<T extends JsonValue>(value: unknown): T {
  return JSON.parse(JSON.stringify(value ?? null)) as T;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/**
 * I4: connects an AGENT-HOOKS-0.1 emitter to the dispatcher's tool calls. `pre_tool_call` runs
 * before any decision webhook (a transform rewrites the args they see); `post_tool_call` runs
 * before the afterToolCall controls. Mapping: session.id = operationId, tool_call.id =
 * toolCallId, tool_call.name = `identifier/apiName`, tool_call.args = args.
 */
export function createInterceptionSeam(emitter: InterceptionEmitter, options: InterceptionSeamOptions = {}): ToolSeam {
  const posture = options.posture ?? 'terminate';
  const builders = new Map<string, AgentContextBuilder>();
  /** Per-operation chain: lifecycle emissions keep their order relative to tool emissions. */
  const chains = new Map<string, Promise<unknown>>();

  const builder = (operationId: string): AgentContextBuilder => {
    let b = builders.get(operationId);
    if (!b) {
      b = new AgentContextBuilder({ agentId: options.agentId ?? 'hookrelay', framework: options.framework ?? 'hookrelay', sessionId: operationId });
      builders.set(operationId, b);
    }
    return b;
  };

  const background = (operationId: string, run: () => Promise<unknown>): void => {
    const previous = chains.get(operationId) ?? Promise.resolve();
    const next = previous.then(run).catch((err: unknown) => {
      options.logger?.warn({ operationId, err: err instanceof Error ? err.name : 'error' }, 'interception lifecycle emission failed');
    });
    chains.set(operationId, next);
  };

  const blocked = (type: 'beforeToolCall' | 'afterToolCall', error: InterceptionBlocked): ToolCallControlOutcome => {
    const reason = error.record.verdict.reason ?? DEFAULT_DENY_REASON;
    const infrastructure = isReservedReason(reason) && !POLICY_REASONS.has(reason);
    const outcome = blockedOutcome(type, reason);
    return infrastructure && posture === 'terminate' && outcome.status === 'blocked' ? { ...outcome, terminate: true } : outcome;
  };

  return {
    onStartup(operationId) {
      const ctx = builder(operationId).agentStartup({ toolsRegistered: [] });
      background(operationId, () => emitter.emitUnchecked(ctx));
    },
    onShutdown(operationId) {
      const ctx = builder(operationId).agentShutdown({ reason: 'completed' });
      background(operationId, () => emitter.emitUnchecked(ctx));
      const chain = chains.get(operationId);
      void chain?.then(() => {
        if (chains.get(operationId) === chain) {
          chains.delete(operationId);
          builders.delete(operationId);
        }
      });
    },
    async before(type, operationId, context, result, signal) {
      await chains.get(operationId); // startup first
      const name = `${context.identifier}/${context.apiName}`;
      const args = toJson<JsonObject>(context.args);
      const ctx =
        type === 'beforeToolCall'
          ? builder(operationId).preToolCall({ id: context.toolCallId, name, args })
          : builder(operationId).postToolCall({ id: context.toolCallId, name, args, value: toJson(result), isError: result?.success === false });
      let target: JsonValue;
      try {
        target = await emitter.emit(ctx, signal ? { signal } : {});
      } catch (error) {
        if (error instanceof InterceptionBlocked) return { outcome: blocked(type, error) };
        if (signal?.aborted) return { outcome: { status: 'cancelled' } };
        throw error;
      }
      if (type === 'beforeToolCall') {
        return isObject(target) && JSON.stringify(target) !== JSON.stringify(args) ? { context: { ...context, args: target as ToolCallHookContext['args'] } } : {};
      }
      const original = toJson(result);
      return JSON.stringify(target) !== JSON.stringify(original) && isObject(target) ? { result: target as ToolCallResult } : {};
    },
  };
}
