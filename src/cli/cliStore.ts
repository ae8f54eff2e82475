import type { Settings } from '../config/settings.ts';
import type { Store } from '../store/db.ts';
import { openConfiguredStore } from '../store/openConfigured.ts';

/** The CLI runs one command at a time: a few connections are plenty. */
const CLI_POOL_SIZE = 4;

/**
 * Store access for the CLI (the shared policy in store/openConfigured.ts). Only
 * `migrate` creates an embedded store; every other command finds an existing one or says
 * where it looked (StoreNotFoundError, exit 2).
 */
export function openCliStore(settings: Settings, options: { create: boolean }): Promise<Store> {
  return openConfiguredStore({
    databaseUrl: settings.DATABASE_URL,
    dataDir: settings.HOOKRELAY_DATA_DIR,
    maxConnections: CLI_POOL_SIZE,
    create: options.create,
  });
}
