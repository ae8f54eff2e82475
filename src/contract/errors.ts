/**
 * Every error class of hookrelay, in one file (as undici's errors.js): a class keeps its name,
 * `code`, message and fields here whichever folder throws it. Each subclass of HookrelayError has
 * a stable `code` (`HOOKRELAY_*`, as undici's `UND_ERR_*`): branch on `code`, not on the message,
 * which may be reworded. Each class also has its own brand, `Symbol.for('hookrelay.error.<code>')`
 * on its prototype, that its `instanceof` checks: an error thrown by a second copy of the package
 * (two installs, a bundled copy) is still `instanceof` its class, its parents and HookrelayError.
 *
 * Only contract/ types are imported (this is the bottom layer every folder may import): the light
 * entry loads no BullMQ or pg through its errors.
 */
import type { z } from 'zod';
import type { HostErrorReason, InterceptionRecord, JsonValue, Verdict } from './agentHooks.ts';
import type { ApprovalStatus, PendingApproval } from './approval.ts';
import { describeTemplateEnvProblem, TEMPLATE_ENV_VARIABLE, type TemplateEnvProblem } from './templateEnvProblem.ts';

/** The base brand, under the key earlier versions of the package check too. */
const HOOKRELAY_ERROR: unique symbol = Symbol.for('hookrelay.error');

type ErrorClass = abstract new (...args: never[]) => Error;

function carries(value: unknown, mark: symbol): boolean {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[mark] === true;
}

/**
 * Gives `cls` its own brand: `Symbol.for('hookrelay.error.<key>')` on its prototype (so its
 * instances and its subclasses' carry it) and a `Symbol.hasInstance` checking it. `key` is the
 * class's code, or its name when it has none or two. A subclass declared outside this file has
 * no brand of its own: its `instanceof` stays the prototype check.
 */
function brand(cls: ErrorClass, key: string | typeof HOOKRELAY_ERROR): void {
  const mark = typeof key === 'string' ? Symbol.for(`hookrelay.error.${key}`) : key;
  Object.defineProperty(cls.prototype, mark, { value: true });
  Object.defineProperty(cls, Symbol.hasInstance, {
    value(this: unknown, value: unknown): boolean {
      return this === cls ? carries(value, mark) : Function.prototype[Symbol.hasInstance].call(this, value);
    },
  });
}

export type HookrelayErrorCode = `HOOKRELAY_${string}`;

/**
 * The base of every error hookrelay throws on purpose. `error instanceof HookrelayError` is also
 * true for the few that must stay a built-in subclass for compatibility (EventValidationError is
 * a TypeError): they carry its brand too.
 */
export abstract class HookrelayError extends Error {
  static {
    brand(this, HOOKRELAY_ERROR);
  }
  abstract readonly code: HookrelayErrorCode;
}

/** Marks a class of another built-in base (TypeError) as hookrelay's: `instanceof HookrelayError` holds for its instances. */
function brandAsHookrelayError(cls: ErrorClass): void {
  Object.defineProperty(cls.prototype, HOOKRELAY_ERROR, { value: true });
}

/** True for any hookrelay error (same as `instanceof HookrelayError`). */
export function isHookrelayError(value: unknown): value is Error & { code: HookrelayErrorCode } {
  return value instanceof HookrelayError;
}

// ─── the data contract: configuration, events, operations, delivery (the root entry) ───

export type ConfigIssue = { path: string; message: string };

function formatPath(path: readonly PropertyKey[]): string {
  return path
    .map((p) => (typeof p === 'number' ? `[${p}]` : String(p)))
    .join('.')
    .replace(/\.\[/g, '[');
}

/**
 * A hook configuration was rejected (D4a). The message names the hook id and every failing
 * field path; it never contains header values, so a secret cannot leak through it.
 */
export class HookConfigError extends HookrelayError {
  static {
    brand(this, 'HOOKRELAY_HOOK_CONFIG_INVALID');
  }
  readonly code = 'HOOKRELAY_HOOK_CONFIG_INVALID' as const;
  override readonly name = 'HookConfigError';
  readonly hookId: string | undefined;
  readonly index: number | undefined;
  readonly issues: ConfigIssue[];

  constructor(hookId: string | undefined, index: number | undefined, issues: ConfigIssue[]) {
    const who = hookId !== undefined ? `hook "${hookId}"` : `hook at index ${index ?? '?'}`;
    super(`Invalid ${who}: ${issues.map((i) => `${i.path || '(root)'}: ${i.message}`).join('; ')}`);
    this.hookId = hookId;
    this.index = index;
    this.issues = issues;
  }

  static fromZod(raw: unknown, index: number | undefined, error: z.ZodError): HookConfigError {
    const id = raw !== null && typeof raw === 'object' && typeof (raw as { id?: unknown }).id === 'string' ? (raw as { id: string }).id : undefined;
    return new HookConfigError(
      id,
      index,
      error.issues.map((i) => ({ path: formatPath(i.path), message: i.message })),
    );
  }
}

/**
 * D10: an event that cannot be accepted (not an object, a bad index, nested too deep to
 * serialize). A TypeError, as the other bad-input errors of dispatch and enqueue; the message
 * names the field or the rule, never a value.
 */
export class EventValidationError extends TypeError {
  static {
    brand(this, 'HOOKRELAY_EVENT_INVALID');
    brandAsHookrelayError(this);
  }
  override readonly name = 'EventValidationError';
  readonly code = 'HOOKRELAY_EVENT_INVALID' as const;
  readonly errorClass = 'invalid_event' as const;

  constructor(message: string) {
    super(message);
  }
}

/**
 * D10: a tool-call method was given an event (or tool context) whose `operationId` differs from
 * the operation id of its first argument. An event without `operationId` takes the argument's
 * (as LobeHub's dispatcher does); two different ids are a caller bug, never guessed between.
 * A TypeError, as the other bad-input errors of dispatch; the message names both ids.
 */
export class OperationIdMismatchError extends TypeError {
  static {
    brand(this, 'HOOKRELAY_OPERATION_ID_MISMATCH');
    brandAsHookrelayError(this);
  }
  override readonly name = 'OperationIdMismatchError';
  readonly code = 'HOOKRELAY_OPERATION_ID_MISMATCH' as const;
  readonly operationId: string;
  readonly eventOperationId: unknown;

  constructor(operationId: string, eventOperationId: unknown) {
    super(
      `event.operationId ${typeof eventOperationId === 'string' ? JSON.stringify(eventOperationId.slice(0, 200)) : `(a ${eventOperationId === null ? 'null' : typeof eventOperationId})`} does not match the operation id ${JSON.stringify(operationId.slice(0, 200))} passed as the first argument`,
    );
    this.operationId = operationId;
    this.eventOperationId = eventOperationId;
  }
}

/**
 * N1: a tenant that is not a bounded token. A TypeError (as the other bad-input errors of
 * register and enqueue); the message names the field and the rule, never the value.
 */
export class TenantError extends TypeError {
  static {
    brand(this, 'HOOKRELAY_TENANT_INVALID');
    brandAsHookrelayError(this);
  }
  override readonly name = 'TenantError';
  readonly code = 'HOOKRELAY_TENANT_INVALID' as const;
  readonly field: string;

  constructor(field: string) {
    super(`${field} must be 1–128 characters of A-Z a-z 0-9 . _ : - (N1)`);
    this.field = field;
  }
}

/**
 * N1: an operation registered (or stored) under one tenant was used with another: a caller bug,
 * never guessed between (the operation keeps the tenant it has).
 */
export class TenantMismatchError extends TypeError {
  static {
    brand(this, 'HOOKRELAY_TENANT_MISMATCH');
    brandAsHookrelayError(this);
  }
  override readonly name = 'TenantMismatchError';
  readonly code = 'HOOKRELAY_TENANT_MISMATCH' as const;
  readonly operationId: string;

  constructor(operationId: string, registered: string, given: string) {
    super(
      `operation ${JSON.stringify(operationId.slice(0, 200))} belongs to tenant ${JSON.stringify(registered)}; it was used with tenant ${JSON.stringify(given)} (N1)`,
    );
    this.operationId = operationId;
  }
}

/** One critical failure of a tier: the hook and its sanitized cause. */
export type CriticalFailure = { hookId: string; cause: unknown };

/**
 * D6: webhooks with `fallback: 'none'` that failed, thrown after the rest of the tier ran. Names
 * the first failing hook and lists every critical failure of the tier. Fatal in the worker (Q4).
 * Never replaced by another error of the same call (an invalid environment-hook configuration,
 * say): such errors travel with it in `otherErrors`, so a caller that stops on this class stops.
 */
export class CriticalHookDeliveryError extends HookrelayError {
  static {
    brand(this, 'HOOKRELAY_CRITICAL_DELIVERY_FAILED');
  }
  readonly code = 'HOOKRELAY_CRITICAL_DELIVERY_FAILED' as const;
  override readonly name = 'CriticalHookDeliveryError';
  readonly hookId: string;
  override readonly cause: unknown;
  readonly failures: CriticalFailure[];
  /** D6: the call's other errors (not critical failures), thrown together with them; `[]` when none. */
  readonly otherErrors: unknown[];

  constructor(failures: CriticalFailure[], otherErrors: readonly unknown[] = []) {
    const first = failures[0];
    if (!first) throw new TypeError('CriticalHookDeliveryError needs at least one failure');
    const more =
      failures.length > 1
        ? ` (+${failures.length - 1} more: ${failures
            .slice(1)
            .map((f) => f.hookId)
            .join(', ')})`
        : '';
    // Names only (an error's class), never its message: the failures' causes are not shown here either.
    const also = otherErrors.length > 0 ? `; also failed: ${otherErrors.map(errorName).join(', ')} (see otherErrors)` : '';
    super(`Critical webhook delivery failed: ${first.hookId}${more}${also}`);
    this.hookId = first.hookId;
    this.cause = first.cause;
    this.failures = failures;
    this.otherErrors = [...otherErrors];
  }
}

function errorName(error: unknown): string {
  return error instanceof Error ? error.name : typeof error;
}

/**
 * F1: why an event was not accepted. `spool_off` / `spool_full` / `spool_unwritable`: Postgres
 * could not take it and neither could the local spool (off, at its bound, not writable);
 * `idempotency_key`: Postgres could not take it and a keyed event is never spooled (its key needs
 * the ledger: retry with the same key); `refused`: the producer refused it (dispatch only: a hook
 * config, the event itself — the `cause` says which).
 */
export type NotAcceptedReason = 'spool_off' | 'spool_full' | 'spool_unwritable' | 'idempotency_key' | 'refused';

/** F1: a hook whose delivery of an event was not accepted (neither stored nor spooled), and why (`dispatch`'s report). */
export type NotAcceptedDelivery = { hookId: string; error: unknown };

/**
 * F1: what one `dispatch` (or `completeOperation`) could not hand on. Queue mode: the hooks whose
 * delivery of the event was neither stored in the ledger nor written to the producer's spool —
 * lost unless you act (keep the event, retry later); `[]` when every delivery was accepted, and
 * always in local mode, which sends inline. `fallback: 'none'` hooks are not listed: they throw
 * CriticalHookDeliveryError (D6).
 */
export type DispatchReport = { notAccepted: NotAcceptedDelivery[] };

const NOT_ACCEPTED_WHY: Record<NotAcceptedReason, string> = {
  spool_off: 'the ledger store (Postgres at DATABASE_URL) could not take it and the local spool is off (HOOKRELAY_SPOOL_MAX_BYTES=0 or spool: false)',
  spool_full: 'the ledger store (Postgres at DATABASE_URL) could not take it and the local spool is full (HOOKRELAY_SPOOL_MAX_BYTES)',
  spool_unwritable: 'the ledger store (Postgres at DATABASE_URL) could not take it and the local spool could not be written (HOOKRELAY_DATA_DIR)',
  idempotency_key:
    'the ledger store (Postgres at DATABASE_URL) could not take it, and an event with an idempotencyKey is not spooled: retry with the same key once it answers',
  refused: 'the producer refused it',
};

/**
 * F1: an event was not accepted — nothing of it is in the ledger or in the local spool: it is
 * yours to keep or retry. `enqueue` throws it; a queue-mode `dispatch` reports it per hook
 * (`notAccepted`), or throws it with `onNotAccepted: 'throw'`. `cause` is what refused it (a
 * StoreUnavailableError naming the store, a HookConfigError…).
 */
export class EventNotAcceptedError extends HookrelayError {
  static {
    brand(this, 'HOOKRELAY_EVENT_NOT_ACCEPTED');
  }
  readonly code = 'HOOKRELAY_EVENT_NOT_ACCEPTED' as const;
  override readonly name = 'EventNotAcceptedError';
  readonly reason: NotAcceptedReason;
  /** The hooks whose deliveries of this event were not accepted. */
  readonly hookIds: string[];
  override readonly cause: unknown;

  constructor(input: { reason: NotAcceptedReason; hookIds: readonly string[]; cause?: unknown; detail?: string | undefined }) {
    const cause = input.cause instanceof Error ? ` (${input.cause.name}: ${input.cause.message})` : '';
    super(`event not accepted: ${NOT_ACCEPTED_WHY[input.reason]}${input.detail ? `: ${input.detail}` : ''}; nothing was stored${cause}`);
    this.reason = input.reason;
    this.hookIds = [...input.hookIds];
    this.cause = input.cause;
  }
}

/**
 * A sanitized delivery failure used as a critical cause: classes and statuses, never remote text.
 * `name` stays `'WebhookDeliveryFailure'`: a critical failure's logged and reported cause shows it.
 */
export class WebhookDeliveryError extends HookrelayError {
  static {
    brand(this, 'HOOKRELAY_WEBHOOK_DELIVERY_FAILED');
  }
  readonly code = 'HOOKRELAY_WEBHOOK_DELIVERY_FAILED' as const;
  override readonly name = 'WebhookDeliveryFailure';
  constructor(
    readonly errorClass: string,
    readonly httpStatus?: number,
  ) {
    super(httpStatus !== undefined ? `${errorClass}: HTTP ${httpStatus}` : errorClass);
  }
}

/**
 * @deprecated use `WebhookDeliveryError` (the same class; kept so existing `instanceof` checks work).
 * @alias
 */
export const WebhookDeliveryFailure = WebhookDeliveryError;
/** @deprecated use `WebhookDeliveryError`. */
export type WebhookDeliveryFailure = WebhookDeliveryError;

/**
 * A statement the store refused or could not run, with the Postgres SQLSTATE and primary message
 * only (storageError.ts builds it from a driver error: drizzle's own carries every parameter of
 * the statement, so it is never returned to a caller or logged).
 */
export class StorageError extends HookrelayError {
  static {
    brand(this, 'HOOKRELAY_STORAGE_ERROR');
  }
  readonly code = 'HOOKRELAY_STORAGE_ERROR' as const;
  override readonly name = 'StorageError';
  /** The Postgres SQLSTATE (e.g. `22P05`), or the driver's error code (`ECONNREFUSED`), when known. */
  readonly sqlState: string | undefined;

  constructor(operation: string, sqlState: string | undefined, reason: string) {
    super(`${operation} failed${sqlState ? ` (${sqlState})` : ''}: ${reason}`);
    this.sqlState = sqlState;
  }
}

/** An invalid HOOKRELAY_TEMPLATE_ENV: names the variable and the position of the entry at fault (never its text). */
export class TemplateEnvPatternError extends HookrelayError {
  static {
    brand(this, 'HOOKRELAY_TEMPLATE_ENV_INVALID');
  }
  readonly code = 'HOOKRELAY_TEMPLATE_ENV_INVALID' as const;
  override readonly name = 'TemplateEnvPatternError';
  readonly variables = [TEMPLATE_ENV_VARIABLE];
  /** The rule broken (absent only when built from a message alone). */
  readonly problem: TemplateEnvProblem | undefined;

  constructor(problem: TemplateEnvProblem | string) {
    super(typeof problem === 'string' ? problem : `${TEMPLATE_ENV_VARIABLE}: ${describeTemplateEnvProblem(problem)}`);
    this.problem = typeof problem === 'string' ? undefined : problem;
  }
}

// ─── config/: settings and environment hooks, each naming the variables at fault, never their values ───

export class SettingsError extends HookrelayError {
  static {
    brand(this, 'HOOKRELAY_SETTINGS_INVALID');
  }
  readonly code = 'HOOKRELAY_SETTINGS_INVALID' as const;
  override readonly name = 'SettingsError';
  constructor(
    readonly variables: string[],
    message: string,
  ) {
    super(message);
  }
}

/** E2: names the variables at fault, never their values. */
export class EnvHookConfigError extends HookrelayError {
  static {
    brand(this, 'HOOKRELAY_ENV_HOOK_CONFIG_INVALID');
  }
  readonly code = 'HOOKRELAY_ENV_HOOK_CONFIG_INVALID' as const;
  override readonly name = 'EnvHookConfigError';
  constructor(
    readonly variables: string[],
    problem: string,
  ) {
    super(`Invalid environment hook configuration (${variables.join(', ')}): ${problem}`);
  }
}

// ─── intercept/: the AGENT-HOOKS-0.1 core ───

/**
 * Thrown by `emit()` when the combined verdict blocks the guarded action.
 * `record` is the payload-free record; `verdict` is the full combined verdict,
 * available in-process only. `name` stays `'InterceptionBlocked'`: it reaches receivers
 * as an `onError` event's `errorType`.
 */
export class InterceptionBlockedError extends HookrelayError {
  static {
    brand(this, 'HOOKRELAY_INTERCEPTION_BLOCKED');
  }
  /** `HOOKRELAY_APPROVAL_PENDING` on its `ApprovalPendingError` subclass. */
  readonly code: 'HOOKRELAY_INTERCEPTION_BLOCKED' | 'HOOKRELAY_APPROVAL_PENDING' = 'HOOKRELAY_INTERCEPTION_BLOCKED';
  readonly record: InterceptionRecord;
  readonly verdict: Verdict;
  override readonly name: 'InterceptionBlocked' | 'ApprovalPendingError' = 'InterceptionBlocked';

  constructor(record: InterceptionRecord, verdict: Verdict) {
    super(`${record.interception_point} blocked: ${record.verdict.decision} (${record.verdict.reason ?? 'no reason'})`);
    this.record = record;
    this.verdict = verdict;
  }
}

/**
 * The call is denied because an approval is pending: the resolver (an approval queue) left a
 * durable request for an approver (A1) and answered `unresolved`, so the deny stands
 * (`host_error:approval_unresolved`). The run ends "approval pending"; once an approver decided,
 * run it again: the identical call gets the decision, once (A2). `approval` names the request.
 */
export class ApprovalPendingError extends InterceptionBlockedError {
  static {
    brand(this, 'HOOKRELAY_APPROVAL_PENDING');
  }
  override readonly code = 'HOOKRELAY_APPROVAL_PENDING' as const;
  readonly approval: PendingApproval;
  override readonly name = 'ApprovalPendingError';

  constructor(record: InterceptionRecord, verdict: Verdict, approval: PendingApproval) {
    super(record, verdict);
    this.message = `${record.interception_point} waits for approval ${approval.id} (until ${approval.expiresAt})`;
    this.approval = approval;
  }
}

/**
 * @deprecated use `InterceptionBlockedError` (the same class; kept so existing `instanceof` checks work).
 * @alias
 */
export const InterceptionBlocked = InterceptionBlockedError;
/** @deprecated use `InterceptionBlockedError`. */
export type InterceptionBlocked = InterceptionBlockedError;

/**
 * An AGENT-HOOKS-0.1 installation that would weaken the enforcement boundary: a second bundle on
 * one dispatcher or one session, a nested agent reusing its parent's bundle (one
 * bundle per agent, stacked bundles are refused; a nested agent gets its own), or a dispatcher
 * emitter without the run adapter and without `interceptionPoints: 'tool-seam'` (`missing`
 * names the points it would never emit).
 */
export class AgentHooksInstallError extends HookrelayError {
  static {
    brand(this, 'HOOKRELAY_AGENT_HOOKS_INSTALL');
  }
  readonly code = 'HOOKRELAY_AGENT_HOOKS_INSTALL' as const;
  /** The interception points the refused installation would never emit (empty when that is not the problem). */
  readonly missing: readonly string[];
  override readonly name = 'AgentHooksInstallError';
  constructor(message: string, details: { missing?: readonly string[] } = {}) {
    super(message);
    this.missing = [...(details.missing ?? [])];
  }
}

/** A run used out of order: after `end()`, `output()` twice, a second active run of one session. */
export class AgentRunStateError extends HookrelayError {
  static {
    brand(this, 'HOOKRELAY_AGENT_RUN_STATE');
  }
  readonly code = 'HOOKRELAY_AGENT_RUN_STATE' as const;
  override readonly name = 'AgentRunStateError';
  constructor(message: string) {
    super(message);
  }
}

/**
 * Thrown by a tool executor to fail with a structured result: `post_tool_call` sees
 * `tool_result.value` = `result` and `is_error: true` (any other throw gives its message).
 */
export class ToolError extends HookrelayError {
  static {
    brand(this, 'HOOKRELAY_TOOL_FAILED');
  }
  readonly code = 'HOOKRELAY_TOOL_FAILED' as const;
  readonly result: unknown;
  override readonly name = 'ToolError';
  constructor(result: unknown, message = 'tool failed') {
    super(message);
    this.result = result;
  }
}

/**
 * A failure that maps to one reserved reason; `detail` names a path or constraint, never a value.
 * `name` stays `'HostErrorFailure'`: audit details quote an error's type name.
 */
export class HostFailureError extends HookrelayError {
  static {
    brand(this, 'HOOKRELAY_HOST_ERROR');
  }
  readonly code = 'HOOKRELAY_HOST_ERROR' as const;
  readonly reason: HostErrorReason;
  readonly detail: string;
  override readonly name = 'HostErrorFailure';
  constructor(reason: HostErrorReason, detail: string) {
    super(`${reason}: ${detail}`);
    this.reason = reason;
    this.detail = detail;
  }
}

/**
 * @deprecated use `HostFailureError` (the same class; kept so existing `instanceof` checks work).
 * @alias
 */
export const HostErrorFailure = HostFailureError;
/** @deprecated use `HostFailureError`. */
export type HostErrorFailure = HostFailureError;

/** Raised inside an emission when the caller's signal aborts; the emitter records it, then rethrows the reason. */
export class EmissionCancelledError extends HookrelayError {
  static {
    brand(this, 'HOOKRELAY_EMISSION_CANCELLED');
  }
  readonly code = 'HOOKRELAY_EMISSION_CANCELLED' as const;
  override readonly cause: unknown;
  override readonly name = 'EmissionCancelledError';
  constructor(cause: unknown) {
    super('emission cancelled');
    this.cause = cause;
  }
}

/** A value the run cannot project into a context (a cycle, nesting past any sane bound). */
export class ProjectionError extends HookrelayError {
  static {
    brand(this, 'HOOKRELAY_PROJECTION_INVALID');
  }
  readonly code = 'HOOKRELAY_PROJECTION_INVALID' as const;
  override readonly name = 'ProjectionError';
  constructor(readonly detail: string) {
    super(detail);
  }
}

/** The abort reason settleWithin (timeouts.ts) gives a callee it stopped waiting for; named TimeoutError as the platform's. */
export class InterceptionTimeoutError extends Error {
  static {
    brand(this, 'InterceptionTimeoutError');
  }
  override readonly name = 'TimeoutError';
  constructor(ms: number) {
    super(`timed out after ${ms} ms`);
  }
}

// ─── send/: one request out. Every message here is written by us: it may name a header, an
// environment variable, a host or an error code, but never a header value, a resolved secret,
// remote response text or a query string (W2). ───

/** A webhook cannot be sent as configured (bad URL, header or template): nothing was sent. */
export class DeliveryConfigError extends HookrelayError {
  static {
    brand(this, 'HOOKRELAY_DELIVERY_CONFIG_INVALID');
  }
  readonly code = 'HOOKRELAY_DELIVERY_CONFIG_INVALID' as const;
  override readonly name = 'DeliveryConfigError';
  readonly errorClass = 'configuration' as const;

  constructor(message: string) {
    super(message);
  }
}

/**
 * Q5: what an operator does about an `ssrf_blocked` failure — the refusal alone never
 * said that a receiver on a private network is allowed by naming its range.
 */
export const SSRF_BLOCKED_HINT =
  'a private, loopback, link-local or other reserved address; to deliver to a receiver there, add its range to HOOKRELAY_ALLOWED_CIDRS (e.g. 127.0.0.1/32 or 10.0.0.0/8) where the request is sent from (the worker, or the server app for decisions and local mode)';

/** Q5: the destination resolves to (or is) an address the SSRF guard refuses. */
export class SsrfBlockedError extends HookrelayError {
  static {
    brand(this, 'HOOKRELAY_SSRF_BLOCKED');
  }
  override readonly name = 'SsrfBlockedError';
  readonly errorClass = 'ssrf_blocked' as const;
  /** Lets the transport recognise the refusal after undici has passed it along. */
  readonly code = 'HOOKRELAY_SSRF_BLOCKED';

  constructor(host: string) {
    super(`destination ${JSON.stringify(host)} refused by the SSRF guard: it is or resolves to ${SSRF_BLOCKED_HINT}`);
  }
}

const RETRY_SCHEDULE_ENV = 'HOOKRELAY_RETRY_SCHEDULE';
const ALLOWED_CIDRS_ENV = 'HOOKRELAY_ALLOWED_CIDRS';

/** An entry of HOOKRELAY_RETRY_SCHEDULE that is not a non-negative number of seconds (`entry`, trimmed). */
export class RetryScheduleError extends HookrelayError {
  static {
    brand(this, 'HOOKRELAY_RETRY_SCHEDULE_INVALID');
  }
  readonly code = 'HOOKRELAY_RETRY_SCHEDULE_INVALID' as const;
  override readonly name = 'RetryScheduleError';
  readonly variables = [RETRY_SCHEDULE_ENV];

  constructor(readonly entry: string) {
    super(`${RETRY_SCHEDULE_ENV}: ${JSON.stringify(entry)} is not a non-negative number of seconds`);
  }
}

/** Why a delivery's deadline ended it (deadline.ts). */
export type DeadlineCause = 'timeout' | 'cancelled';

/** The abort reason we use, so a destroyed body says why without quoting anything remote. */
export class DeadlineAbortError extends HookrelayError {
  static {
    brand(this, 'DeadlineAbortError');
  }
  override readonly name = 'DeadlineAbortError';
  readonly code: 'HOOKRELAY_TIMEOUT' | 'HOOKRELAY_CANCELLED';

  constructor(readonly why: DeadlineCause) {
    super(why === 'timeout' ? 'delivery deadline passed' : 'delivery cancelled by the caller');
    this.code = why === 'timeout' ? 'HOOKRELAY_TIMEOUT' : 'HOOKRELAY_CANCELLED';
  }
}

/** A transport or protocol failure; the emitter maps a throw to `host_error:interceptor_failed`. */
export class RemoteInterceptorError extends HookrelayError {
  static {
    brand(this, 'HOOKRELAY_REMOTE_INTERCEPTOR_FAILED');
  }
  readonly code = 'HOOKRELAY_REMOTE_INTERCEPTOR_FAILED' as const;
  override readonly name = 'RemoteInterceptorError';
}

/** An entry of HOOKRELAY_ALLOWED_CIDRS (or `allowedCidrs`) that is not an IPv4/IPv6 CIDR; a CIDR is not a secret. */
export class AllowedCidrsError extends HookrelayError {
  static {
    brand(this, 'HOOKRELAY_ALLOWED_CIDRS_INVALID');
  }
  readonly code = 'HOOKRELAY_ALLOWED_CIDRS_INVALID' as const;
  override readonly name = 'AllowedCidrsError';
  readonly variables = [ALLOWED_CIDRS_ENV];

  constructor(readonly entry: string) {
    super(`${ALLOWED_CIDRS_ENV}: ${JSON.stringify(entry)} is not an IPv4 or IPv6 CIDR (e.g. 127.0.0.1/32, fd00::/8)`);
  }
}

export function isSsrfBlockedError(error: unknown): error is SsrfBlockedError {
  return error instanceof SsrfBlockedError || (hasStringProp(error, 'code') && error.code === 'HOOKRELAY_SSRF_BLOCKED');
}

const ERROR_CODE = /^[A-Z][A-Z0-9_]{1,63}$/;

/**
 * A short, safe description of a transport failure: the error's code (e.g. `ECONNRESET`,
 * `UND_ERR_SOCKET`) or its class name — never its message, which may quote remote text.
 */
export function describeError(error: unknown): string {
  if (hasStringProp(error, 'code') && ERROR_CODE.test(error.code)) return error.code;
  if (error instanceof Error && /^[A-Za-z]{1,64}$/.test(error.name)) return error.name;
  return 'unknown_error';
}

function hasStringProp<K extends string>(value: unknown, key: K): value is Record<K, string> {
  return typeof value === 'object' && value !== null && typeof (value as Record<string, unknown>)[key] === 'string';
}

// ─── notify/: the payload builder ───

export class ToolCallContextError extends HookrelayError {
  static {
    brand(this, 'HOOKRELAY_TOOL_CALL_CONTEXT_INVALID');
  }
  readonly code = 'HOOKRELAY_TOOL_CALL_CONTEXT_INVALID' as const;
  override readonly name = 'ToolCallContextError';
  readonly fields: string[];

  constructor(fields: string[], detail: string) {
    super(`buildToolCallHookContext: ${detail}`);
    this.fields = fields;
  }
}

// ─── store/ ───

export class PlaceholderNotFoundError extends HookrelayError {
  static {
    brand(this, 'HOOKRELAY_PLACEHOLDER_NOT_FOUND');
  }
  readonly code = 'HOOKRELAY_PLACEHOLDER_NOT_FOUND' as const;
  override readonly name = 'PlaceholderNotFoundError';
  constructor(
    readonly operationId: string,
    readonly toolCallId: string,
  ) {
    super(`No deferred placeholder for operation "${operationId}" and tool call "${toolCallId}"; create it first with createPlaceholder().`);
  }
}

/** The embedded store's packages are optional peers: a missing one says what to install or set instead. */
export class EmbeddedStoreUnavailableError extends HookrelayError {
  static {
    brand(this, 'HOOKRELAY_EMBEDDED_STORE_UNAVAILABLE');
  }
  readonly code = 'HOOKRELAY_EMBEDDED_STORE_UNAVAILABLE' as const;
  override readonly name = 'EmbeddedStoreUnavailableError';
}

/**
 * W7: the data dir's `store.json` is not the current user's own (a link, another user's file, a
 * file others may write, another user's process, a socket folder others may enter). Nothing it
 * names is connected to; the message says why and what to do.
 */
export class EmbeddedStoreUntrustedError extends HookrelayError {
  static {
    brand(this, 'HOOKRELAY_EMBEDDED_STORE_UNTRUSTED');
  }
  readonly code = 'HOOKRELAY_EMBEDDED_STORE_UNTRUSTED' as const;
  override readonly name = 'EmbeddedStoreUntrustedError';
}

/**
 * A command that only reads (the CLI, the console) found no store: no DATABASE_URL, no running
 * `hookrelay start` serving the data dir, and no embedded folder there. It creates none (an
 * empty new ledger would answer as if nothing had happened); the message says where it looked.
 */
export class StoreNotFoundError extends HookrelayError {
  static {
    brand(this, 'HOOKRELAY_STORE_NOT_FOUND');
  }
  readonly code = 'HOOKRELAY_STORE_NOT_FOUND' as const;
  override readonly name = 'StoreNotFoundError';
}

/**
 * Q13: Postgres (the ledger store) did not answer — refused, dropped or too slow. Names the store
 * and the variable that points at it, and says what happened to the caller's work.
 */
export class StoreUnavailableError extends HookrelayError {
  static {
    brand(this, 'HOOKRELAY_STORE_UNAVAILABLE');
  }
  readonly code = 'HOOKRELAY_STORE_UNAVAILABLE' as const;
  override readonly name = 'StoreUnavailableError';
}

/** The text fields of a delivery filter (deliveryFilterInput.ts `FilterFields`), as a FilterInputError names them. */
export type FilterField = 'status' | 'operation' | 'hook' | 'event' | 'endpoint' | 'tenant' | 'since' | 'until';

/**
 * A delivery filter field the ledger cannot use; `field` and `value` say which (absent when an
 * edge refused the text before parsing). Its message names the field as the caller spelled it.
 */
export class FilterInputError extends HookrelayError {
  static {
    brand(this, 'HOOKRELAY_FILTER_INVALID');
  }
  readonly code = 'HOOKRELAY_FILTER_INVALID' as const;
  override readonly name = 'FilterInputError';
  readonly field: FilterField | undefined;
  readonly value: string | undefined;

  constructor(message: string, fields: { field?: FilterField; value?: string } = {}) {
    super(message);
    this.field = fields.field;
    this.value = fields.value;
  }
}

// ─── queue/ ───

export class RedisUnavailableError extends HookrelayError {
  static {
    brand(this, 'HOOKRELAY_REDIS_UNAVAILABLE');
  }
  readonly code = 'HOOKRELAY_REDIS_UNAVAILABLE' as const;
  override readonly name = 'RedisUnavailableError';
}

/**
 * An attempt's outcome could not be written to the ledger even alone (Postgres refused its data).
 * The delivery is recorded as `failed` with error class `outcome_unwritable` instead, so it is
 * never re-sent; the job ends with this error.
 */
export class OutcomeNotStoredError extends HookrelayError {
  static {
    brand(this, 'HOOKRELAY_OUTCOME_NOT_STORED');
  }
  readonly code = 'HOOKRELAY_OUTCOME_NOT_STORED' as const;
  override readonly name = 'OutcomeNotStoredError';
  constructor(
    readonly deliveryId: string,
    readonly sqlState: string | undefined,
  ) {
    super(
      `the outcome of an attempt of delivery ${deliveryId} could not be stored${sqlState ? ` (${sqlState})` : ''}; the delivery is recorded as failed (outcome_unwritable)`,
    );
  }
}

/**
 * Q1a: an `idempotencyKey` already stored a delivery for this operation and hook, for a different
 * event or hook config. Nothing of the call was stored, and nothing of the earlier delivery is
 * returned: a key names one event of one operation; use a new key for a new event.
 */
export class IdempotencyConflictError extends HookrelayError {
  static {
    brand(this, 'HOOKRELAY_IDEMPOTENCY_CONFLICT');
  }
  readonly code = 'HOOKRELAY_IDEMPOTENCY_CONFLICT' as const;
  override readonly name = 'IdempotencyConflictError';
  constructor(
    readonly operationId: string,
    readonly hookId: string,
    readonly idempotencyKey: string,
  ) {
    super(
      `enqueue: idempotencyKey ${JSON.stringify(idempotencyKey.slice(0, 200))} was already used in operation ${JSON.stringify(operationId.slice(0, 200))} for hook ${JSON.stringify(hookId.slice(0, 200))} with a different event or hook config; nothing was stored (use a new key for a different event)`,
    );
  }
}

/**
 * F1 (internal: the producer turns it into an EventNotAcceptedError with its reason): a call the
 * local spool could not take — at its bound, or its folder not writable. Nothing of it was written.
 */
export class SpoolWriteError extends HookrelayError {
  static {
    brand(this, 'HOOKRELAY_SPOOL_WRITE_FAILED');
  }
  readonly code = 'HOOKRELAY_SPOOL_WRITE_FAILED' as const;
  override readonly name = 'SpoolWriteError';
  constructor(
    readonly reason: 'spool_full' | 'spool_unwritable',
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

const MAX_PAYLOAD_BYTES_ENV = 'HOOKRELAY_MAX_PAYLOAD_BYTES';

/** Q8: an event over the payload cap (payloadCap.ts), refused at enqueue before anything is stored. */
export class PayloadTooLargeError extends HookrelayError {
  static {
    brand(this, 'HOOKRELAY_PAYLOAD_TOO_LARGE');
  }
  readonly code = 'HOOKRELAY_PAYLOAD_TOO_LARGE' as const;
  override readonly name = 'PayloadTooLargeError';
  readonly errorClass = 'payload_too_large' as const;
  constructor(
    readonly sizeBytes: number,
    readonly capBytes: number,
  ) {
    super(`event payload is ${sizeBytes} bytes, over the cap of ${capBytes} bytes (${MAX_PAYLOAD_BYTES_ENV}); nothing was stored`);
  }
}

// ─── operations/: the operation store ───

/** The call cannot be rebuilt while an afterToolCall control exists: fail closed (nothing written). */
export class DeferredContextError extends HookrelayError {
  static {
    brand(this, 'HOOKRELAY_DEFERRED_CONTEXT_INVALID');
  }
  readonly code = 'HOOKRELAY_DEFERRED_CONTEXT_INVALID' as const;
  override readonly name = 'DeferredContextError';
}
/** The control was cancelled: nothing was written; the callback should be retried. */
export class DeferredCancelledError extends HookrelayError {
  static {
    brand(this, 'HOOKRELAY_DEFERRED_CANCELLED');
  }
  readonly code = 'HOOKRELAY_DEFERRED_CANCELLED' as const;
  override readonly name = 'DeferredCancelledError';
}
export class ApprovalNotClaimedError extends HookrelayError {
  static {
    brand(this, 'HOOKRELAY_APPROVAL_NOT_CLAIMED');
  }
  readonly code = 'HOOKRELAY_APPROVAL_NOT_CLAIMED' as const;
  override readonly name = 'ApprovalNotClaimedError';
}

// ─── approvals/: the approval queue (A1–A3); the messages say what to do ───

/** No approval with this id (or not one of this tenant's: a tenant never learns another's ids exist). */
export class ApprovalNotFoundError extends HookrelayError {
  static {
    brand(this, 'HOOKRELAY_APPROVAL_NOT_FOUND');
  }
  readonly code = 'HOOKRELAY_APPROVAL_NOT_FOUND' as const;
  override readonly name = 'ApprovalNotFoundError';
  constructor(readonly approvalId: string) {
    super(`no approval ${approvalId}: list them with \`hookrelay approvals list\``);
  }
}

/** The approval is no longer pending: it was decided, expired or cancelled; nothing changed. */
export class ApprovalNotPendingError extends HookrelayError {
  static {
    brand(this, 'HOOKRELAY_APPROVAL_NOT_PENDING');
  }
  readonly code = 'HOOKRELAY_APPROVAL_NOT_PENDING' as const;
  override readonly name = 'ApprovalNotPendingError';
  constructor(
    readonly approvalId: string,
    readonly status: ApprovalStatus,
    detail: string,
  ) {
    super(`approval ${approvalId} is ${status}${detail}: nothing changed (a decision is made once)`);
  }
}

/** An answer token that is malformed, forged, expired or already used; nothing changed. */
export class ApprovalTokenError extends HookrelayError {
  static {
    brand(this, 'HOOKRELAY_APPROVAL_TOKEN_INVALID');
  }
  readonly code = 'HOOKRELAY_APPROVAL_TOKEN_INVALID' as const;
  override readonly name = 'ApprovalTokenError';
}

// ─── integrations/: framework tools ───

/**
 * A framework tool whose call a `pre_tool_call` or `post_tool_call` policy denied: thrown from the
 * wrapped `execute`, it becomes the error result the model sees. The message is the JSON of
 * `content` (`{ error, reason, message? }`), never the blocked arguments or result.
 */
export class ToolCallDeniedError extends HookrelayError {
  static {
    brand(this, 'HOOKRELAY_TOOL_CALL_DENIED');
  }
  readonly code = 'HOOKRELAY_TOOL_CALL_DENIED' as const;
  /** The verdict's reason (`policy.*`, or a `host_error:*` under `toolSeamHostError: 'continue'`). */
  readonly reason: string;
  /** What the model is given instead of the tool's result. */
  readonly content: JsonValue;
  override readonly name = 'ToolCallDeniedError';
  constructor(message: string, content: JsonValue, reason: string) {
    super(message);
    this.content = content;
    this.reason = reason;
  }

  /** Frameworks show a tool's error to the model as `String(error)`: the model gets the content alone. */
  override toString(): string {
    return this.message;
  }
}

/**
 * Something hookrelay cannot put through `pre_tool_call` / `post_tool_call` was refused so that
 * nothing runs unjudged: a tool on an agent an Agents SDK run reaches (a hosted tool the provider
 * runs, a hosted shell, the computer tool, an agent tool it cannot rebuild), an MCP request whose
 * method the guard does not know (it might run a tool or return a tool's output), a model call
 * offering a tool whose `execute` hookrelay does not wrap. `remedy` says how to let it through
 * knowingly.
 */
export class UninterceptedToolError extends HookrelayError {
  static {
    brand(this, 'HOOKRELAY_TOOL_NOT_INTERCEPTED');
  }
  readonly code = 'HOOKRELAY_TOOL_NOT_INTERCEPTED' as const;
  /** The agent (or `mcp`, `ai-sdk`) that carries the tool. */
  readonly agent: string;
  /** The tool's name (what `allowUninterceptedTools` takes), or the MCP method. */
  readonly tool: string;
  /** The tool's kind: `hosted_tool`, `computer`, `shell` (a hosted shell), `agent_tool`, `mcp_method`, `mcp_task`, `model`, `function`, `ungoverned_turn` (a prepared agent the SDK runs outside a hookrelay run). */
  readonly kind: string;
  override readonly name = 'UninterceptedToolError';
  constructor(agent: string, tool: string, kind: string, remedy?: string) {
    const subject =
      agent === 'mcp'
        ? `the MCP ${kind === 'mcp_task' ? 'task result' : 'request'} "${tool}", which`
        : `agent "${agent}" has the ${kind} tool "${tool}", whose calls`;
    super(
      `${subject} hookrelay cannot intercept: ${remedy ?? `remove it, or pass allowUninterceptedTools: [${JSON.stringify(tool)}] to prepare() to run it without pre_tool_call / post_tool_call`}`,
    );
    this.agent = agent;
    this.tool = tool;
    this.kind = kind;
  }
}

// ─── admin/: what the CLI and the console share; each edge words its own message from the fields ───

/**
 * A filter replay asked for a status that cannot be replayed (usage, nothing changed). The CLI
 * and the console word it from `status` and `includeAccepted`.
 */
export class ReplayStatusError extends HookrelayError {
  static {
    brand(this, 'HOOKRELAY_REPLAY_STATUS_INVALID');
  }
  readonly code = 'HOOKRELAY_REPLAY_STATUS_INVALID' as const;
  override readonly name = 'ReplayStatusError';
  readonly status: string;
  readonly includeAccepted: boolean;

  constructor(status: string, includeAccepted: boolean) {
    super(`only failed and held deliveries${includeAccepted ? ' and accepted_by_qstash ones' : ''} can be replayed (got status ${status})`);
    this.status = status;
    this.includeAccepted = includeAccepted;
  }
}

// ─── worker/ ───

/** `--plugin <file>` is unusable (missing, fails to load, no emailLookup): the start stops with one line naming the file. */
export class WorkerPluginError extends HookrelayError {
  static {
    brand(this, 'HOOKRELAY_WORKER_PLUGIN_INVALID');
  }
  readonly code = 'HOOKRELAY_WORKER_PLUGIN_INVALID' as const;
  override readonly name = 'WorkerPluginError';
}

// ─── console/ and cli/: the edges' own refusals ───

/** A value a visitor put in a URL or a form that the console refuses (queryInput.ts): answered with 400 and the message. */
export class ConsoleInputError extends HookrelayError {
  static {
    brand(this, 'HOOKRELAY_CONSOLE_INPUT_INVALID');
  }
  readonly code = 'HOOKRELAY_CONSOLE_INPUT_INVALID' as const;
  override readonly name = 'ConsoleInputError';
  constructor(message: string) {
    super(message);
  }
}

/** Bad usage or nothing matched: one line on stderr, exit 2. */
export class CliUsageError extends HookrelayError {
  static {
    brand(this, 'HOOKRELAY_CLI_USAGE');
  }
  readonly code = 'HOOKRELAY_CLI_USAGE' as const;
  override readonly name = 'CliUsageError';
}
