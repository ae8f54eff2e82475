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
