import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: ['test/chaos/**', 'node_modules/**'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // 2-core machine: keep parallelism modest so integration tests do not starve each other.
    maxWorkers: 2,
  },
});
