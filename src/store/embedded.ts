import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import type { PGlite } from '@electric-sql/pglite';
import type { Store } from './db.ts';
import { importEmbedded } from './embeddedImport.ts';

/** Where the `start` process advertises the socket it serves the embedded store on (SPEC §13). */
function embeddedSocketFile(dataDir: string): string {
  return path.resolve(dataDir, 'store.json');
}

export type EmbeddedSocketInfo = { databaseUrl: string; pid: number };

async function freePort(): Promise<number> {
  return await new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/**
 * Serve the embedded PGlite store on 127.0.0.1 so the CLI and a server app on this machine can
 * connect with `pg` while this process owns the folder. Returns the DATABASE_URL and a stop().
 */
export async function serveEmbeddedStore(store: Store, dataDir: string): Promise<{ databaseUrl: string; stop(): Promise<void> }> {
  if (store.kind !== 'pglite' || !store.pglite) throw new Error('serveEmbeddedStore needs the embedded (PGlite) store');
  const { PGLiteSocketServer } = await importEmbedded('@electric-sql/pglite-socket');
  const port = await freePort();
  const server = new PGLiteSocketServer({ db: store.pglite as unknown as PGlite, host: '127.0.0.1', port, maxConnections: 16 });
  await server.start();
  const databaseUrl = `postgres://postgres@127.0.0.1:${port}/postgres?sslmode=disable`;
  const file = embeddedSocketFile(dataDir);
  const info: EmbeddedSocketInfo = { databaseUrl, pid: process.pid };
  writeFileSync(file, JSON.stringify(info));
  return {
    databaseUrl,
    async stop() {
      rmSync(file, { force: true });
      await server.stop();
    },
  };
}

/** The running `start` process's socket, if one holds this data dir and is alive. */
export function findEmbeddedSocket(dataDir: string): EmbeddedSocketInfo | undefined {
  const file = embeddedSocketFile(dataDir);
  if (!existsSync(file)) return undefined;
  try {
    const info = JSON.parse(readFileSync(file, 'utf8')) as EmbeddedSocketInfo;
    process.kill(info.pid, 0); // throws when the owner is gone
    return info;
  } catch {
    return undefined;
  }
}
