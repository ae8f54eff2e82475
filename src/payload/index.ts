export { redactResultForEvents } from './redactResult.ts';
export {
  createEmailResolver,
  EMAIL_CACHE_CAPACITY,
  EMAIL_CACHE_TTL_MS,
  type EmailLookup,
  type EmailResolver,
  type EmailResolverOptions,
  type ResolveEmailOptions,
} from './emailCache.ts';
export { assemblePayload, emailUserId, wantsEmail, type AssemblePayloadInput, type PayloadHook, type WebhookPayload } from './assemblePayload.ts';
export {
  createWebhookPayloadBuilder,
  type BuildPayloadInput,
  type WebhookPayloadBuilder,
  type WebhookPayloadBuilderOptions,
} from './buildPayload.ts';
export {
  buildToolCallHookContext,
  ToolCallContextError,
  type ToolCallCorrelation,
  type ToolCallHookContextInput,
  type ToolCallInput,
} from './toolCallContext.ts';
