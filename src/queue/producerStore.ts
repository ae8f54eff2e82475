/**
 * SPEC §13 store choice for a producer in a server app: DATABASE_URL when set; else the running
 * `start` process's embedded store (its socket); else the embedded folder opened directly.
 */
import { openStore, type Store } from '../store/db.ts';
import { findEmbeddedSocket } from '../store/embedded.ts';
import { migrateStore } from '../store/migrate.ts';

/** A producer needs few connections: enqueue is one INSERT. */
export const PRODUCER_POOL_SIZE = 10;
const DEFAULT_DATA_DIR = '.hookrelay';

export async function openProducerStore(databaseUrl: string | undefined, env: Record<string, string | undefined>): Promise<Store> {
  if (databaseUrl) return openStore({ databaseUrl, maxConnections: PRODUCER_POOL_SIZE });
  const dataDir = env.HOOKRELAY_DATA_DIR?.trim() || DEFAULT_DATA_DIR;
  const served = findEmbeddedSocket(dataDir);
  if (served) return openStore({ databaseUrl: served.databaseUrl, maxConnections: 1 });
  const store = await openStore({ dataDir });
  await migrateStore(store);
  return store;
}
