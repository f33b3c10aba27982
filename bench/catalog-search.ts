/**
 * Catalog search speed: the time per query of `POST /v1/catalogs/{catalog}/search`'s function
 * (`searchCatalog`, as `npm run eval` calls it) in hybrid and in bm25 mode, over a dataset's dev
 * queries, with the query embeddings already cached (so it times the store and the ranking, not the
 * model):
 *
 *   npm run bench:catalog -- [--dataset <dir>] [--rounds 3] [--baseline-root <tree>] [--passes 2]
 *
 * On PGlite in memory, or on PostgreSQL when DATABASE_URL is set. Each round runs every query once
 * per mode; the first pass over the queries (ingestion, embedding, the model's first queries) is not
 * timed. With `--baseline-root` (another checkout sharing this tree's node_modules, e.g. `git
 * worktree add /tmp/base <rev> && ln -s "$PWD/node_modules" /tmp/base/`), each tree runs in its own
 * process, alternating, `--passes` times, and the last line compares their medians.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { median } from './lib/stats.js';

const { values } = parseArgs({
  options: {
    dataset: { type: 'string', default: fileURLToPath(new URL('../../shared/eval/livemcpbench', import.meta.url)) },
    rounds: { type: 'string', default: '3' },
    root: { type: 'string', default: fileURLToPath(new URL('..', import.meta.url)) },
    'baseline-root': { type: 'string' },
    passes: { type: 'string', default: '2' },
  },
});

interface TreeRun {
  root: string;
  store: string;
  dataset: string;
  queries: number;
  hybrid_ms_per_query: number[];
  bm25_ms_per_query: number[];
}

/** One tree, in this process: its own modules, imported from its root. */
async function runTree(root: string): Promise<TreeRun> {
  const { pino } = await import('pino');
  const { loadConfigOrExit } = await import(`${root}/src/config.ts`);
  const { createDeps } = await import(`${root}/src/deps.ts`);
  const { runEval } = await import(`${root}/src/eval/run-eval.ts`);
  const { openPglite, openPostgres } = await import(`${root}/src/store/database.ts`);
  const config = loadConfigOrExit({ ...process.env, LOG_LEVEL: 'warn', EMBED_MODEL: 'use-lite' });
  const database = config.DATABASE_URL ? openPostgres(config.DATABASE_URL) : await openPglite('memory://');
  await database.migrate();
  const deps = await createDeps(config, { database, logger: pino({ level: 'warn' }) });
  const run: TreeRun = { root, store: database.kind, dataset: values.dataset!, queries: 0, hybrid_ms_per_query: [], bm25_ms_per_query: [] };
  try {
    for (let round = 0; round <= Number(values.rounds); round++) {
      // runEval reports each mode's end; the time since the previous report is that mode's queries.
      const took: Record<string, number> = {};
      let last = performance.now();
      const report = await runEval(deps, {
        dataset: values.dataset!,
        modes: ['hybrid', 'bm25'],
        onProgress: (message: string) => {
          const mode = /^(\w+) done$/.exec(message)?.[1];
          if (mode) took[mode] = performance.now() - last;
          last = performance.now();
        },
      });
      run.queries = report.modes.hybrid.queries;
      if (round === 0) continue;
      run.hybrid_ms_per_query.push(took.hybrid! / run.queries);
      run.bm25_ms_per_query.push(took.bm25! / run.queries);
    }
  } finally {
    await deps.close();
    await database.close();
  }
  return run;
}

/** One tree in a child process of its own, so that two trees never share a module or a cache. */
async function runChild(root: string): Promise<TreeRun> {
  const script = fileURLToPath(import.meta.url);
  const child = spawn(process.execPath, ['--import', 'tsx', script, '--root', root, '--dataset', values.dataset!, '--rounds', values.rounds!], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let stdout = '';
  child.stdout.on('data', (chunk) => (stdout += String(chunk)));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  if (code !== 0) throw new Error(`${root}: exited with ${code}`);
  const line = stdout.trim().split('\n').at(-1)!;
  console.log(line);
  return JSON.parse(line) as TreeRun;
}

const round2 = (x: number) => Math.round(x * 100) / 100;
if (!values['baseline-root']) {
  const run = await runTree(values.root!);
  console.log(JSON.stringify({ ...run, hybrid_ms_per_query: run.hybrid_ms_per_query.map(round2), bm25_ms_per_query: run.bm25_ms_per_query.map(round2) }));
} else {
  const runs: { baseline: TreeRun[]; tree: TreeRun[] } = { baseline: [], tree: [] };
  for (let pass = 0; pass < Number(values.passes); pass++) {
    runs.baseline.push(await runChild(values['baseline-root']));
    runs.tree.push(await runChild(values.root!));
  }
  const hybrid = (list: TreeRun[]) => median(list.flatMap((run) => run.hybrid_ms_per_query));
  console.log(
    JSON.stringify({
      baseline_hybrid_ms: round2(hybrid(runs.baseline)),
      tree_hybrid_ms: round2(hybrid(runs.tree)),
      ratio: round2(hybrid(runs.tree) / hybrid(runs.baseline)),
    }),
  );
}
