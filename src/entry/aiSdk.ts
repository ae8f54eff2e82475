/**
 * `hookrelay/ai-sdk`: the Vercel AI SDK integration (optional peer `ai`). Loads `ai` and the
 * interception core only: no BullMQ, ioredis, pg or the OpenAI Agents SDK (a queue-mode
 * dispatcher you pass in brings its own).
 */
export {
  createAiSdkHooks,
  AiSdkHooks,
  AiSdkRun,
  ToolCallDeniedError,
  InterceptionBlockedError,
  InterceptionBlocked,
  type AiSdkHooksOptions,
  type AiSdkMiddlewareOptions,
  type AiSdkRunOptions,
  type AiSdkSettings,
  type LifecycleDispatcher,
  type RunFinish,
} from '../integrations/aiSdk.ts';
export { UninterceptedToolError } from '../contract/errors.ts';
export { AgentHooksInstallError } from '../contract/errors.ts';
