import type { JsonValue } from '../contract/agentHooks.ts';
import { HookrelayError } from '../contract/hookrelayError.ts';

/**
 * A framework tool whose call a `pre_tool_call` or `post_tool_call` policy denied: thrown from the
 * wrapped `execute`, it becomes the error result the model sees. The message is the JSON of
 * `content` (`{ error, reason, message? }`), never the blocked arguments or result.
 */
export class ToolCallDeniedError extends HookrelayError {
  readonly code = 'HOOKRELAY_TOOL_CALL_DENIED' as const;
  /** The verdict's reason (`policy.*`, or a `host_error:*` under `toolSeamHostError: 'continue'`). */
  readonly reason: string;
  /** What the model is given instead of the tool's result. */
  readonly content: JsonValue;
  constructor(message: string, content: JsonValue, reason: string) {
    super(message);
    this.name = 'ToolCallDeniedError';
    this.content = content;
    this.reason = reason;
  }

  /** Frameworks show a tool's error to the model as `String(error)`: the model gets the content alone. */
  override toString(): string {
    return this.message;
  }
}
