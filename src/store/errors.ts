/** Store errors, in a module of their own so the light package entry can export them. */
import { HookrelayError } from '../contract/hookrelayError.ts';

export class PlaceholderNotFoundError extends HookrelayError {
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
  readonly code = 'HOOKRELAY_EMBEDDED_STORE_UNAVAILABLE' as const;
  override readonly name = 'EmbeddedStoreUnavailableError';
}

/**
 * A command that only reads (the CLI, the console) found no store: no DATABASE_URL, no running
 * `hookrelay start` serving the data dir, and no embedded folder there. It creates none (an
 * empty new ledger would answer as if nothing had happened); the message says where it looked.
 */
export class StoreNotFoundError extends HookrelayError {
  readonly code = 'HOOKRELAY_STORE_NOT_FOUND' as const;
  override readonly name = 'StoreNotFoundError';
}

/**
 * Q13: Postgres (the ledger store) did not answer — refused, dropped or too slow. Names the store
 * and the variable that points at it, and says what happened to the caller's work.
 */
export class StoreUnavailableError extends HookrelayError {
  readonly code = 'HOOKRELAY_STORE_UNAVAILABLE' as const;
  override readonly name = 'StoreUnavailableError';
}
