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

/**
 * Something hookrelay cannot put through `pre_tool_call` / `post_tool_call` was refused so that
 * nothing runs unjudged: a tool on an agent an Agents SDK run reaches (a hosted tool the provider
 * runs, a hosted shell, the computer tool, an agent tool it cannot rebuild), an MCP request whose
 * method the guard does not know (it might run a tool or return a tool's output), a model call
 * offering a tool whose `execute` hookrelay does not wrap. `remedy` says how to let it through
 * knowingly.
 */
export class UninterceptedToolError extends HookrelayError {
  readonly code = 'HOOKRELAY_TOOL_NOT_INTERCEPTED' as const;
  /** The agent (or `mcp`, `ai-sdk`) that carries the tool. */
  readonly agent: string;
  /** The tool's name (what `allowUninterceptedTools` takes), or the MCP method. */
  readonly tool: string;
  /** The tool's kind: `hosted_tool`, `computer`, `shell` (a hosted shell), `agent_tool`, `mcp_method`, `mcp_task`, `model`, `function`. */
  readonly kind: string;
  constructor(agent: string, tool: string, kind: string, remedy?: string) {
    const subject =
      agent === 'mcp'
        ? `the MCP ${kind === 'mcp_task' ? 'task result' : 'request'} "${tool}", which`
        : `agent "${agent}" has the ${kind} tool "${tool}", whose calls`;
    super(
      `${subject} hookrelay cannot intercept: ${remedy ?? `remove it, or pass allowUninterceptedTools: [${JSON.stringify(tool)}] to prepare() to run it without pre_tool_call / post_tool_call`}`,
    );
    this.name = 'UninterceptedToolError';
    this.agent = agent;
    this.tool = tool;
    this.kind = kind;
  }
}
