// Build step after tsc (issue 50): the CLI's operator commands as one bundle in dist/cli-bundle/,
// so a read command loads a few files instead of ~290 modules (zod and drizzle-orm are ~200 of
// them; resolving and compiling each one was most of a command's time). Only pure-JavaScript
// packages are bundled (BUNDLED); every other package stays an import from node_modules, loaded as
// before (BullMQ and its Lua scripts, ioredis, PGlite and its wasm, pino, OpenTelemetry). Lazy
// imports stay lazy (code splitting). The folder sits two levels under the package root like every
// compiled module, so `new URL('../../…', import.meta.url)` paths still reach package.json,
// migrations/ and assets/; the Lua scripts read beside their module are copied in beside the chunks.
// bin/hookrelay.mjs runs `start`, `worker` and `console` from dist/entry/cli.js, as compiled.
import { cpSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));
const outdir = `${root}dist/cli-bundle`;
const BUNDLED = new Set(['zod', 'drizzle-orm', 'commander', 'pg', 'pg-pool', 'pg-protocol', 'pg-types', 'pg-connection-string', 'pg-int8']);

const packageName = (specifier) =>
  specifier
    .split('/')
    .slice(0, specifier.startsWith('@') ? 2 : 1)
    .join('/');

rmSync(outdir, { recursive: true, force: true });
await build({
  entryPoints: [`${root}dist/entry/cli.js`],
  outdir,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  logLevel: 'warning',
  // CommonJS packages inside the bundle call require() for node: modules and for packages left outside.
  banner: { js: "import { createRequire as __hookrelayCreateRequire } from 'node:module'; const require = __hookrelayCreateRequire(import.meta.url);" },
  plugins: [
    {
      name: 'bundle-only-listed-packages',
      setup(b) {
        b.onResolve({ filter: /^[^./]/ }, (args) => {
          if (args.path.startsWith('node:') || BUNDLED.has(packageName(args.path))) return undefined;
          return { path: args.path, external: true };
        });
      },
    },
  ],
});
cpSync(`${root}dist/isolation/commands`, `${outdir}/commands`, { recursive: true });
