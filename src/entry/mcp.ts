/**
 * `hookrelay/mcp`: MCP tool calls under AGENT-HOOKS-0.1 — wraps an `@modelcontextprotocol/sdk`
 * `Client` (optional peer; hookrelay loads none of it) so every `callTool` gets pre_tool_call /
 * post_tool_call verdicts. Loads the interception core only: no AI SDK, OpenAI Agents SDK,
 * BullMQ, ioredis or pg.
 */
export {
  createMcpHooks,
  McpHooks,
  McpRun,
  InterceptionBlockedError,
  InterceptionBlocked,
  type McpCallToolParams,
  type McpCallToolResult,
  type McpHooksOptions,
  type McpRunOptions,
  type McpToolClient,
  type WrapClientOptions,
  type LifecycleDispatcher,
  type RunFinish,
} from '../integrations/mcp.ts';
export { UninterceptedToolError } from '../contract/errors.ts';
export { AgentHooksInstallError, AgentRunStateError } from '../contract/errors.ts';
