import { defineConfig } from 'vitest/config';

/** `npm run test:chaos`: bounded fault-injection runs against the real worker process, one file at a time. */
export default defineConfig({
  test: {
    // The e2e tests spawn the bin, which runs dist/: build it first.
    globalSetup: ['test/support/buildDist.ts'],
    include: ['test/chaos/**/*.test.ts'],
    // Each file kills processes, flushes its own Redis db or terminates its own Postgres backends:
    // run them one after another so they neither share nor starve each other.
    fileParallelism: false,
    maxWorkers: 1,
    testTimeout: 120_000,
    hookTimeout: 60_000,
  },
});
