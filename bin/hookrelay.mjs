#!/usr/bin/env -S node --max-semi-space-size=16 --max-old-space-size=384
// The V8 flags bound the worker's heap (old space 384 MB; an 8 MB young generation, which
// halves scavenge work against the 2 MB of earlier versions: +15 % deliveries/s for ~10 MB RSS;
// peak RSS ~132 MB draining 100,000 queued); `npm start` and the Dockerfile pass the same ones.
// Runs the compiled JavaScript in dist/ with plain node (built by `npm run build`: at pack time
// through `prepack`, in a clone by `npm start` when dist/ is missing or stale; never at install time).
import { readFileSync, statSync } from 'node:fs';

const args = process.argv.slice(2);
if (args.length === 1 && (args[0] === '--version' || args[0] === '-V')) {
  // Answered from package.json alone: no module of dist/ loads (issue 50: an operator's loop).
  const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  process.stdout.write(`${version}\n`);
} else {
  // Node ≥ 22.1: keep V8's compiled code of the CLI's modules on disk, so each later command skips
  // compiling them again (an operator's loop). Absent on Node 20; NODE_DISABLE_COMPILE_CACHE=1 turns it off.
  const { enableCompileCache } = await import('node:module');
  enableCompileCache?.();
  // The long-running commands run the compiled modules as they are (BullMQ, OpenTelemetry, the console's
  // assets); every other command runs the one-bundle build of the same code (scripts/bundle-cli.mjs,
  // issue 50: ~290 modules to resolve and compile were most of a read command's time).
  const command = args.find((a) => !a.startsWith('-'));
  const compiled = command === 'start' || command === 'worker' || command === 'console' || bundleIsStale();
  const missing = (error, file) => error?.code === 'ERR_MODULE_NOT_FOUND' && String(error.message).includes(file);
  let cli;
  try {
    cli = compiled ? await import('../dist/entry/cli.js') : await import('../dist/cli-bundle/cli.js');
  } catch (error) {
    if (!compiled && missing(error, '/dist/cli-bundle/cli.js')) cli = await import('../dist/entry/cli.js').catch(missingDist);
    else missingDist(error);
  }
  await cli.runCli(process.argv);
}

function missingDist(error) {
  if (error?.code === 'ERR_MODULE_NOT_FOUND' && String(error.message).includes('/dist/entry/cli.js')) {
    process.stderr.write('hookrelay: dist/ is missing: run `npm run build` in the hookrelay folder (`npm start` builds it when it is missing)\n');
    process.exit(2);
  }
  throw error;
}

/** In a clone, a tsc run after the last `npm run build` (watch mode) leaves the bundle behind: run the compiled modules then. */
function bundleIsStale() {
  const mtime = (p) => statSync(new URL(p, import.meta.url), { throwIfNoEntry: false })?.mtimeMs;
  const compiledAt = mtime('../dist/.tsbuildinfo'); // absent in an installed package
  const bundledAt = mtime('../dist/cli-bundle/cli.js');
  return compiledAt !== undefined && bundledAt !== undefined && compiledAt > bundledAt;
}
