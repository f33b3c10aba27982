import { defineConfig } from 'vitest/config';

/**
 * `npm run bench:smoke`: the benches end to end at tiny loads, two at a time, so CI catches a
 * bench that no longer runs. Kept out of `npm test` (test/**): each bench starts its own service
 * processes, and the suite's files share one process and its model workers.
 */
export default defineConfig({
  test: {
    include: ['bench/**/*.test.ts'],
    pool: 'forks',
    poolOptions: { forks: { singleFork: true } },
    fileParallelism: false,
    // The smoke runs two benches at once (bench/smoke.test.ts): 383 s one at a time on 2 cores.
    maxConcurrency: 2,
    testTimeout: 300_000,
    hookTimeout: 300_000,
    reporters: ['default'],
  },
});
