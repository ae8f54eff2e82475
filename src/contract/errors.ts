import type { z } from 'zod';
import { brandHookrelayError, HookrelayError } from './hookrelayError.ts';
import { describeTemplateEnvProblem, TEMPLATE_ENV_VARIABLE, type TemplateEnvProblem } from './templateEnvProblem.ts';

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
  override readonly name = 'EventValidationError';
  readonly code = 'HOOKRELAY_EVENT_INVALID' as const;
  readonly errorClass = 'invalid_event' as const;

  constructor(message: string) {
    super(message);
    brandHookrelayError(this); // `instanceof HookrelayError` too, while staying a TypeError
  }
}

/**
 * D10: a tool-call method was given an event (or tool context) whose `operationId` differs from
 * the operation id of its first argument. An event without `operationId` takes the argument's
 * (as LobeHub's dispatcher does); two different ids are a caller bug, never guessed between.
 * A TypeError, as the other bad-input errors of dispatch; the message names both ids.
 */
export class OperationIdMismatchError extends TypeError {
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
    brandHookrelayError(this);
  }
}

/**
 * N1: a tenant that is not a bounded token. A TypeError (as the other bad-input errors of
 * register and enqueue); the message names the field and the rule, never the value.
 */
export class TenantError extends TypeError {
  override readonly name = 'TenantError';
  readonly code = 'HOOKRELAY_TENANT_INVALID' as const;
  readonly field: string;

  constructor(field: string) {
    super(`${field} must be 1–128 characters of A-Z a-z 0-9 . _ : - (N1)`);
    this.field = field;
    brandHookrelayError(this);
  }
}

/**
 * N1: an operation registered (or stored) under one tenant was used with another: a caller bug,
 * never guessed between (the operation keeps the tenant it has).
 */
export class TenantMismatchError extends TypeError {
  override readonly name = 'TenantMismatchError';
  readonly code = 'HOOKRELAY_TENANT_MISMATCH' as const;
  readonly operationId: string;

  constructor(operationId: string, registered: string, given: string) {
    super(
      `operation ${JSON.stringify(operationId.slice(0, 200))} belongs to tenant ${JSON.stringify(registered)}; it was used with tenant ${JSON.stringify(given)} (N1)`,
    );
    this.operationId = operationId;
    brandHookrelayError(this);
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
