import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { drizzle as drizzlePg } from 'drizzle-orm/node-postgres';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import pg from 'pg';
import type { PGlite } from '@electric-sql/pglite';
import { schema } from './schema.ts';

/** Either driver: node-postgres in production, PGlite embedded. Repositories only see this. */
export type Db = PgDatabase<PgQueryResultHKT, typeof schema>;

/** Rows of a raw `db.execute(sql…)` result: node-postgres and PGlite both answer `{ rows }`. */
export function rowsOf<T>(result: unknown): T[] {
  return ((result as { rows?: T[] }).rows ?? []) as T[];
}

export type Store = {
  db: Db;
  kind: 'postgres' | 'pglite';
  /** The PGlite instance in embedded mode (to serve it on a socket). */
  pglite?: PGlite;
  /** The pg pool in postgres mode (tests terminate its connections, readiness pings it). */
  pool?: pg.Pool;
  close(): Promise<void>;
};

export type OpenStoreOptions = {
  databaseUrl?: string;
  dataDir?: string;
  /** pg pool size (postgres mode). */
  maxConnections?: number;
  /** Called for errors on idle pool clients (a terminated backend must not crash the process). */
  onPoolError?: (err: Error) => void;
};

/** Open the store: a pg pool when a URL is given, else PGlite in `<dataDir>/pgdata`. */
export async function openStore(options: OpenStoreOptions): Promise<Store> {
  if (options.databaseUrl) {
    const pool = new pg.Pool({ connectionString: options.databaseUrl, max: options.maxConnections ?? 10 });
    pool.on('error', (err) => options.onPoolError?.(err));
    const db = drizzlePg(pool, { schema }) as unknown as Db;
    return { db, kind: 'postgres', pool, close: () => pool.end() };
  }
  const dataDir = path.resolve(options.dataDir ?? '.hookrelay', 'pgdata');
  mkdirSync(dataDir, { recursive: true });
  // Loaded only in embedded mode: the PGlite driver costs ~40 MB of RSS a postgres worker never needs.
  const [{ PGlite }, { drizzle: drizzlePglite }] = await Promise.all([import('@electric-sql/pglite'), import('drizzle-orm/pglite')]);
  const pglite = await PGlite.create(dataDir);
  const db = drizzlePglite(pglite, { schema }) as unknown as Db;
  return { db, kind: 'pglite', pglite, close: () => pglite.close() };
}
