export * from './hookTypes.ts';
export * from './webhook.ts';
export * from './hook.ts';
export * from './events.ts';
export * from './toolContext.ts';
export * from './decision.ts';
export * from './operation.ts';
export * from './delivery.ts';
// The contract's own errors, by name: errors.ts holds every error class of the package, and the
// others are exported by the entries that throw them.
export {
  type ConfigIssue,
  HookConfigError,
  EventValidationError,
  OperationIdMismatchError,
  TenantError,
  TenantMismatchError,
  type CriticalFailure,
  CriticalHookDeliveryError,
  type NotAcceptedReason,
  type NotAcceptedDelivery,
  type DispatchReport,
  EventNotAcceptedError,
  WebhookDeliveryError,
  WebhookDeliveryFailure,
  StorageError,
  TemplateEnvPatternError,
} from './errors.ts';
export * from './validate.ts';
export * from './templateSources.ts';
export * from './endpoint.ts';
export * from '../util/errorMessage.ts';
