import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // The e2e tests spawn the bin, which runs dist/: build it first.
    globalSetup: ['test/support/buildDist.ts'],
    include: ['test/**/*.test.ts'],
    exclude: ['test/chaos/**', 'node_modules/**'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // 2-core machine: keep parallelism modest so integration tests do not starve each other.
    maxWorkers: 2,
  },
});
