#!/usr/bin/env -S node --max-semi-space-size=16 --max-old-space-size=384
// The V8 flags bound the worker's heap (old space 384 MB; an 8 MB young generation, which
// halves scavenge work against the 2 MB of earlier versions: +15 % deliveries/s for ~10 MB RSS;
// peak RSS ~132 MB draining 100,000 queued); `npm start` and the Dockerfile pass the same ones.
// Runs the compiled JavaScript in dist/ with plain node (built by `npm run build`: at pack time
// through `prepack`, in a clone by `npm start` when dist/ is missing or stale; never at install time).
let cli;
try {
  cli = await import('../dist/entry/cli.js');
} catch (error) {
  if (error?.code === 'ERR_MODULE_NOT_FOUND' && String(error.message).includes('/dist/entry/cli.js')) {
    process.stderr.write('hookrelay: dist/ is missing: run `npm run build` in the hookrelay folder (`npm start` builds it when it is missing)\n');
    process.exit(2);
  }
  throw error;
}
await cli.runCli(process.argv);
