/**
 * hookrelay: the library entry. Importing it has no side effects: no connections, no
 * environment reads, no timers (SPEC §12).
 */
export * from './contract/index.ts';
export {
  SPEC_VERSION,
  InterceptionPointSchema,
  EnforcementModeSchema,
  HostErrorReasonSchema,
  AgentContextCoreSchema,
  VerdictSchema,
  WireVerdictSchema,
  CompositionConfigSchema,
  InterceptionRecordSchema,
  type Verdict as VerdictShape,
  type HostErrorReason,
} from './contract/agentHooks.ts';
export * from './interception/index.ts';
export { resolveHeaderTemplates } from './delivery/headerTemplates.ts';
export { createLogger, silentLogger, type Logger } from './observability/logger.ts';
export { loadSettings, SettingsError, type Settings } from './config/settings.ts';
export { HookDispatcher, type HookDispatcherOptions, type DispatchProducer, type EvaluateOptions } from './dispatch/HookDispatcher.ts';
export { CriticalHookDeliveryError, type CriticalFailure } from './dispatch/criticalError.ts';
export { parseToolCallHookResponse, MAX_DECISION_RESPONSE_BYTES, type ToolCallHookResponse } from './control/parseDecisionResponse.ts';
export type { ToolCallControlOutcome } from './control/evaluateControls.ts';
export { buildToolCallHookContext, createWebhookPayloadBuilder, redactResultForEvents } from './payload/index.ts';
export { loadEnvHooks, EnvHookConfigError } from './config/envHooks.ts';
export { createOperationStore, DeferredContextError, DeferredCancelledError, ApprovalNotClaimedError, type OperationStore, type ApprovalDecision } from './control/operationStore.ts';
export { createRemoteInterceptor, RemoteInterceptorConfigSchema, type RemoteInterceptorConfig } from './delivery/remoteInterceptor.ts';
export { FetchTransport } from './delivery/fetchTransport.ts';
export { createStoreRecordSink } from './store/interceptionRecordSink.ts';
export { createInterceptionSeam, type InterceptionPosture, type InterceptionSessionOption } from './dispatch/interceptionSeam.ts';
export { shutdownReasonFor, type ShutdownReason } from './dispatch/shutdownReason.ts';
export { createHookProducer } from './queue/producer.ts';
export type { HookProducer, HookProducerOptions, EnqueueInput, EnqueueResult, EnqueueManyResult } from './queue/types.ts';
// The programmatic worker (a later `hookrelay/worker` entry): run it in your own worker file.
export { startDeliveryWorker, type StartDeliveryWorkerOptions, type RunningDeliveryWorker } from './worker/index.ts';
export type { EmailLookup } from './payload/emailCache.ts';
