import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { defineConfig } from 'vitest/config';

/**
 * What in a test file (or a test helper it imports) opens the store the run is given
 * (DATABASE_URL, else PGlite): the shared test database, deps built from the config, the
 * service started as a process.
 */
const OPENS_THE_STORE =
  /testDatabase|createDeps|openDatabase|openPglite|openPostgres|DATABASE_URL|\bspawn\w*\(|startService|startEverything|main\.(js|ts)|runBench/;

/**
 * A file that never opens the store the run is given says so (an embedded PGlite of its own, a
 * service started with DATABASE_URL emptied, or only the text of a file that does).
 */
const STORE_INDEPENDENT = /^\/\/ @store-independent\b/m;

/** Whether `file`, or a test or bench helper it imports (transitively), opens the store. */
function opensTheStore(file: string, seen = new Set<string>()): boolean {
  if (seen.has(file)) return false;
  seen.add(file);
  const text = readFileSync(file, 'utf8');
  if (seen.size === 1 && STORE_INDEPENDENT.test(text)) return false;
  if (OPENS_THE_STORE.test(text)) return true;
  for (const [, spec] of text.matchAll(/from\s+['"](\.{1,2}\/[^'"]+)['"]/g)) {
    const target = resolve(dirname(file), spec!).replace(/\.js$/, '.ts');
    if (/\/(test|bench)\//.test(target) && existsSync(target) && opensTheStore(target, seen)) return true;
  }
  return false;
}

const testFiles = (folder: string): string[] =>
  readdirSync(folder, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? testFiles(join(folder, entry.name)) : entry.name.endsWith('.test.ts') ? [join(folder, entry.name)] : [],
  );

/**
 * TEST_STORE_ONLY=1: only the files that open the store (.ci/run's second store: the rest ran
 * once already, on the first, and would only repeat themselves).
 */
const include = process.env.TEST_STORE_ONLY === '1' ? testFiles('test').filter((file) => opensTheStore(resolve(file))) : ['test/**/*.test.ts'];

export default defineConfig({
  test: {
    include,
    // One process for the whole run: integration tests share one database (a fresh PGlite costs
    // seconds) and the model workers; files run one after another against real services.
    pool: 'forks',
    poolOptions: { forks: { singleFork: true } },
    isolate: false,
    fileParallelism: false,
    testTimeout: 60_000,
    hookTimeout: 120_000,
    reporters: ['default'],
  },
});
