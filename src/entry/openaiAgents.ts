/**
 * `hookrelay/openai-agents`: the OpenAI Agents SDK integration (optional peer `@openai/agents`).
 * Imports only the SDK's types and the interception core: no BullMQ, ioredis, pg or the AI SDK.
 */
export {
  createOpenAIAgentsHooks,
  OpenAIAgentsHooks,
  OpenAIAgentsRun,
  InterceptionBlocked,
  type OpenAIAgentsHooksOptions,
  type OpenAIAgentsRunOptions,
  type LifecycleDispatcher,
  type RunFinish,
} from '../integrations/openaiAgents.ts';
