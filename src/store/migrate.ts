import { drizzle as drizzlePg } from 'drizzle-orm/node-postgres';
import { migrate as migratePg } from 'drizzle-orm/node-postgres/migrator';
import type { PgliteDatabase } from 'drizzle-orm/pglite';
import type pg from 'pg';
import { sql } from 'drizzle-orm';
import { rowsOf, type Store } from './db.ts';
import type { MigrateOptions } from './types.ts';

import { MIGRATIONS_FOLDER } from './migrationsFolder.ts';

export { MIGRATIONS_FOLDER };

/**
 * First key of the two-key advisory lock that serializes migrations; the second is the hash of the
 * bookkeeping schema, so migrations of different schemas (parallel tests) do not wait on each other.
 */
const MIGRATION_LOCK_CLASS = 0x686b7231; // 'hkr1'

export type { MigrateOptions } from './types.ts';

/**
 * Apply the committed drizzle-kit migrations. Idempotent: applied ones are recorded and skipped.
 * On Postgres several processes may call it at once (replicas starting together, a migrate job
 * beside workers): a session advisory lock on one dedicated connection lets one of them migrate
 * while the others wait, then find nothing left to do. PGlite is single-process: no lock needed.
 */
export async function migrateStore(store: Store, options: MigrateOptions = {}): Promise<void> {
  if (store.kind === 'pglite') {
    const migrationsSchema =
      options.migrationsSchema ?? rowsOf<{ schema: string | null }>(await store.db.execute(sql`select current_schema() as schema`))[0]?.schema ?? 'public';
    // Loaded only for the embedded store (drizzle's PGlite migrator needs the optional PGlite peer).
    const { migrate: migratePglite } = await import('drizzle-orm/pglite/migrator');
    await migratePglite(store.db as unknown as PgliteDatabase, { migrationsFolder: MIGRATIONS_FOLDER, migrationsSchema });
    return;
  }
  if (!store.pool) throw new Error('migrateStore: a postgres store needs its pool (open it with openStore)');
  await migrateLocked(store.pool, options.migrationsSchema);
}

async function migrateLocked(pool: pg.Pool, schemaOption: string | undefined): Promise<void> {
  // The lock belongs to the session, so everything runs on this one client; a crashed holder's
  // lock goes with its connection.
  const client = await pool.connect();
  let lockKey: [number, string] | undefined;
  let broken: Error | undefined;
  try {
    // Bookkeeping lives beside the tables (the connection's current schema), so a deployment or a
    // test isolated by search_path never mistakes another schema's migrations for its own.
    const migrationsSchema = schemaOption ?? (await currentSchema(client));
    await client.query('SELECT pg_advisory_lock($1::int4, hashtext($2)::int4)', [MIGRATION_LOCK_CLASS, migrationsSchema]);
    lockKey = [MIGRATION_LOCK_CLASS, migrationsSchema];
    await migratePg(drizzlePg(client), { migrationsFolder: MIGRATIONS_FOLDER, migrationsSchema });
  } finally {
    if (lockKey) {
      await client.query('SELECT pg_advisory_unlock($1::int4, hashtext($2)::int4)', lockKey).catch((err: unknown) => {
        broken = err instanceof Error ? err : new Error(String(err));
      });
    }
    // A client whose unlock failed is discarded: closing its connection releases the lock.
    client.release(broken);
  }
}

async function currentSchema(client: pg.PoolClient): Promise<string> {
  const result = await client.query<{ schema: string | null }>('SELECT current_schema() AS schema');
  return result.rows[0]?.schema ?? 'public';
}
