/**
 * The embedded store's start-up, sized for one machine.
 *
 * A fresh PGlite folder costs an `initdb`: PGlite runs it in a second, in-memory Postgres plus the
 * initdb WebAssembly module, then copies the result to disk — 3–5 s and ~500 MB of WebAssembly
 * memories and buffers that V8 does not give back while the worker idles (810–860 MB RSS). Instead
 * `npm run build` runs that initdb once (scripts/pgdata-template.mjs) and ships the result as
 * `dist/store/pgdata-template.tar.gz`; an empty folder is seeded from it when it was made by the
 * installed PGlite version, else PGlite's own initdb runs as before.
 */
import { closeSync, createReadStream, existsSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmdirSync, rmSync, writeSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createGunzip } from 'node:zlib';

/**
 * Postgres settings of the embedded store (GUCs, after PGlite's own start parameters). PGlite
 * starts with shared_buffers ≈ 160 MB, most of it touched inside the WebAssembly memory; one
 * machine's ledger works from 16 MB of buffers plus the OS page cache (PGlite reads files through
 * it). max_connections sizes shared memory only: PGlite is one backend, the socket server
 * multiplexes its clients onto it. Durability is PGlite's: it runs Postgres with fsync off (`-F`).
 */
export const EMBEDDED_POSTGRES_SETTINGS: Readonly<Record<string, string>> = {
  shared_buffers: '16MB',
  max_connections: '10',
  maintenance_work_mem: '16MB',
};

/** PGlite's default start parameters followed by EMBEDDED_POSTGRES_SETTINGS as `-c name=value`. */
export function embeddedStartParams(pgliteDefaults: readonly string[]): string[] {
  return [...pgliteDefaults, ...Object.entries(EMBEDDED_POSTGRES_SETTINGS).flatMap(([name, value]) => ['-c', `${name}=${value}`])];
}

const STORE_DIST = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../dist/store');
/** The initdb output shipped by the build (from src/store or dist/store: the package's dist/store). */
export const PGDATA_TEMPLATE_FILE = path.join(STORE_DIST, 'pgdata-template.tar.gz');
/** `{ "pglite": "<version that made it>" }`: a template only seeds folders for that PGlite. */
const PGDATA_TEMPLATE_META = path.join(STORE_DIST, 'pgdata-template.json');

/** The installed @electric-sql/pglite version, or undefined when it cannot be read. */
function installedPgliteVersion(): string | undefined {
  try {
    const entry = createRequire(import.meta.url).resolve('@electric-sql/pglite');
    // …/node_modules/@electric-sql/pglite/dist/index.cjs → the package folder.
    let dir = path.dirname(entry);
    for (let i = 0; i < 3; i++, dir = path.dirname(dir)) {
      const file = path.join(dir, 'package.json');
      if (!existsSync(file)) continue;
      const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
      if (pkg.name === '@electric-sql/pglite') return pkg.version;
    }
  } catch {
    // not installed or unreadable: no template
  }
  return undefined;
}

function usableTemplate(): boolean {
  if (!existsSync(PGDATA_TEMPLATE_FILE) || !existsSync(PGDATA_TEMPLATE_META)) return false;
  try {
    const meta = JSON.parse(readFileSync(PGDATA_TEMPLATE_META, 'utf8')) as { pglite?: unknown };
    return typeof meta.pglite === 'string' && meta.pglite === installedPgliteVersion();
  } catch {
    return false;
  }
}

/** `name` from a ustar header field: NUL-terminated ASCII. */
function field(header: Buffer, start: number, length: number): string {
  const raw = header.subarray(start, start + length);
  const end = raw.indexOf(0);
  return raw.subarray(0, end === -1 ? length : end).toString('utf8');
}

/** The entry's path inside `root`; throws on anything that would leave it. */
function entryPath(root: string, name: string): string {
  const relative = path.normalize(name.replace(/^\/+/, ''));
  if (relative === '.' || relative === '') return root;
  if (relative.startsWith('..') || path.isAbsolute(relative) || relative.includes('\0'))
    throw new Error(`pgdata template: unsafe entry ${JSON.stringify(name)}`);
  return path.join(root, relative);
}

/**
 * Streams a .tar.gz (ustar: regular files and folders only) into `root`, a chunk at a time, so the
 * 40 MB of the unpacked folder never sit in memory at once.
 */
export async function extractTarGz(file: string, root: string): Promise<void> {
  let pending: Buffer = Buffer.alloc(0);
  let fd: number | undefined;
  let remaining = 0; // bytes of the current file still to write
  let padding = 0; // bytes to skip to the next 512-byte block
  try {
    for await (const chunk of createReadStream(file).pipe(createGunzip()) as AsyncIterable<Buffer>) {
      pending = pending.length > 0 ? Buffer.concat([pending, chunk]) : chunk;
      let offset = 0;
      for (;;) {
        if (remaining > 0) {
          const n = Math.min(remaining, pending.length - offset);
          if (n === 0) break;
          writeSync(fd!, pending, offset, n);
          offset += n;
          remaining -= n;
          if (remaining === 0) {
            closeSync(fd!);
            fd = undefined;
          }
          continue;
        }
        if (padding > 0) {
          const n = Math.min(padding, pending.length - offset);
          if (n === 0) break;
          offset += n;
          padding -= n;
          continue;
        }
        if (pending.length - offset < 512) break;
        const header = pending.subarray(offset, offset + 512);
        offset += 512;
        if (header.every((b) => b === 0)) continue; // the end-of-archive blocks
        const prefix = field(header, 345, 155);
        const name = prefix ? `${prefix}/${field(header, 0, 100)}` : field(header, 0, 100);
        const size = Number.parseInt(field(header, 124, 12).trim() || '0', 8);
        const mode = Number.parseInt(field(header, 100, 8).trim() || '600', 8) & 0o777;
        const type = String.fromCharCode(header[156] ?? 0);
        const target = entryPath(root, name);
        if (type === '5') {
          mkdirSync(target, { recursive: true, mode: 0o700 });
        } else if (type === '0' || type === '\0') {
          mkdirSync(path.dirname(target), { recursive: true, mode: 0o700 });
          fd = openSync(target, 'w', mode || 0o600);
          remaining = size;
          padding = (512 - (size % 512)) % 512;
          if (size === 0) {
            closeSync(fd);
            fd = undefined;
          }
        } else {
          throw new Error(`pgdata template: unsupported entry type ${JSON.stringify(type)} for ${name}`);
        }
      }
      pending = pending.subarray(offset);
    }
    if (remaining > 0) throw new Error('pgdata template: truncated archive');
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * Seeds an empty (or missing) PGlite folder from the shipped template; false when there is no
 * usable template (PGlite then runs initdb) or the folder already holds something. Unpacks beside
 * the folder and renames, so a crash mid-way never leaves a half folder that looks initialised.
 */
export async function seedFromTemplate(pgdata: string): Promise<boolean> {
  if (existsSync(pgdata) && readdirSync(pgdata).length > 0) return false;
  if (!usableTemplate()) return false;
  const staging = `${pgdata}.seeding-${process.pid}`;
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true, mode: 0o700 });
  try {
    await extractTarGz(PGDATA_TEMPLATE_FILE, staging);
    if (!existsSync(path.join(staging, 'PG_VERSION'))) throw new Error('pgdata template: no PG_VERSION');
    if (existsSync(pgdata)) rmdirSync(pgdata); // empty (checked above); throws if it no longer is
    renameSync(staging, pgdata);
    return true;
  } catch (error) {
    rmSync(staging, { recursive: true, force: true });
    throw error;
  }
}
