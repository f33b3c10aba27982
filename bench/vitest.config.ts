import { defineConfig } from 'vitest/config';

/**
 * `npm run bench:smoke`: the benches end to end at tiny loads, one file at a time, so CI catches a
 * bench that no longer runs. Kept out of `npm test` (test/**): each bench starts its own service
 * processes, and the suite's files share one process and its model workers.
 */
export default defineConfig({
  test: {
    include: ['bench/**/*.test.ts'],
    pool: 'forks',
    poolOptions: { forks: { singleFork: true } },
    fileParallelism: false,
    testTimeout: 300_000,
    reporters: ['default'],
  },
});
