/** AGENT-HOOKS-0.1 interception: the public surface re-exported by `src/entry/index.ts`. */
export { InterceptionEmitter, type InterceptionEmitterOptions, type EmitOptions, type RecordSink, type HostFailure } from './emitter.ts';
export { AgentContextBuilder, type AgentContextBuilderOptions, type Message, type ModelToolCall, type ToolCallInput } from './builder.ts';
export {
  Verdict,
  ALLOW,
  EVIDENCE_MAX_BYTES,
  parseWireVerdict,
  hostErrorVerdict,
  isLiftable,
  isPermit,
  severity,
  type VerdictOptions,
  type WireVerdictResult,
} from './verdict.ts';
export {
  InterceptionBlockedError,
  InterceptionBlocked,
  ApprovalPendingError,
  AgentHooksInstallError,
  AgentRunStateError,
  ToolError,
  HostFailureError,
  HostErrorFailure,
} from '../contract/errors.ts';
export {
  AgentHooks,
  createAgentHooks,
  type AgentHooksOptions,
  type AgentHooksHost,
  type AgentHooksBinding,
  type AgentHooksAttachment,
  type StartRunOptions,
} from './run/bundle.ts';
export type {
  AgentRun,
  AdmittedInput,
  HistoryItem,
  PersistEntry,
  Persistence,
  Streaming,
  ToolSeamHostError,
  ModelCaller,
  NativeMessage,
  ModelCallResult,
  ToolExecutor,
  ToolCallOutcome,
  ToolCallRequest,
  RunEnd,
} from './run/agentRun.ts';
export type { ModelResponse, ModelResponseInput, ModelStreamPart } from './run/modelStream.ts';
export { parseJsonLossless } from './json/losslessJson.ts';
export {
  JCS_SHA256,
  jcsSha256Identity,
  createIdentityProvider,
  projectIdentityPreimage,
  type CustomIdentityProvider,
  type IdentityProviderOption,
} from './identity.ts';
export { canonicalizeJcs, DEFAULT_MAX_DEPTH } from './json/canonicalJson.ts';
export { validateEnvelope, DEFAULT_MAX_CONTEXT_BYTES } from './envelope.ts';
export { parseTransformPath, applyTransformPath } from './path.ts';
export { projectVerdict, truncateUtf8 } from './projection.ts';
export { resolveComposition, DEFAULT_COMPOSITION } from './composition.ts';
export { proceeds } from './record.ts';
export { createMemorySequenceProvider, type SequenceProvider } from './sequence.ts';
export { DEFAULT_TIMEOUT_MS } from './timeouts.ts';
export { HostError } from './reasons.ts';
export { INTERCEPTION_POINTS, transformPermitted } from './points.ts';
export type { Interceptor, InterceptorFunction, InterceptOptions } from './interceptor.ts';
export type { ApprovalResolver, ApprovalResolverFunction, ApprovalRedactor } from './approval.ts';
export type {
  AgentContext,
  ApprovalRequest,
  ApprovalResolution,
  CompositionConfig,
  EnforcementMode,
  InterceptionPoint,
  InterceptionRecord,
  JsonValue,
} from '../contract/agentHooks.ts';
