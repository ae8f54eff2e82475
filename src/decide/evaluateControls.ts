import type { ParsedSerializedHook } from '../contract/hook.ts';
import { isControlHook } from '../contract/hook.ts';
import type { BlockedToolResult, ToolCallHookContext, ToolCallResult } from '../contract/toolContext.ts';
import type { Logger } from '../observability/logger.ts';
import { matchesHook } from '../contract/matcher.ts';
import { blockedAfterResult, blockedBeforeResult, defaultDenyReason, HOOK_CONTROL_ERROR } from './blockedResult.ts';
import type { ToolCallWebhookResult } from './decisionWebhook.ts';

export type ToolCallControlOutcome =
  | { status: 'allow'; args?: Record<string, unknown>; result?: ToolCallResult }
  | { status: 'blocked'; reason: string; result: BlockedToolResult; terminate?: true }
  | { status: 'cancelled' };

/** A control-capable hook: serialized shape (handlers never run as controls, D4a). */
export type ControlHook = Pick<ParsedSerializedHook, 'id' | 'type' | 'matcher'> & { webhook?: ParsedSerializedHook['webhook']; env?: boolean };

export type EvaluateControlsInput = {
  type: 'beforeToolCall' | 'afterToolCall';
  context: ToolCallHookContext;
  result?: ToolCallResult;
  /** Caller hooks in registration order, or a thunk (a corrupt restored hook throws: D4b). */
  callerHooks: readonly ControlHook[] | (() => readonly ControlHook[]);
  /** The current environment's hooks, or a thunk that throws for an invalid configuration (L5). */
  envHooks: readonly ControlHook[] | (() => readonly ControlHook[]);
  run: (hook: ControlHook, event: Record<string, unknown>, signal: AbortSignal | undefined) => Promise<ToolCallWebhookResult>;
  logger: Pick<Logger, 'warn'>;
  signal?: AbortSignal;
};

/** R5b: the blocked outcome; an afterToolCall block keeps `original`'s run metadata (`blockedAfterResult`). */
export function blockedOutcome(type: 'beforeToolCall' | 'afterToolCall', reason: string, original?: ToolCallResult): ToolCallControlOutcome {
  return { status: 'blocked', reason, result: type === 'beforeToolCall' ? blockedBeforeResult(reason) : blockedAfterResult(reason, original) };
}

/**
 * R5a: caller controls in registration order, then the environment's (L3); the first deny
 * blocks; an allow or a notification-shaped answer (R4) goes on to the next control; errors
 * follow the hook's `onError` (R5); cancellation is never an allow.
 */
export async function evaluateControls(input: EvaluateControlsInput): Promise<ToolCallControlOutcome> {
  const { type, signal } = input;
  // The payload builder copies what it sends; the caller's context is never mutated.
  const event: Record<string, unknown> = type === 'afterToolCall' ? { ...input.context, result: input.result } : input.context;

  const callerHooks = typeof input.callerHooks === 'function' ? input.callerHooks() : input.callerHooks;
  const fromCallers = await runRound(input, callerHooks, event);
  if (fromCallers) return fromCallers;
  let envHooks: readonly ControlHook[];
  try {
    envHooks = typeof input.envHooks === 'function' ? input.envHooks() : input.envHooks;
  } catch (error) {
    input.logger.warn({ hookType: type, err: error instanceof Error ? error.message : 'error' }, 'environment hooks invalid: failing closed');
    return blockedOutcome(type, HOOK_CONTROL_ERROR, input.result);
  }
  const fromEnv = envHooks.length === 0 ? undefined : await runRound(input, envHooks, event);
  if (fromEnv) return fromEnv;
  return signal?.aborted ? CANCELLED : ALLOW;
}

const CANCELLED: ToolCallControlOutcome = Object.freeze({ status: 'cancelled' } as const);
const ALLOW: ToolCallControlOutcome = Object.freeze({ status: 'allow' } as const);

/** One round (caller hooks, or environment hooks) in order; `undefined` = no block, go on. */
async function runRound(
  input: EvaluateControlsInput,
  hooks: readonly ControlHook[],
  event: Record<string, unknown>,
): Promise<ToolCallControlOutcome | undefined> {
  const { type, signal } = input;
  for (const hook of hooks) {
    if (hook.type !== type || !isControlHook(hook) || !matchesHook(hook, input.context)) continue;
    if (signal?.aborted) return CANCELLED;
    const answer = await input.run(hook, event, signal);
    if (answer.status === 'cancelled' || signal?.aborted) return CANCELLED;
    if (answer.status === 'ignored') continue;
    if (answer.status === 'success') {
      if (answer.decision.decision === 'allow') continue;
      const reason = answer.decision.reason !== undefined && answer.decision.reason !== '' ? answer.decision.reason : defaultDenyReason(type);
      return blockedOutcome(type, reason, input.result);
    }
    input.logger.warn({ hookId: hook.id, hookType: type, code: answer.code, httpStatus: answer.httpStatus }, 'tool-call control failed');
    if (hook.webhook?.onError === 'block') return blockedOutcome(type, HOOK_CONTROL_ERROR, input.result);
  }
  return undefined;
}
