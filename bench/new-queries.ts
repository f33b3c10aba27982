/**
 * Catalog search of queries the service has not seen before, as a gateway's every new turn: the
 * time of `POST /v1/catalogs/{catalog}/search` (hybrid, over HTTP) for each query once, the query's
 * embedding included (bench/catalog-search.ts and bench:scale's p50 cache it). Over a dataset's
 * catalog (toolbench_stable's 2,490 tools by default) in an in-memory PGlite, or PostgreSQL when
 * DATABASE_URL is set; its queries as written and, a different slice of them, with the eval's
 * seeded typos (a query the catalog's words correct).
 *
 *   npm run bench:new-queries -- [--dataset <dir>] [--queries 60] [--typos 0.2] [--seed 1]
 *                                    [--baseline-root <tree>] [--passes 2]
 *
 * With `--baseline-root` (another checkout sharing this tree's node_modules), each tree runs in a
 * process of its own, alternating, `--passes` times; the last line compares their medians.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { median, summarize } from './lib/stats.js';

const { values } = parseArgs({
  options: {
    dataset: { type: 'string', default: fileURLToPath(new URL('../../shared/eval/toolbench_stable', import.meta.url)) },
    queries: { type: 'string', default: '60' },
    typos: { type: 'string', default: '0.2' },
    seed: { type: 'string', default: '1' },
    root: { type: 'string', default: fileURLToPath(new URL('..', import.meta.url)) },
    'baseline-root': { type: 'string' },
    passes: { type: 'string', default: '2' },
  },
});

interface TreeRun {
  root: string;
  /** Per query, in ms: as written; with typos. */
  written_ms: number[];
  typos_ms: number[];
}

const lines = (file: string) =>
  readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, unknown>);

/** One tree, in this process: its own modules, imported from its root. */
async function runTree(root: string): Promise<TreeRun> {
  const { startInProcess } = await import(`${root}/bench/lib/in-process.ts`);
  const { openPostgres } = await import(`${root}/src/store/database.ts`);
  const { addTypos } = await import(`${root}/src/eval/typos.ts`);
  const { seededRandom } = await import(`${root}/src/eval/seeded-random.ts`);
  const count = Number(values.queries);
  const queries = lines(`${values.dataset}/queries.dev.jsonl`).map((query) => String(query.query));
  const random = seededRandom(Number(values.seed));
  const written = queries.slice(0, count);
  const typos = queries.slice(count, 2 * count).map((query) => addTypos(query, Number(values.typos), random) as string);
  let database: ReturnType<typeof openPostgres> | undefined;
  if (process.env.DATABASE_URL) {
    database = openPostgres(process.env.DATABASE_URL);
    await database.migrate();
  }
  const service = await startInProcess({ EMBED_MODEL: 'use-lite', CATALOG_WARMUP: 'false' }, database);
  const catalog = `new-queries-${Date.now().toString(36)}`;
  const call = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${service.base}${path}`, {
      method,
      headers: { 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    if (!response.ok) throw new Error(`${method} ${path} answered ${response.status}: ${(await response.text()).slice(0, 300)}`);
    return (await response.json()) as Record<string, any>;
  };
  try {
    await call('PUT', `/v1/catalogs/${catalog}`, { tools: lines(`${values.dataset}/catalog.jsonl`) });
    for (;;) {
      const { embedding } = await call('GET', `/v1/catalogs/${catalog}`);
      if (embedding.done + embedding.failed >= embedding.total) break;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    // Untimed: the catalog's index read, and the model's and the ranking's first calls.
    for (const query of queries.slice(-5)) await call('POST', `/v1/catalogs/${catalog}/search`, { query, top_k: 10 });
    const timed = async (query: string) => {
      const started = performance.now();
      await call('POST', `/v1/catalogs/${catalog}/search`, { query, top_k: 10 });
      return performance.now() - started;
    };
    const run: TreeRun = { root, written_ms: [], typos_ms: [] };
    for (const query of written) run.written_ms.push(await timed(query));
    for (const query of typos) run.typos_ms.push(await timed(query));
    return run;
  } finally {
    await service.close();
  }
}

/** One tree in a child process of its own, so that two trees never share a module or a cache. */
async function runChild(root: string): Promise<TreeRun> {
  const args = [
    '--import',
    'tsx',
    fileURLToPath(import.meta.url),
    '--root',
    root,
    '--dataset',
    values.dataset!,
    '--queries',
    values.queries!,
    '--typos',
    values.typos!,
    '--seed',
    values.seed!,
  ];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  let stdout = '';
  child.stdout.on('data', (chunk) => (stdout += String(chunk)));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  if (code !== 0) throw new Error(`${root}: exited with ${code}`);
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as TreeRun;
}

const round1 = (ms: number) => Math.round(ms * 10) / 10;
const ratio = (tree: number, baseline: number) => Math.round((100 * tree) / baseline) / 100;
const line = (label: string, run: TreeRun) => {
  const [written, typos] = [summarize(run.written_ms), summarize(run.typos_ms)];
  return `${label}: as written p50 ${round1(written.p50)} p90 ${round1(written.p90)} ms; with typos p50 ${round1(typos.p50)} p90 ${round1(typos.p90)} ms`;
};
if (!values['baseline-root']) {
  const run = await runTree(values.root!);
  console.error(line(values.root!, run));
  console.log(JSON.stringify(run));
  process.exit(0);
} else {
  const runs: { baseline: TreeRun[]; tree: TreeRun[] } = { baseline: [], tree: [] };
  for (let pass = 0; pass < Number(values.passes); pass++) {
    runs.baseline.push(await runChild(values['baseline-root']));
    runs.tree.push(await runChild(values.root!));
  }
  const p50 = (list: TreeRun[], key: 'written_ms' | 'typos_ms') => round1(median(list.map((run) => summarize(run[key]).p50)));
  console.log(
    JSON.stringify({
      baseline: {
        written_p50_ms: runs.baseline.map((run) => round1(summarize(run.written_ms).p50)),
        typos_p50_ms: runs.baseline.map((run) => round1(summarize(run.typos_ms).p50)),
      },
      tree: {
        written_p50_ms: runs.tree.map((run) => round1(summarize(run.written_ms).p50)),
        typos_p50_ms: runs.tree.map((run) => round1(summarize(run.typos_ms).p50)),
      },
      ratio: {
        written: ratio(p50(runs.tree, 'written_ms'), p50(runs.baseline, 'written_ms')),
        typos: ratio(p50(runs.tree, 'typos_ms'), p50(runs.baseline, 'typos_ms')),
      },
    }),
  );
}
