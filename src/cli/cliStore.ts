import type { Settings } from '../config/settings.ts';
import { openStore, type Store } from '../store/db.ts';
import { findEmbeddedSocket } from '../store/embedded.ts';
import { migrateStore } from '../store/migrate.ts';

/**
 * SPEC §13 store access for the CLI: DATABASE_URL when set; else the running `start` process's
 * socket when one holds the data dir; else open (and migrate) the embedded folder directly.
 */
export async function openCliStore(settings: Settings): Promise<Store> {
  if (settings.DATABASE_URL) return openStore({ databaseUrl: settings.DATABASE_URL, maxConnections: 4 });
  const served = findEmbeddedSocket(settings.HOOKRELAY_DATA_DIR);
  if (served) return openStore({ databaseUrl: served.databaseUrl, maxConnections: 1 });
  const store = await openStore({ dataDir: settings.HOOKRELAY_DATA_DIR });
  await migrateStore(store);
  return store;
}
