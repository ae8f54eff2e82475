import type { z } from 'zod';
import { brandHookrelayError, HookrelayError } from './hookrelayError.ts';
export { CriticalHookDeliveryError, WebhookDeliveryError } from './criticalError.ts';

export type ConfigIssue = { path: string; message: string };

function formatPath(path: readonly PropertyKey[]): string {
  return path
    .map((p) => (typeof p === 'number' ? `[${p}]` : String(p)))
    .join('.')
    .replace(/\.\[/g, '[');
}

/**
 * A hook configuration was rejected (§14). The message names the hook id and every failing
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
 * D10 / §14: an event that cannot be accepted (not an object, a bad index, nested too deep to
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
