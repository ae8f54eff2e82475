import type { Settings } from '../config/settings.ts';
import { storeOf, type Db, type Store } from '../store/db.ts';
import { openConfiguredStore } from '../store/openConfigured.ts';
import type { OperationStoreOptions } from './operationStoreTypes.ts';

/** An operation store's database: `db()` for each call, `close()` for the store's own close. */
export type StoreConnection = { db(): Promise<Db>; close(): Promise<void> };

/**
 * The store handed in (never closed here), else one opened lazily from the settings on first use;
 * a failed open is retried by the next call.
 */
export function connectStore(options: OperationStoreOptions, settings: Pick<Settings, 'DATABASE_URL' | 'HOOKRELAY_DATA_DIR'>): StoreConnection {
  let opened: Promise<Store> | undefined;
  const owned = options.store === undefined;
  const getStore = (): Promise<Store> => {
    if (options.store) return Promise.resolve(storeOf(options.store));
    opened ??= openConfiguredStore({ databaseUrl: options.databaseUrl ?? settings.DATABASE_URL, dataDir: settings.HOOKRELAY_DATA_DIR });
    opened.catch(() => (opened = undefined)); // a failed open is retried by the next call
    return opened;
  };
  return {
    db: async () => (await getStore()).db,
    async close() {
      if (owned && opened) await (await opened).close();
    },
  };
}
