import type { ToolCallHookContext, ToolCallResult } from '../contract/toolContext.ts';
import type { ToolCallControlOutcome } from '../control/evaluateControls.ts';

/**
 * I4: how the dispatcher asks the AGENT-HOOKS-0.1 emitter about a tool call before its own
 * controls run. `outcome` ends the evaluation (a block); `context` / `result` carry transforms.
 */
export interface ToolSeam {
  onStartup(operationId: string): void;
  onShutdown(operationId: string): void;
  before(
    type: 'beforeToolCall' | 'afterToolCall',
    operationId: string,
    context: ToolCallHookContext,
    result: ToolCallResult | undefined,
    signal: AbortSignal | undefined,
  ): Promise<{ outcome?: ToolCallControlOutcome; context?: ToolCallHookContext; result?: ToolCallResult }>;
}
