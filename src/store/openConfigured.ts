/**
 * The one store-opening policy for every process that is not `hookrelay start`
 * (a producer in a server app, the operation store, the CLI): DATABASE_URL when set; else the
 * running `start` process's embedded store, through the socket it serves (its `store.json` only
 * when the current user's own: else EmbeddedStoreUntrustedError, nothing connected to); else the
 * embedded folder opened directly (and migrated), as no process holds it.
 */
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { DEFAULT_DATA_DIR } from '../contract/defaults.ts';
import { openStore, type Store } from './db.ts';
import { lookupEmbeddedSocket } from './embedded.ts';
import { EmbeddedStoreUntrustedError, StoreNotFoundError } from '../contract/errors.ts';
import { migrateStore } from './migrate.ts';
import { withDefined } from '../util/withDefined.ts';

export type ConfiguredStoreOptions = {
  /** Postgres connection string (DATABASE_URL). */
  databaseUrl?: string | undefined;
  /** Embedded folder (HOOKRELAY_DATA_DIR). */
  dataDir?: string | undefined;
  /** Pool size for Postgres; a socket-served embedded store always gets one connection. */
  maxConnections?: number;
  /**
   * With `false`, an embedded folder that does not exist yet is not created: StoreNotFoundError
   * says where it looked and what to set (the CLI's commands other than `migrate`, the console).
   */
  create?: boolean;
};

export async function openConfiguredStore(options: ConfiguredStoreOptions): Promise<Store> {
  if (options.databaseUrl) return openStore({ databaseUrl: options.databaseUrl, ...withDefined({ maxConnections: options.maxConnections }) });
  const dataDir = options.dataDir ?? DEFAULT_DATA_DIR;
  // PGlite serves one connection at a time over its socket.
  const served = lookupEmbeddedSocket(dataDir);
  if (served.state === 'live') return openStore({ databaseUrl: served.databaseUrl, maxConnections: 1, sendNoPassword: true });
  if (served.state === 'untrusted') {
    throw new EmbeddedStoreUntrustedError(
      `${served.file} ${served.reason}: not used. hookrelay believes a store.json only when it is a regular file you own that only you may write, ` +
        'naming a running `hookrelay start` of yours; nothing it names was connected to. ' +
        `If you did not write it, remove it (rm ${served.file}) and find out who did; or set DATABASE_URL.`,
    );
  }
  const pgdata = path.resolve(dataDir, 'pgdata');
  if (options.create === false && !hasFiles(pgdata)) {
    const socket =
      served.state === 'stale'
        ? `${served.file} is stale (${served.pid !== undefined ? `process ${served.pid} is gone` : 'unreadable'})`
        : `no ${served.file} (written by a running \`hookrelay start\`)`;
    throw new StoreNotFoundError(
      `no store found, none created: DATABASE_URL is not set, ${socket}, and there is no embedded store at ${pgdata}. ` +
        'Set DATABASE_URL (a running `hookrelay start` logs the one to use), or HOOKRELAY_DATA_DIR to the folder `hookrelay start` uses ' +
        '(default .hookrelay in the folder it was started in); `hookrelay migrate` creates a new store here.',
    );
  }
  const store = await openStore({ dataDir });
  await migrateStore(store);
  return store;
}

function hasFiles(dir: string): boolean {
  try {
    return existsSync(dir) && readdirSync(dir).length > 0;
  } catch {
    return false;
  }
}
