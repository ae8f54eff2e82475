/**
 * SPEC §13, the one store-opening policy for every process that is not `hookrelay start`
 * (a producer in a server app, the operation store, the CLI): DATABASE_URL when set; else the
 * running `start` process's embedded store, through the socket it serves; else the embedded
 * folder opened directly (and migrated), as no process holds it.
 */
import { DEFAULT_DATA_DIR } from '../contract/defaults.ts';
import { openStore, type Store } from './db.ts';
import { findEmbeddedSocket } from './embedded.ts';
import { migrateStore } from './migrate.ts';

export type ConfiguredStoreOptions = {
  /** Postgres connection string (DATABASE_URL). */
  databaseUrl?: string | undefined;
  /** Embedded folder (HOOKRELAY_DATA_DIR). */
  dataDir?: string | undefined;
  /** Pool size for Postgres; a socket-served embedded store always gets one connection. */
  maxConnections?: number;
};

export async function openConfiguredStore(options: ConfiguredStoreOptions): Promise<Store> {
  if (options.databaseUrl)
    return openStore({ databaseUrl: options.databaseUrl, ...(options.maxConnections !== undefined ? { maxConnections: options.maxConnections } : {}) });
  const dataDir = options.dataDir ?? DEFAULT_DATA_DIR;
  // PGlite serves one connection at a time over its socket.
  const served = findEmbeddedSocket(dataDir);
  if (served) return openStore({ databaseUrl: served.databaseUrl, maxConnections: 1 });
  const store = await openStore({ dataDir });
  await migrateStore(store);
  return store;
}
