/**
 * `hookrelay/openai-agents`: the OpenAI Agents SDK integration (optional peer `@openai/agents`,
 * loaded when `prepare()` first runs). No BullMQ, ioredis, pg or the AI SDK.
 */
export {
  createOpenAIAgentsHooks,
  OpenAIAgentsHooks,
  OpenAIAgentsRun,
  InterceptionBlockedError,
  InterceptionBlocked,
  type OpenAIAgentsHooksOptions,
  type OpenAIAgentsRunOptions,
  type LifecycleDispatcher,
  type PrepareOptions,
  type RunAgentOptions,
  type RunFinish,
} from '../integrations/openaiAgents.ts';
export { UninterceptedToolError } from '../contract/errors.ts';
export { AgentHooksInstallError } from '../contract/errors.ts';
