import { describe, expect, it } from 'vitest';
import * as hookrelay from '../../../src/entry/index.ts';
import * as queueEntry from '../../../src/entry/queue.ts';
import * as storeEntry from '../../../src/entry/store.ts';
import * as workerEntry from '../../../src/entry/worker.ts';

type AnyErrorClass = new (...args: never[]) => Error;

/** One instance of each exported error, built with realistic arguments. */
const samples: Record<string, () => Error> = {
  SettingsError: () => new hookrelay.SettingsError(['REDIS_URL'], 'bad'),
  EnvHookConfigError: () => new hookrelay.EnvHookConfigError(['AGENT_HOOK_WEBHOOK_URL'], 'bad'),
  RemoteInterceptorError: () => new hookrelay.RemoteInterceptorError('x'),
  DeliveryConfigError: () => new hookrelay.DeliveryConfigError('x'),
  SsrfBlockedError: () => new hookrelay.SsrfBlockedError('169.254.169.254'),
  AllowedCidrsError: () => new hookrelay.AllowedCidrsError('banana'),
  HostErrorFailure: () => new hookrelay.HostErrorFailure('host_error:interceptor_failed' as never, 'x'),
  InterceptionBlocked: () =>
    new hookrelay.InterceptionBlocked(
      { interception_point: 'pre_tool_call', verdict: { decision: 'deny', reason: 'policy' } } as never,
      { decision: 'deny' } as never,
    ),
  WorkerPluginError: () => new hookrelay.WorkerPluginError('x'),
  AgentHooksInstallError: () => new hookrelay.AgentHooksInstallError('x'),
  AgentRunStateError: () => new hookrelay.AgentRunStateError('x'),
  IdempotencyConflictError: () => new hookrelay.IdempotencyConflictError('op', 'audit', 'req-42'),
  OperationIdMismatchError: () => new hookrelay.OperationIdMismatchError('op', 'other'),
  ToolError: () => new hookrelay.ToolError({ code: 'not_found' }),
  TemplateEnvPatternError: () => new hookrelay.TemplateEnvPatternError('x'),
  HookConfigError: () => new hookrelay.HookConfigError('h1', 0, [{ path: 'url', message: 'bad' }]),
  EventValidationError: () => new hookrelay.EventValidationError('event must be an object'),
  PayloadTooLargeError: () => new hookrelay.PayloadTooLargeError(10, 5),
  RedisUnavailableError: () => new hookrelay.RedisUnavailableError('x'),
  StorageError: () => new hookrelay.StorageError('insert deliveries', '22P05', 'unsupported Unicode escape sequence'),
  OutcomeNotStoredError: () => new hookrelay.OutcomeNotStoredError('dlv_1', '22P05'),
  DeferredContextError: () => new hookrelay.DeferredContextError('x'),
  DeferredCancelledError: () => new hookrelay.DeferredCancelledError('x'),
  ApprovalNotClaimedError: () => new hookrelay.ApprovalNotClaimedError('x'),
  CriticalHookDeliveryError: () => new hookrelay.CriticalHookDeliveryError([{ hookId: 'audit', cause: new hookrelay.WebhookDeliveryFailure('timeout') }]),
  WebhookDeliveryFailure: () => new hookrelay.WebhookDeliveryFailure('timeout'),
  ToolCallContextError: () => new hookrelay.ToolCallContextError(['toolCallId'], 'missing'),
  PlaceholderNotFoundError: () => new hookrelay.PlaceholderNotFoundError('op', 'tc'),
  EmbeddedStoreUnavailableError: () => new hookrelay.EmbeddedStoreUnavailableError('x'),
};

function exportedErrorClasses(entry: Record<string, unknown>): [string, AnyErrorClass][] {
  return Object.entries(entry).filter(
    (e): e is [string, AnyErrorClass] =>
      typeof e[1] === 'function' && e[1] !== hookrelay.HookrelayError && (e[1] as { prototype?: unknown }).prototype instanceof Error,
  );
}

describe('errors users can catch: HookrelayError with a stable code', () => {
  const classes = exportedErrorClasses(hookrelay);

  it('every error class the root entry exports has a sample here (so none escapes the checks below)', () => {
    expect(classes.map(([name]) => name).sort()).toEqual(Object.keys(samples).sort());
  });

  it.each(Object.keys(samples))('%s is a HookrelayError with a HOOKRELAY_* code and its own name', (name) => {
    const error = samples[name]!();
    expect(error).toBeInstanceOf(hookrelay.HookrelayError);
    expect(hookrelay.isHookrelayError(error)).toBe(true);
    expect(error).toBeInstanceOf((hookrelay as unknown as Record<string, AnyErrorClass>)[name]!);
    expect((error as { code?: unknown }).code).toMatch(/^HOOKRELAY_[A-Z_]+$/);
    expect(error.name).toBe(name);
  });

  it('codes are unique per class', () => {
    const codes = Object.values(samples).map((make) => (make() as unknown as { code: string }).code);
    expect(new Set(codes).size).toBe(codes.length);
  });

  it('D10: EventValidationError stays a TypeError while counting as a HookrelayError', () => {
    const error = new hookrelay.EventValidationError('bad');
    expect(error).toBeInstanceOf(TypeError);
    expect(error).toBeInstanceOf(hookrelay.HookrelayError);
  });

  it('a subclass check stays a prototype check: one hookrelay error is not another', () => {
    expect(new hookrelay.DeliveryConfigError('x')).not.toBeInstanceOf(hookrelay.SettingsError);
    expect(new hookrelay.EventValidationError('x')).not.toBeInstanceOf(hookrelay.HookConfigError);
    expect(new Error('plain')).not.toBeInstanceOf(hookrelay.HookrelayError);
    expect(new TypeError('plain')).not.toBeInstanceOf(hookrelay.HookrelayError);
    expect(hookrelay.isHookrelayError({ code: 'HOOKRELAY_FAKE' })).toBe(false);
  });

  it('the layer entries export only HookrelayError subclasses as errors', () => {
    for (const entry of [queueEntry, storeEntry, workerEntry] as Record<string, unknown>[]) {
      for (const [name, Cls] of exportedErrorClasses(entry)) {
        expect(samples[name], `${name} is exported by a layer entry but not by hookrelay`).toBeDefined();
        expect(Cls.prototype instanceof hookrelay.HookrelayError || name === 'EventValidationError').toBe(true);
      }
    }
  });
});
