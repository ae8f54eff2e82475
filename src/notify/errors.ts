/** The errors of the payload builder (src/notify/). */
import { HookrelayError } from '../contract/hookrelayError.ts';

export class ToolCallContextError extends HookrelayError {
  readonly code = 'HOOKRELAY_TOOL_CALL_CONTEXT_INVALID' as const;
  override readonly name = 'ToolCallContextError';
  readonly fields: string[];

  constructor(fields: string[], detail: string) {
    super(`buildToolCallHookContext: ${detail}`);
    this.fields = fields;
  }
}
