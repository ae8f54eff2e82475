import type { ToolCallHookContext, ToolCallResult } from '../contract/toolContext.ts';
import type { ToolCallControlOutcome } from '../control/evaluateControls.ts';
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
  /** Drops the operation's application-owned session (a run of it ended), so its next tool call looks again; no emission. */
  forget(operationId: string): void;
  /** Settles once every lifecycle emission started so far has been recorded. */
  drain(): Promise<void>;
}
