/** Queue errors, in a module without the Redis client so the CLI can name them without loading it. */
import { HookrelayError } from '../contract/hookrelayError.ts';

export class RedisUnavailableError extends HookrelayError {
  readonly code = 'HOOKRELAY_REDIS_UNAVAILABLE' as const;
  override readonly name = 'RedisUnavailableError';
}

/**
 * An attempt's outcome could not be written to the ledger even alone (Postgres refused its data).
 * The delivery is recorded as `failed` with error class `outcome_unwritable` instead, so it is
 * never re-sent; the job ends with this error.
 */
export class OutcomeNotStoredError extends HookrelayError {
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
