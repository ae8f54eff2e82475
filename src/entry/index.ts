/**
 * hookrelay: the library entry. Importing it has no side effects: no connections, no
 * environment reads, no timers — and it loads none of BullMQ, ioredis, pg, drizzle,
 * PGlite or @upstash/qstash: the factories that need them import them when called (./lazy.ts).
 * `hookrelay/queue`, `hookrelay/store` and `hookrelay/worker` are the layer entries.
 */
import { HookDispatcher as DispatcherCore, type HookDispatcherOptions } from '../dispatch/hookDispatcher.ts';
import { createHookProducer } from './lazy.ts';

export * from '../contract/index.ts';
export type { RegisterOptions } from '../dispatch/hookDispatcher.ts';
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
} from '../contract/agentHooks.ts';
export * from '../intercept/index.ts';
export { resolveHeaderTemplates } from '../send/headerTemplates.ts';
export { createLogger, silentLogger, type Logger } from '../observability/logger.ts';
export { loadSettings, type Settings } from '../config/settings.ts';
export { SettingsError, EnvHookConfigError } from '../contract/errors.ts';
export type { HookDispatcherOptions, DispatchProducer, EvaluateOptions } from '../dispatch/hookDispatcher.ts';

/**
 * The dispatcher. Queue mode without a `producer` gets one built from the
 * dispatcher's environment (BullMQ and pg load then, not at import), owned and closed by it.
 */
export class HookDispatcher extends DispatcherCore {
  constructor(options: HookDispatcherOptions = {}) {
    super(options, { createProducer: createHookProducer });
  }
}
export {
  CriticalHookDeliveryError,
  WebhookDeliveryError,
  WebhookDeliveryFailure,
  type CriticalFailure,
  StorageError,
  EventNotAcceptedError,
  TenantError,
  TenantMismatchError,
  type NotAcceptedReason,
  type NotAcceptedDelivery,
  type DispatchReport,
} from '../contract/errors.ts';
// Every error a public function throws on purpose: one base, a stable `code` on each (`HOOKRELAY_*`).
export { HookrelayError, isHookrelayError, type HookrelayErrorCode } from '../contract/errors.ts';
export { DeliveryConfigError, SsrfBlockedError, AllowedCidrsError, RemoteInterceptorError } from '../contract/errors.ts';
export { PayloadTooLargeError } from '../contract/errors.ts';
export { IdempotencyConflictError, OutcomeNotStoredError, RedisUnavailableError } from '../contract/errors.ts';
export { ToolCallContextError } from '../contract/errors.ts';
export { WorkerPluginError } from '../contract/errors.ts';
export { parseToolCallHookResponse, MAX_DECISION_RESPONSE_BYTES, type ToolCallHookResponse } from '../decide/parseDecisionResponse.ts';
export type { ToolCallControlOutcome } from '../decide/evaluateControls.ts';
export { buildToolCallHookContext } from '../notify/toolCallContext.ts';
export { createWebhookPayloadBuilder } from '../notify/buildPayload.ts';
export { redactResultForEvents } from '../notify/redactResult.ts';
export { loadEnvHooks } from '../config/envHooks.ts';
export { DeferredContextError, DeferredCancelledError, ApprovalNotClaimedError } from '../contract/errors.ts';
export type {
  OperationStore,
  OperationStoreOptions,
  ApprovalDecision,
  PublishDeferredResultInput,
  PublishDeferredResultOutput,
} from '../operations/operationStore.ts';
export { PlaceholderNotFoundError, EmbeddedStoreUnavailableError, EmbeddedStoreUntrustedError, StoreUnavailableError } from '../contract/errors.ts';
export { ApprovalNotFoundError, ApprovalNotPendingError, ApprovalTokenError } from '../contract/errors.ts';
export { createHookProducer, createOperationStore, createStoreRecordSink, startDeliveryWorker } from './lazy.ts';
export { createRemoteInterceptor, RemoteInterceptorConfigSchema, type RemoteInterceptorConfig } from '../send/remoteInterceptor.ts';
export { FetchTransport } from '../send/fetchTransport.ts';
export type { StoreRecordSink } from '../store/interceptionRecordSink.ts';
export { createInterceptionSeam, type InterceptionPosture, type InterceptionSessionOption } from '../dispatch/interceptionSeam.ts';
export { shutdownReasonFor, type ShutdownReason } from '../dispatch/shutdownReason.ts';
export type { HookProducer, HookProducerOptions, EnqueueInput, EnqueueResult, EnqueueManyResult, SpoolStatus } from '../queue/types.ts';
// The programmatic worker (also `hookrelay/worker`): run it in your own worker file.
export type { StartDeliveryWorkerOptions, RunningDeliveryWorker } from '../worker/startDeliveryWorker.ts';
export type { EmailLookup } from '../notify/emailCache.ts';
