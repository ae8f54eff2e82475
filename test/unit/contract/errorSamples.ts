import * as hookrelay from '../../../src/entry/index.ts';

export type AnyErrorClass = new (...args: never[]) => Error;

/** One instance of each error class the root entry exports, built with realistic arguments. */
export const samples: Record<string, () => Error> = {
  SettingsError: () => new hookrelay.SettingsError(['REDIS_URL'], 'bad'),
  EnvHookConfigError: () => new hookrelay.EnvHookConfigError(['AGENT_HOOK_WEBHOOK_URL'], 'bad'),
  RemoteInterceptorError: () => new hookrelay.RemoteInterceptorError('x'),
  DeliveryConfigError: () => new hookrelay.DeliveryConfigError('x'),
  SsrfBlockedError: () => new hookrelay.SsrfBlockedError('169.254.169.254'),
  AllowedCidrsError: () => new hookrelay.AllowedCidrsError('banana'),
  HostFailureError: () => new hookrelay.HostFailureError('host_error:interceptor_failed' as never, 'x'),
  HostErrorFailure: () => new hookrelay.HostErrorFailure('host_error:interceptor_failed' as never, 'x'),
  InterceptionBlockedError: () =>
    new hookrelay.InterceptionBlockedError(
      { interception_point: 'pre_tool_call', verdict: { decision: 'deny', reason: 'policy' } } as never,
      { decision: 'deny' } as never,
    ),
  InterceptionBlocked: () =>
    new hookrelay.InterceptionBlocked(
      { interception_point: 'pre_tool_call', verdict: { decision: 'deny', reason: 'policy' } } as never,
      { decision: 'deny' } as never,
    ),
  ApprovalPendingError: () =>
    new hookrelay.ApprovalPendingError(
      { interception_point: 'pre_tool_call', verdict: { decision: 'deny', reason: 'host_error:approval_unresolved' } } as never,
      { decision: 'deny' } as never,
      { id: 'apr_1', tenant: 'default', operationId: 'op', expiresAt: '2026-12-08T00:00:00.000Z' },
    ),
  ApprovalNotFoundError: () => new hookrelay.ApprovalNotFoundError('apr_1'),
  ApprovalNotPendingError: () => new hookrelay.ApprovalNotPendingError('apr_1', 'approved', ' (by alice)'),
  ApprovalTokenError: () => new hookrelay.ApprovalTokenError('this answer link is not valid'),
  WorkerPluginError: () => new hookrelay.WorkerPluginError('x'),
  AgentHooksInstallError: () => new hookrelay.AgentHooksInstallError('x'),
  AgentRunStateError: () => new hookrelay.AgentRunStateError('x'),
  IdempotencyConflictError: () => new hookrelay.IdempotencyConflictError('op', 'audit', 'req-42'),
  OperationIdMismatchError: () => new hookrelay.OperationIdMismatchError('op', 'other'),
  TenantError: () => new hookrelay.TenantError('enqueue: tenant'),
  TenantMismatchError: () => new hookrelay.TenantMismatchError('op', 'a', 'b'),
  ToolError: () => new hookrelay.ToolError({ code: 'not_found' }),
  TemplateEnvPatternError: () => new hookrelay.TemplateEnvPatternError('x'),
  HookConfigError: () => new hookrelay.HookConfigError('h1', 0, [{ path: 'url', message: 'bad' }]),
  EventValidationError: () => new hookrelay.EventValidationError('event must be an object'),
  PayloadTooLargeError: () => new hookrelay.PayloadTooLargeError(10, 5),
  EventNotAcceptedError: () =>
    new hookrelay.EventNotAcceptedError({ reason: 'spool_full', hookIds: ['audit'], cause: new hookrelay.StoreUnavailableError('x') }),
  RedisUnavailableError: () => new hookrelay.RedisUnavailableError('x'),
  StorageError: () => new hookrelay.StorageError('insert deliveries', '22P05', 'unsupported Unicode escape sequence'),
  OutcomeNotStoredError: () => new hookrelay.OutcomeNotStoredError('dlv_1', '22P05'),
  DeferredContextError: () => new hookrelay.DeferredContextError('x'),
  DeferredCancelledError: () => new hookrelay.DeferredCancelledError('x'),
  ApprovalNotClaimedError: () => new hookrelay.ApprovalNotClaimedError('x'),
  CriticalHookDeliveryError: () => new hookrelay.CriticalHookDeliveryError([{ hookId: 'audit', cause: new hookrelay.WebhookDeliveryFailure('timeout') }]),
  WebhookDeliveryError: () => new hookrelay.WebhookDeliveryError('timeout'),
  WebhookDeliveryFailure: () => new hookrelay.WebhookDeliveryFailure('timeout'),
  ToolCallContextError: () => new hookrelay.ToolCallContextError(['toolCallId'], 'missing'),
  PlaceholderNotFoundError: () => new hookrelay.PlaceholderNotFoundError('op', 'tc'),
  EmbeddedStoreUnavailableError: () => new hookrelay.EmbeddedStoreUnavailableError('x'),
  EmbeddedStoreUntrustedError: () => new hookrelay.EmbeddedStoreUntrustedError('x'),
  StoreUnavailableError: () => new hookrelay.StoreUnavailableError('the ledger store (Postgres at DATABASE_URL) is unreachable'),
};

/**
 * Renamed classes keep their old `name` (events' `errorType`, `errorDetail` and audit details
 * carry it); the old export names stay as deprecated aliases of the same class.
 */
export const KEPT_NAME: Record<string, string> = {
  InterceptionBlockedError: 'InterceptionBlocked',
  HostFailureError: 'HostErrorFailure',
  WebhookDeliveryError: 'WebhookDeliveryFailure',
};
export const DEPRECATED_ALIAS: Record<string, string> = {
  InterceptionBlocked: 'InterceptionBlockedError',
  HostErrorFailure: 'HostFailureError',
  WebhookDeliveryFailure: 'WebhookDeliveryError',
};
