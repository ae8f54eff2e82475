import type { ToolCallHookContext, ToolCallResult } from '../contract/toolContext.ts';
import type { ToolCallControlOutcome } from '../decide/evaluateControls.ts';
import type { ShutdownReason } from './shutdownReason.ts';

/**
 * I4: how the dispatcher asks the AGENT-HOOKS-0.1 emitter about a tool call before its own
 * controls run. `outcome` ends the evaluation (a block); `context` / `result` carry transforms.
 */
export interface ToolSeam {
  /** The operation's session opens (first registration); a no-op when it is already open. */
  onStartup(operationId: string): void;
  /** The operation's session closes; a no-op for an operation this process never saw. */
  onShutdown(operationId: string, reason: ShutdownReason): void;
  before(
    type: 'beforeToolCall' | 'afterToolCall',
    operationId: string,
    context: ToolCallHookContext,
    result: ToolCallResult | undefined,
    signal: AbortSignal | undefined,
  ): Promise<{ outcome?: ToolCallControlOutcome; context?: ToolCallHookContext; result?: ToolCallResult }>;
  /**
   * A tool call whose pre_tool_call this seam allowed did not run (a decision webhook blocked it,
   * or it was cancelled): emits its post_tool_call with the blocked result, so every allowed
   * pre_tool_call has its post_tool_call. Never rejects.
   */
  closeToolCall(operationId: string, context: ToolCallHookContext, outcome: ToolCallControlOutcome): Promise<void>;
  /** The id of the operation's open session in this process, if one is open. */
  sessionId(operationId: string): string | undefined;
  /** Drops the operation's application-owned session (a run of it ended), so its next tool call looks again; no emission. */
  forget(operationId: string): void;
  /** Closes every session this seam owns with agent_shutdown(`reason`) (the dispatcher is closing). */
  closeAll(reason: ShutdownReason): void;
  /** Settles once every lifecycle emission started so far has been recorded. */
  drain(): Promise<void>;
}
