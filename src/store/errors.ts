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
 * W7: the data dir's `store.json` is not the current user's own (a link, another user's file, a
 * file others may write, another user's process, a socket folder others may enter). Nothing it
 * names is connected to; the message says why and what to do.
 */
export class EmbeddedStoreUntrustedError extends HookrelayError {
  readonly code = 'HOOKRELAY_EMBEDDED_STORE_UNTRUSTED' as const;
  override readonly name = 'EmbeddedStoreUntrustedError';
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

/** The text fields of a delivery filter (deliveryFilterInput.ts `FilterFields`), as a FilterInputError names them. */
export type FilterField = 'status' | 'operation' | 'hook' | 'event' | 'endpoint' | 'tenant' | 'since' | 'until';

/**
 * A delivery filter field the ledger cannot use; `field` and `value` say which (absent when an
 * edge refused the text before parsing). Its message names the field as the caller spelled it.
 */
export class FilterInputError extends HookrelayError {
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
