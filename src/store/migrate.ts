import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { migrate as migratePg } from 'drizzle-orm/node-postgres/migrator';
import { migrate as migratePglite } from 'drizzle-orm/pglite/migrator';
import type { NodePgDatabase } from 'drizzle-orm/node-postgres';
import type { PgliteDatabase } from 'drizzle-orm/pglite';
import { sql } from 'drizzle-orm';
import { rowsOf, type Store } from './db.ts';

export const MIGRATIONS_FOLDER = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../migrations');

export type MigrateOptions = {
  /** Schema holding drizzle's bookkeeping table; tests use their own schema to stay isolated. */
  migrationsSchema?: string;
};

/** Apply the committed drizzle-kit migrations. Idempotent: applied ones are recorded and skipped. */
export async function migrateStore(store: Store, options: MigrateOptions = {}): Promise<void> {
  // Bookkeeping lives beside the tables (the connection's current schema), so a deployment or a
  // test isolated by search_path never mistakes another schema's migrations for its own.
  const migrationsSchema = options.migrationsSchema ?? (await currentSchema(store));
  const config = { migrationsFolder: MIGRATIONS_FOLDER, migrationsSchema };
  if (store.kind === 'pglite') {
    await migratePglite(store.db as unknown as PgliteDatabase, config);
  } else {
    await migratePg(store.db as unknown as NodePgDatabase, config);
  }
}

async function currentSchema(store: Store): Promise<string> {
  const result = await store.db.execute(sql`select current_schema() as schema`);
  const row = rowsOf<{ schema: string | null }>(result)[0];
  return row?.schema ?? 'public';
}
