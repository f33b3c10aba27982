import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';

/**
 * A worker thread running the module `name` (without extension) beside `base` (a module's
 * `import.meta.url`): `.ts` when running from source (tsx, vitest), `.js` in the compiled `dist/`.
 * On Node 20, `execArgv: ['--import', 'tsx']` does not reach a worker's own module loader
 * ("Unknown file extension .ts"), so a `.ts` worker is started through tsx's `tsImport`, which
 * registers the loader inside the worker first. tsx is resolved from here, not from the cwd.
 */
export function spawnWorkerModule(base: string, name: string, options: { workerData?: unknown } = {}): Worker {
  if (!fileURLToPath(base).endsWith('.ts')) return new Worker(new URL(`./${name}.js`, base), options);
  return new Worker(workerModuleSourceTs(base, name), { ...options, eval: true });
}

/** The eval source of a worker thread that runs `<name>.ts` beside `base` through tsx (see above). */
export function workerModuleSourceTs(base: string, name: string): string {
  const workerUrl = new URL(`./${name}.ts`, base).href;
  // `require.resolve` picks the package's CJS build; its ESM twin is the `.mjs` beside it.
  const tsxApiUrl = pathToFileURL(
    createRequire(import.meta.url)
      .resolve('tsx/esm/api')
      .replace(/\.cjs$/, '.mjs'),
  ).href;
  return `import(${JSON.stringify(tsxApiUrl)}).then((tsx) => tsx.tsImport(${JSON.stringify(workerUrl)}, ${JSON.stringify(base)}))`;
}
