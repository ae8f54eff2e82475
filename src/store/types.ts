/**
 * The store as the public API types it. drizzle's declarations do not type-check under
 * `skipLibCheck: false` (and pg's need @types/pg), so no published signature names them: a
 * consumer holds a `StoreHandle` and passes its `db` back opaquely; inside, src/store/db.ts's
 * `Store` (drizzle `Db`, the pg pool) is what the code works with.
 */

/** The `db` of a store opened by `openStore()`: hand it to `createStoreRecordSink(db)`. */
export type StoreDb = object;

/** A store opened by `openStore()` (Postgres or the embedded PGlite store). */
export interface StoreHandle {
  readonly kind: 'postgres' | 'pglite';
  readonly db: StoreDb;
  close(): Promise<void>;
}

/** P1: a placeholder is empty (`result` null) or holds the final result; no review state beside it. */
export type StoredPlaceholder = {
  operationId: string;
  toolCallId: string;
  result: unknown;
  approval: unknown;
  publishedAt: Date | null;
};

export type OpenStoreOptions = {
  /** Postgres connection string; without one, the embedded PGlite store in `<dataDir>/pgdata`. */
  databaseUrl?: string;
  dataDir?: string;
  /** pg pool size (postgres mode). */
  maxConnections?: number;
  /** Called for errors on idle pool clients (a terminated backend must not crash the process). */
  onPoolError?: (err: Error) => void;
  /**
   * A served embedded store never asks for a password: one that does is refused before any is
   * sent (PGPASSWORD included). Internal: set by the store-opening policy for `store.json` URLs.
   */
  sendNoPassword?: boolean;
};

export type MigrateOptions = {
  /** Schema holding drizzle's bookkeeping table; tests use their own schema to stay isolated. */
  migrationsSchema?: string;
};
