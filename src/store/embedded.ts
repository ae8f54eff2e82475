import { mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { PGlite } from '@electric-sql/pglite';
import { z } from 'zod';
import type { Store } from './db.ts';
import { importEmbedded } from './embeddedImport.ts';
import { ensurePrivateDir, ownFileProblem, ownFolderProblem, ownProcessProblem, PRIVATE_FILE_MODE } from './privateFiles.ts';

/** Where the `start` process advertises the store it serves. */
function embeddedSocketFile(dataDir: string): string {
  return path.resolve(dataDir, 'store.json');
}

/** The file name libpq and node-postgres look for in a socket folder (default port 5432). */
const SOCKET_FILE = '.s.PGSQL.5432';
/** Below every platform's unix socket path limit (104 bytes on macOS, 108 on Linux, with the NUL). */
const MAX_SOCKET_PATH = 100;

/**
 * The DATABASE_URL of a store served in `socketDir`: a unix socket, so only users who may enter
 * that 0700 folder (its owner) can connect; no password exists to leak or to be asked for.
 */
function socketUrl(socketDir: string): string {
  return `postgres://postgres@${encodeURIComponent(socketDir)}/postgres?sslmode=disable`;
}

/**
 * The discovery file `store.json` in HOOKRELAY_DATA_DIR (mode 0600): written when `start` serves
 * the store, removed when it stops. It names the socket folder; the URL is rebuilt from it, and
 * the folder must be the reader's own (0700), so the file can point nowhere else.
 */
const EmbeddedSocketInfoSchema = z.object({
  databaseUrl: z.string(),
  socketDir: z.string().refine((dir) => path.isAbsolute(dir), 'must be an absolute path'),
  pid: z.number().int().min(1),
  startedAt: z.string().optional(),
});
type EmbeddedSocketInfo = z.infer<typeof EmbeddedSocketInfoSchema>;

/** `<dataDir>/run`, or a private folder in the temp dir when that path is too long for a socket. */
function socketFolder(dataDir: string): { dir: string; temporary: boolean } {
  const inDataDir = path.resolve(dataDir, 'run');
  if (path.join(inDataDir, SOCKET_FILE).length <= MAX_SOCKET_PATH) return { dir: inDataDir, temporary: false };
  return { dir: mkdtempSync(path.join(os.tmpdir(), 'hookrelay-')), temporary: true };
}

/**
 * Serve the embedded PGlite store on a unix socket in a 0700 folder, so the CLI and a server app
 * of the same user on this machine connect with `pg` while this process owns the folder, and no
 * other local user can (pglite-socket has no authentication of its own). Returns the
 * DATABASE_URL and a stop().
 */
export async function serveEmbeddedStore(store: Store, dataDir: string): Promise<{ databaseUrl: string; stop(): Promise<void> }> {
  if (store.kind !== 'pglite' || !store.pglite) throw new Error('serveEmbeddedStore needs the embedded (PGlite) store');
  const { PGLiteSocketServer } = await importEmbedded('@electric-sql/pglite-socket');
  ensurePrivateDir(dataDir, { followLinks: true });
  const socket = socketFolder(dataDir);
  ensurePrivateDir(socket.dir);
  const socketPath = path.join(socket.dir, SOCKET_FILE);
  // Left by a start that was killed: this process owns the folder now (the file is ours: 0700 folder).
  rmSync(socketPath, { force: true });
  const server = new PGLiteSocketServer({ db: store.pglite as unknown as PGlite, path: socketPath, maxConnections: 16 });
  await server.start();
  const databaseUrl = socketUrl(socket.dir);
  const file = embeddedSocketFile(dataDir);
  const info: EmbeddedSocketInfo = { databaseUrl, socketDir: socket.dir, pid: process.pid, startedAt: new Date().toISOString() };
  // Written whole (0600, never through a link left at the staged name) then renamed: a reader never sees half a file.
  const staged = `${file}.${process.pid}.tmp`;
  rmSync(staged, { force: true });
  writeFileSync(staged, `${JSON.stringify(info)}\n`, { mode: PRIVATE_FILE_MODE, flag: 'wx' });
  renameSync(staged, file);
  return {
    databaseUrl,
    async stop() {
      rmSync(file, { force: true });
      await server.stop();
      rmSync(socketPath, { force: true });
      if (socket.temporary) rmSync(socket.dir, { recursive: true, force: true });
    },
  };
}

/**
 * What the discovery file of a data dir says: a live `start` process of this user (and the URL of
 * its socket), a stale file, a file that is not to be believed (and why), or nothing.
 */
export type EmbeddedSocketLookup =
  | { state: 'live'; file: string; databaseUrl: string; pid: number }
  | { state: 'stale'; file: string; pid?: number }
  | { state: 'untrusted'; file: string; reason: string }
  | { state: 'none'; file: string };

/**
 * W7: `store.json` is believed only when it is a regular file (not a link) the current user owns
 * and alone may write, naming a running process of this user and a socket folder of this user's
 * (0700). Anything else is `untrusted` with the reason, and nothing it names is connected to.
 */
export function lookupEmbeddedSocket(dataDir: string): EmbeddedSocketLookup {
  const file = embeddedSocketFile(dataDir);
  const fileProblem = ownFileProblem(file);
  if (fileProblem === 'is missing') return { state: 'none', file };
  if (fileProblem !== undefined) return { state: 'untrusted', file, reason: fileProblem };
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    return { state: 'stale', file };
  }
  // The process first: a file whose writer is gone is stale whatever else it says.
  const pid = EmbeddedSocketInfoSchema.shape.pid.safeParse((parsed as { pid?: unknown } | null)?.pid);
  if (pid.success) {
    const owner = ownProcessProblem(pid.data);
    if (owner?.gone === true) return { state: 'stale', file, pid: pid.data };
    if (owner !== undefined) return { state: 'untrusted', file, reason: owner.problem };
  }
  const checked = EmbeddedSocketInfoSchema.safeParse(parsed);
  if (!checked.success) return { state: 'stale', file };
  const info = checked.data;
  const folderProblem = ownFolderProblem(info.socketDir, { anyAccess: true });
  if (folderProblem !== undefined) return { state: 'untrusted', file, reason: `names the socket folder ${info.socketDir}, which ${folderProblem}` };
  return { state: 'live', file, databaseUrl: socketUrl(info.socketDir), pid: info.pid };
}
