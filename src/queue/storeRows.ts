/**
 * Enqueue step 2, store: the rows of a group of calls in one multi-row INSERT (Q1), or one
 * transaction when they are keyed (Q1a), ordered (SEC-H7) or many. Nothing is stored for a call
 * unless all of it is.
 */
import { TenantMismatchError, IdempotencyConflictError } from '../contract/errors.ts';
import { isRowDataError, storageCall } from '../contract/storageError.ts';
import type { Db } from '../store/db.ts';
import { insertDeliveries, insertNumberedDeliveries, matchIdempotentDeliveries } from '../store/deliveriesRepo.ts';
import { assignSequences } from '../store/orderingRepo.ts';
import type { PreparedItem, PreparedRow } from './prepareEnqueue.ts';

/** Rows per INSERT statement (one JSON parameter each; large groups are cut into a transaction of several). */
const INSERT_CHUNK_ROWS = 1_000;

/** What one commit stored: the ids inserted, the sequence of each ordered one (SEC-H7), and the id an idempotency key already had for each row not inserted (Q1a). */
type Stored = { ids: string[]; sequences: Map<string, number>; existing: Map<string, string> };
/** What a group's commit stored, and the calls (by index) refused on their own. */
export type GroupStored = { inserted: Set<string>; refused: Map<number, unknown>; sequences: Map<string, number>; existing: Map<string, string> };

/**
 * The group's rows in one statement. When Postgres refuses it for its data (one call's text it
 * cannot store got past the checks), or one call's idempotency key conflicts (Q1a), each call is
 * inserted again on its own: the other calls are stored exactly once (the failed statement stored
 * nothing) and only the bad call gets the error — a StorageError that names no parameter, or an
 * IdempotencyConflictError — never another caller's payload.
 */
export async function storeGroup(db: Db, calls: readonly PreparedItem[][], rows: readonly PreparedRow[]): Promise<GroupStored> {
  const refused = new Map<number, unknown>();
  try {
    const stored = await storeRows(db, rows);
    return { inserted: new Set(stored.ids), refused, sequences: stored.sequences, existing: stored.existing };
  } catch (error) {
    if (calls.length === 1 || !(isRowDataError(error) || error instanceof IdempotencyConflictError || error instanceof TenantMismatchError)) throw error;
  }
  const inserted = new Set<string>();
  const sequences = new Map<string, number>();
  const existing = new Map<string, string>();
  for (const [i, items] of calls.entries()) {
    try {
      const stored = await storeRows(
        db,
        items.flatMap((p) => p.rows),
      );
      for (const id of stored.ids) inserted.add(id);
      for (const [id, n] of stored.sequences) sequences.set(id, n);
      for (const [id, found] of stored.existing) existing.set(id, found);
    } catch (error) {
      refused.set(i, error);
    }
  }
  return { inserted, refused, sequences, existing };
}

/**
 * One statement when it fits and nothing is keyed (ordered rows numbered in it), else one transaction: enqueue stores
 * all of a call or nothing. A row its idempotency key already stored (same operation, hook and
 * key) is the same delivery when the event and hook config are the same, else the whole
 * transaction is rolled back with an IdempotencyConflictError (Q1a). Ordered rows that were
 * inserted are numbered in the same transaction (SEC-H7): contiguous, and never a number for a
 * row that does not exist.
 */
async function storeRows(db: Db, rows: readonly PreparedRow[]): Promise<Stored> {
  const ordered = rows.some((r) => r.ordered);
  const keyed = rows.some((r) => r.idempotencyKey != null);
  if (rows.length <= INSERT_CHUNK_ROWS && !keyed) {
    if (!ordered) return { ids: await insertDeliveries(db, rows), sequences: new Map(), existing: new Map() };
    // Ordered and unkeyed: inserted and numbered in one statement (one round trip, not BEGIN, INSERT, number, COMMIT).
    const numbered = await insertNumberedDeliveries(db, rows);
    return { ...numbered, existing: new Map() };
  }
  const conflict: { error?: IdempotencyConflictError | TenantMismatchError } = {};
  const stored = await storageCall('insert deliveries', () =>
    db.transaction(async (tx) => {
      const ids: string[] = [];
      for (let i = 0; i < rows.length; i += INSERT_CHUNK_ROWS) {
        ids.push(
          ...(await insertDeliveries(tx as unknown as Db, rows.slice(i, i + INSERT_CHUNK_ROWS)).catch((error: unknown) => {
            // N1: an operation of another tenant; rolled back, thrown below as it is.
            if (error instanceof TenantMismatchError) conflict.error = error;
            throw error;
          })),
        );
      }
      const inserted = new Set(ids);
      const repeated = rows.filter((r) => !inserted.has(r.id));
      const matches = await matchIdempotentDeliveries(tx as unknown as Db, repeated);
      const existing = new Map<string, string>();
      for (const row of repeated) {
        const match = matches.get(row.id);
        if (!match) throw new Error(`delivery for hook "${row.hookId}" was neither stored nor found under its idempotency key`);
        if (!match.same) {
          // Rolled back: nothing of this statement is stored. Thrown below, past storageCall (it is no storage failure).
          conflict.error = new IdempotencyConflictError(row.operationId, row.hookId, row.idempotencyKey ?? '');
          tx.rollback();
        }
        existing.set(row.id, match.id);
      }
      const toNumber = rows.filter((r) => r.ordered && inserted.has(r.id)).map((r) => ({ id: r.id, operationId: r.operationId, hookId: r.hookId }));
      return { ids, sequences: await assignSequences(tx as unknown as Db, toNumber), existing };
    }),
  ).catch((error: unknown) => {
    throw conflict.error ?? error;
  });
  return stored;
}
