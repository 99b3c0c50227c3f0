import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: ['dist/**', 'node_modules/**'],
    globalSetup: ['test/setup/build.ts'],
    // Bounds, not expectations: a test waits for its condition, and a loaded 2-core machine makes it slower.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Three test files at a time on two cores: many wait on child processes, sockets and timers.
    maxWorkers: 3,
    // A worker process runs one file after another with the modules it already loaded (importing
    // src/ again for each file was a third of the suite's time). So a test file leaves no global
    // state behind: it restores process.env, mocks and timers it changes.
    isolate: false,
  },
});
