/**
 * Any error of a store call as a StorageError (errors.ts): the Postgres SQLSTATE and primary
 * message only. drizzle's own error ("Failed query: … params: …") carries every parameter of the
 * statement: in a batched write those are other callers' payloads, so it must never be returned
 * to a caller or logged. Pure (no driver imports): the logger uses it too.
 */
import { StorageError } from './errors.ts';

type ErrorLike = { message?: unknown; code?: unknown; cause?: unknown; params?: unknown; query?: unknown };

/** drizzle's DrizzleQueryError, recognised by shape (the logger layer must not import drizzle). */
function isQueryError(value: ErrorLike): boolean {
  return typeof value.message === 'string' && value.message.startsWith('Failed query:') && 'params' in value;
}

/** The innermost error of a cause chain that is not a query wrapper (the driver's own error). */
function driverError(error: unknown): ErrorLike | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 8 && current !== null && typeof current === 'object'; depth += 1) {
    const e = current as ErrorLike;
    if (!isQueryError(e)) return e;
    current = e.cause;
  }
  return undefined;
}

/**
 * Postgres' primary messages may quote a value (`invalid input syntax for type integer: "…"`);
 * quoted text is dropped for data exceptions (SQLSTATE class 22), where it is input, not a name.
 */
function safeReason(sqlState: string | undefined, message: string): string {
  const oneLine = message.split('\n')[0] ?? '';
  const cut = oneLine.length > 200 ? `${oneLine.slice(0, 200)}…` : oneLine;
  return sqlState?.startsWith('22') ? cut.replace(/"[^"]*"/g, '"…"') : cut;
}

/** True when `error` (or a cause) is drizzle's query error: its message lists the statement's parameters. */
export function carriesQueryParameters(error: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; depth < 8 && current !== null && typeof current === 'object'; depth += 1) {
    if (isQueryError(current as ErrorLike)) return true;
    current = (current as ErrorLike).cause;
  }
  return false;
}

/**
 * Any error of a store call as a StorageError naming the operation, the SQLSTATE and Postgres'
 * primary message (never DETAIL/CONTEXT, which quote the input, nor the statement's parameters).
 * A StorageError passes through unchanged.
 */
export function toStorageError(error: unknown, operation: string): StorageError {
  if (error instanceof StorageError) return error;
  const driver = driverError(error);
  const code = typeof driver?.code === 'string' && driver.code !== '' ? driver.code : undefined;
  const message = typeof driver?.message === 'string' && driver.message !== '' ? driver.message : 'unknown store error';
  return new StorageError(operation, code, safeReason(code, message));
}

/** Runs a store call; whatever it throws becomes a StorageError (see toStorageError). */
export async function storageCall<T>(operation: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    throw toStorageError(error, operation);
  }
}

/** SQLSTATE classes of a statement refused for its data (22 data exception, 23 integrity, 54 limits): another row may go through. */
export function isRowDataError(error: unknown): boolean {
  const state = error instanceof StorageError ? error.sqlState : undefined;
  return state !== undefined && /^(22|23|54)[0-9A-Z]{3}$/.test(state);
}
