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
