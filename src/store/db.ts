import path from 'node:path';
import { sql } from 'drizzle-orm';
import { drizzle as drizzlePg } from 'drizzle-orm/node-postgres';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import pg from 'pg';
import { schema } from './schema.ts';
import { DEFAULT_DATA_DIR } from '../contract/defaults.ts';
import { importEmbedded } from './embeddedImport.ts';
import { embeddedStartParams, seedFromTemplate } from './embeddedTemplate.ts';
import { ensurePrivateDir } from './privateFiles.ts';
import type { OpenStoreOptions, StoreDb, StoreHandle } from './types.ts';

/** Either driver: node-postgres in production, PGlite embedded. Repositories only see this. */
export type Db = PgDatabase<PgQueryResultHKT, typeof schema>;

/** Rows of a raw `db.execute(sql…)` result: node-postgres and PGlite both answer `{ rows }`. */
export function rowsOf<T>(result: unknown): T[] {
  return ((result as { rows?: T[] }).rows ?? []) as T[];
}

/** Resolves when the database answers a query (readiness probes, the worker's Postgres wait); no table is read. */
export async function pingStore(db: Db): Promise<void> {
  await db.execute(sql`select 1`);
}

/**
 * The embedded PGlite instance, opaque in the public types: PGlite is an optional peer dependency,
 * so the published declarations must not name its types (src/store/embedded.ts casts it back).
 */
type EmbeddedDatabase = { readonly embedded: unique symbol };

export type Store = {
  db: Db;
  kind: 'postgres' | 'pglite';
  /** The PGlite instance in embedded mode (to serve it on a socket). */
  pglite?: EmbeddedDatabase;
  /** The pg pool in postgres mode (tests terminate its connections, readiness pings it). */
  pool?: pg.Pool;
  close(): Promise<void>;
};

export type { OpenStoreOptions } from './types.ts';

/** Q13: how long opening a Postgres connection may take before it counts as unreachable. */
const CONNECT_TIMEOUT_MS = 5_000;

/** pg calls this when a server asks for a password: a served embedded store never does, so none is sent. */
async function refusePassword(): Promise<string> {
  throw new Error('the embedded store asked for a password, which it never does: refusing to send one (is store.json pointing somewhere else?)');
}

/** Open the store: a pg pool when a URL is given, else PGlite in `<dataDir>/pgdata`. */
export async function openStore(options: OpenStoreOptions): Promise<Store> {
  if (options.databaseUrl) {
    // Q13: a connect that gets no answer (a dropped network path) fails after the timeout instead of waiting for TCP.
    const pool = new pg.Pool({
      connectionString: options.databaseUrl,
      max: options.maxConnections ?? 10,
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
      ...(options.sendNoPassword === true ? { password: refusePassword } : {}),
    });
    pool.on('error', (err) => options.onPoolError?.(err));
    const db = drizzlePg(pool, { schema }) as unknown as Db;
    return { db, kind: 'postgres', pool, close: () => pool.end() };
  }
  // W7: the folder (and the ledger in it) is its owner's alone: 0700, an existing one narrowed.
  const root = path.resolve(options.dataDir ?? DEFAULT_DATA_DIR);
  ensurePrivateDir(root, { followLinks: true });
  const dataDir = path.join(root, 'pgdata');
  ensurePrivateDir(dataDir);
  // Loaded only in embedded mode: the PGlite driver costs ~40 MB of RSS a postgres worker never needs.
  const [{ PGlite }, { drizzle: drizzlePglite }] = await Promise.all([importEmbedded('@electric-sql/pglite'), import('drizzle-orm/pglite')]);
  // An empty folder is seeded from the initdb output shipped in dist/ (PGlite's own initdb costs
  // 3–5 s and ~500 MB it keeps); a failed seed leaves the folder empty and PGlite runs initdb.
  await seedFromTemplate(dataDir).catch(() => false);
  const pglite = await PGlite.create(dataDir, { startParams: embeddedStartParams(PGlite.defaultStartParams) });
  const db = drizzlePglite(pglite, { schema }) as unknown as Db;
  return { db, kind: 'pglite', pglite: pglite as unknown as EmbeddedDatabase, close: () => pglite.close() };
}

/** A public `StoreHandle` is always a `Store` from `openStore()`: back to the typed view the code uses. */
export function storeOf(handle: StoreHandle): Store {
  return handle as Store;
}

/** A public `StoreDb` is always the drizzle `Db` of a store from `openStore()`. */
export function dbOf(db: StoreDb): Db {
  return db as Db;
}
