import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { drizzle as drizzlePg } from 'drizzle-orm/node-postgres';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import pg from 'pg';
import { schema } from './schema.ts';
import { EmbeddedStoreUnavailableError } from './errors.ts';

/** Either driver: node-postgres in production, PGlite embedded. Repositories only see this. */
export type Db = PgDatabase<PgQueryResultHKT, typeof schema>;

/** Rows of a raw `db.execute(sql…)` result: node-postgres and PGlite both answer `{ rows }`. */
export function rowsOf<T>(result: unknown): T[] {
  return ((result as { rows?: T[] }).rows ?? []) as T[];
}

/**
 * The embedded PGlite instance, opaque in the public types: PGlite is an optional peer dependency,
 * so the published declarations must not name its types (src/store/embedded.ts casts it back).
 */
export type EmbeddedDatabase = { readonly embedded: unique symbol };

export type Store = {
  db: Db;
  kind: 'postgres' | 'pglite';
  /** The PGlite instance in embedded mode (to serve it on a socket). */
  pglite?: EmbeddedDatabase;
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
  const [{ PGlite }, { drizzle: drizzlePglite }] = await Promise.all([importEmbedded('@electric-sql/pglite'), import('drizzle-orm/pglite')]);
  const pglite = await PGlite.create(dataDir);
  const db = drizzlePglite(pglite, { schema }) as unknown as Db;
  return { db, kind: 'pglite', pglite: pglite as unknown as EmbeddedDatabase, close: () => pglite.close() };
}


export async function importEmbedded<M extends '@electric-sql/pglite' | '@electric-sql/pglite-socket'>(name: M): Promise<M extends '@electric-sql/pglite' ? typeof import('@electric-sql/pglite') : typeof import('@electric-sql/pglite-socket')> {
  try {
    return (await import(name)) as never;
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code;
    if (code === 'ERR_MODULE_NOT_FOUND' && error instanceof Error && error.message.includes(`'${name}'`)) {
      throw new EmbeddedStoreUnavailableError(
        `the embedded store needs the optional packages @electric-sql/pglite and @electric-sql/pglite-socket (npm install @electric-sql/pglite @electric-sql/pglite-socket), or set DATABASE_URL to a Postgres server`,
      );
    }
    throw error;
  }
}
