// Build step: run the embedded store's initdb and the migrations once and ship the result, so that
// `npm start` in an empty folder unpacks it instead of running initdb (3–5 s and ~500 MB of RSS
// kept) and every migration (~1 s). Writes dist/store/pgdata-template.tar.gz and
// dist/store/pgdata-template.json ({ pglite, migrations }: src/store/embeddedTemplate.ts uses the
// template only with that PGlite version; the start still migrates, so a template older than the
// migrations only costs time). Skipped when the optional @electric-sql/pglite is not installed, and
// when the template for its version and these migrations exists.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const outDir = path.join(root, 'dist/store');
const tarball = path.join(outDir, 'pgdata-template.tar.gz');
const metaFile = path.join(outDir, 'pgdata-template.json');

let version;
try {
  const entry = createRequire(import.meta.url).resolve('@electric-sql/pglite');
  version = JSON.parse(readFileSync(path.resolve(path.dirname(entry), '../package.json'), 'utf8')).version;
} catch {
  console.log('pgdata-template: @electric-sql/pglite is not installed; the embedded store will run initdb at its first start');
  process.exit(0);
}
const migrationsFolder = path.join(root, 'migrations');
const migrations = createHash('sha256')
  .update(readFileSync(path.join(migrationsFolder, 'meta/_journal.json')))
  .digest('hex')
  .slice(0, 16);
if (existsSync(tarball) && existsSync(metaFile)) {
  const meta = JSON.parse(readFileSync(metaFile, 'utf8'));
  if (meta.pglite === version && meta.migrations === migrations) process.exit(0);
}

const { PGlite } = await import('@electric-sql/pglite');
const { drizzle } = await import('drizzle-orm/pglite');
const { migrate } = await import('drizzle-orm/pglite/migrator');
// In memory, with PGlite's defaults: the same initdb PGlite runs for a new folder on disk; then the
// migrations as migrateStore applies them to the embedded store (bookkeeping in `public`).
const pg = await PGlite.create();
await migrate(drizzle(pg), { migrationsFolder, migrationsSchema: 'public' });
const dump = await pg.dumpDataDir('gzip');
await pg.close();
mkdirSync(outDir, { recursive: true });
writeFileSync(tarball, Buffer.from(await dump.arrayBuffer()));
writeFileSync(metaFile, `${JSON.stringify({ pglite: version, migrations })}\n`);
console.log(`pgdata-template: ${path.relative(root, tarball)} for @electric-sql/pglite ${version}`);
process.exit(0);
