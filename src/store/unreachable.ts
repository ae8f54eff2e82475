/**
 * Is an error Postgres (or the path to it) being away, rather than a bad statement (Q13)? The
 * worker's Postgres wait (postgresWait.ts) waits such errors out; the producer, the CLI and the console turn them into a
 * StoreUnavailableError that names the store instead of a driver message or a stack.
 */
import { StoreUnavailableError } from '../contract/errors.ts';

/** SQLSTATE classes that mean "no usable connection": 08 connection, 57 operator intervention, 53 resources. */
const UNAVAILABLE_SQLSTATE = /^(08|57|53)/;
const UNAVAILABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);
const UNAVAILABLE_MESSAGE =
  /connection terminated|connection error|terminating connection|timeout exceeded when trying to connect|client has encountered a connection error|connection ended|server closed the connection|the database system is (starting up|shutting down)/i;

export function isStoreUnreachable(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e !== undefined && e !== null && depth < 4; depth += 1) {
    if (e instanceof StoreUnavailableError) return true;
    const { code, message, sqlState } = e as { code?: unknown; message?: unknown; sqlState?: unknown };
    for (const c of [code, sqlState]) if (typeof c === 'string' && (UNAVAILABLE_SQLSTATE.test(c) || UNAVAILABLE_CODES.has(c))) return true;
    if (typeof message === 'string' && UNAVAILABLE_MESSAGE.test(message)) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

/** The driver's reason in one word or line (`ECONNREFUSED`, `57P01`), never a statement or its parameters. */
function reasonOf(error: unknown): string | undefined {
  for (let e: unknown = error, depth = 0; e !== undefined && e !== null && depth < 4; depth += 1) {
    const { code, sqlState } = e as { code?: unknown; sqlState?: unknown };
    if (typeof sqlState === 'string' && sqlState !== '') return sqlState;
    if (typeof code === 'string' && !code.startsWith('HOOKRELAY_')) return code;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

/** `error` as the typed "the store is unreachable" error, saying what happened to the caller's work. */
export function storeUnavailable(error: unknown, consequence: string): StoreUnavailableError {
  if (error instanceof StoreUnavailableError) return error;
  const reason = reasonOf(error);
  return new StoreUnavailableError(`the ledger store (Postgres at DATABASE_URL) is unreachable${reason ? ` (${reason})` : ''}: ${consequence}`);
}
