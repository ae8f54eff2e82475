import type { JsonObject, JsonValue } from '../contract/agentHooks.ts';
import type { ToolCallHookContext, ToolCallResult } from '../contract/toolContext.ts';
import type { ToolCallControlOutcome } from '../decide/evaluateControls.ts';
import { blockedOutcome } from '../decide/evaluateControls.ts';
import type { EmitOptions, InterceptionEmitter } from '../intercept/emitter.ts';
import { InterceptionBlockedError } from '../contract/errors.ts';
import { HostError, isReservedReason } from '../intercept/reasons.ts';
import type { Logger } from '../observability/logger.ts';
import { refuseArgs, refuseResult, resultFromTarget } from './seamTransforms.ts';
import { DEFAULT_DENY_REASON, type Session } from './seamSessions.ts';
import type { ToolSeam } from './toolSeam.ts';
import { isObject } from '../util/isObject.ts';

type ToolPoint = 'beforeToolCall' | 'afterToolCall';
type SeamAnswer = Awaited<ReturnType<ToolSeam['before']>>;

/** Reserved reasons that are policy outcomes, not infrastructure failures (I4). */
const POLICY_REASONS = new Set<string>([HostError.TransformConflict, HostError.CompositionDisagreement]);

export const CANCELLED: ToolCallControlOutcome = Object.freeze({ status: 'cancelled' } as const);
const PRE_OPTIONS: EmitOptions = { acceptTarget: refuseArgs };
const POST_OPTIONS: EmitOptions = { acceptTarget: refuseResult };

/** What a tool call that never ran hands post_tool_call: why it did not run, never a tool output. */
function notRun(outcome: ToolCallControlOutcome): ToolCallResult {
  if (outcome.status === 'blocked') return outcome.result;
  return { content: 'Tool call cancelled.', success: false, error: 'cancelled', state: { type: 'cancelled' } };
}

/** JSON-safe copy (drops undefined and functions) so the envelope sees plain JSON. */
function toJson<T extends JsonValue>(value: unknown): T {
  return JSON.parse(JSON.stringify(value ?? null)) as T;
}

/** A blocked session stops the run whatever the posture: no point of it may proceed. */
export function sessionBlocked(type: ToolPoint, reason: string, result: ToolCallResult | undefined): ToolCallControlOutcome {
  const outcome = blockedOutcome(type, reason, result);
  return outcome.status === 'blocked' ? { ...outcome, terminate: true } : outcome;
}

/** I4: an interceptor's deny; an infrastructure (`host_error:*`) deny terminates the run under the `terminate` posture. */
function blockedByInterceptor(
  type: ToolPoint,
  error: InterceptionBlockedError,
  result: ToolCallResult | undefined,
  posture: 'terminate' | 'continue',
): ToolCallControlOutcome {
  const reason = error.record.verdict.reason ?? DEFAULT_DENY_REASON;
  const infrastructure = isReservedReason(reason) && !POLICY_REASONS.has(reason);
  const outcome = blockedOutcome(type, reason, result);
  return infrastructure && posture === 'terminate' && outcome.status === 'blocked' ? { ...outcome, terminate: true } : outcome;
}

/**
 * pre_tool_call / post_tool_call of one tool call in an open session: a deny blocks it, an
 * accepted target rewrites the args (pre) or the result (post); the emission counts as in flight.
 */
export async function emitToolPoint(
  emitter: InterceptionEmitter,
  session: Session,
  posture: 'terminate' | 'continue',
  type: ToolPoint,
  context: ToolCallHookContext,
  result: ToolCallResult | undefined,
  signal: AbortSignal | undefined,
): Promise<SeamAnswer> {
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
    if (error instanceof InterceptionBlockedError) return { outcome: blockedByInterceptor(type, error, result, posture) };
    if (signal?.aborted) return { outcome: CANCELLED };
    throw error;
  } finally {
    session.inflight.delete(emission);
  }
  // The emitter wrote back only a target the seam accepted (refuseArgs / refuseResult).
  if (type === 'beforeToolCall') {
    return isObject(target) && JSON.stringify(target) !== JSON.stringify(args) ? { context: { ...context, args: target as ToolCallHookContext['args'] } } : {};
  }
  return JSON.stringify(target) !== JSON.stringify(original) ? { result: resultFromTarget(target, result as ToolCallResult) } : {};
}

/**
 * The pre_tool_call was allowed, then a decision webhook blocked (or a signal cancelled) the
 * call: post_tool_call still closes it in the audit stream, with the blocked result. The
 * verdict is recorded; it cannot change an outcome that already blocks. Never rejects.
 */
export async function emitClosingPostToolCall(
  emitter: InterceptionEmitter,
  session: Session,
  operationId: string,
  context: ToolCallHookContext,
  outcome: ToolCallControlOutcome,
  options: { logger?: Pick<Logger, 'warn'> | undefined },
): Promise<void> {
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
}
