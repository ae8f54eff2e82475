import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import type { PGlite } from '@electric-sql/pglite';
import { z } from 'zod';
import type { Store } from './db.ts';
import { importEmbedded } from './embeddedImport.ts';

/** Where the `start` process advertises the socket it serves the embedded store on. */
function embeddedSocketFile(dataDir: string): string {
  return path.resolve(dataDir, 'store.json');
}

/**
 * The discovery file `store.json` in HOOKRELAY_DATA_DIR: written when `start` serves the store,
 * removed when it stops. Only a loopback, password-less URL is believed (the file is plain text
 * in a folder others may write to).
 */
const EmbeddedSocketInfoSchema = z.object({
  databaseUrl: z.string().regex(/^postgres:\/\/postgres@127\.0\.0\.1:\d{1,5}\/postgres\?sslmode=disable$/),
  port: z.number().int().min(1).max(65_535).optional(),
  pid: z.number().int().min(1),
  startedAt: z.string().optional(),
});
type EmbeddedSocketInfo = z.infer<typeof EmbeddedSocketInfoSchema>;

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
  const info: EmbeddedSocketInfo = { databaseUrl, port, pid: process.pid, startedAt: new Date().toISOString() };
  // Written whole then renamed: a reader never sees half a file.
  const staged = `${file}.${process.pid}.tmp`;
  writeFileSync(staged, `${JSON.stringify(info)}\n`);
  renameSync(staged, file);
  return {
    databaseUrl,
    async stop() {
      rmSync(file, { force: true });
      await server.stop();
    },
  };
}

/** What the discovery file of a data dir says: a live `start` process, a stale file, or nothing. */
export type EmbeddedSocketLookup =
  | { state: 'live'; file: string; info: EmbeddedSocketInfo }
  | { state: 'stale'; file: string; pid?: number }
  | { state: 'none'; file: string };

export function lookupEmbeddedSocket(dataDir: string): EmbeddedSocketLookup {
  const file = embeddedSocketFile(dataDir);
  if (!existsSync(file)) return { state: 'none', file };
  let info: EmbeddedSocketInfo;
  try {
    info = EmbeddedSocketInfoSchema.parse(JSON.parse(readFileSync(file, 'utf8')));
  } catch {
    return { state: 'stale', file };
  }
  try {
    process.kill(info.pid, 0); // throws when the owner is gone
  } catch (error) {
    // EPERM: alive, owned by another user.
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return { state: 'stale', file, pid: info.pid };
  }
  return { state: 'live', file, info };
}
