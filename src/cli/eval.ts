import { appendFileSync, existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { loadConfigOrExit } from '../config.js';
import { createDeps } from '../deps.js';
import { runEval, type EvalReport } from '../eval/run-eval.js';
import { runReplay, type ReplayCell, type ReplayRow, type ReplayScenario } from '../eval/replay.js';
import { DEFAULT_LEARNED_PARAMS, type LearnedParams } from '../ranking/learned.js';
import { seededRandom } from '../eval/seeded-random.js';
import { addTypos } from '../eval/typos.js';
import { formatMultilingualReport, runMultilingualEval } from '../eval/multilingual.js';
import type { SearchMode } from '../search/hybrid-search.js';
import { openPglite, openPostgres } from '../store/database.js';

const USAGE = `usage: npm run eval -- --dataset <dir> [--queries <file>] [--modes hybrid,bm25,vector] [--out <file>] [--json]
       npm run eval -- --all <folder of datasets> [--modes ...] [--json]
       add --vector-file <file> to keep the model's vectors in <file> and read them from there on the
       next run (name it after the model and its code: nothing in it says which model made it)
       add --typos <rate> [--seed <n>] to rank the queries again with each word of 4+ letters misspelled
       with that probability (seeded), reported beside the clean run with the share of nDCG@10 kept
       (with --out, the typo run's rankings go to the same file name with .typos before its extension)
       npm run eval -- --all <folder> --replay <folds> [--scenarios clean,noisy,flood,shown] [--learned-weights 1]
       replays learning from use: each fold's queries ranked after the other folds' were fed as feedback
       (src/eval/replay.ts), nDCG@10 / R@10 without and with learning, on all, fed and unfed queries
       (fed in full: every relevant tool fed); with --out, each held-out query's top 50 as JSON lines
       npm run eval -- --all <folder> --multilingual test/fixtures/multilingual
       ranks the labelled non-English queries (<corpus>.jsonl, and the English tasks they were written
       from, <corpus>.en.jsonl) over <folder>/<corpus>: nDCG@10 / R@10 per language, answers marked
       query_language, confidence calibration (src/eval/multilingual.ts)`;

/** Where --out puts the typo run's rankings: rankings.jsonl -> rankings.typos.jsonl. */
const typoOut = (file: string) => file.replace(/(\.[^./]*)?$/, (extension) => `.typos${extension}`);

/**
 * npm run eval: retrieval quality of the catalog search on labelled datasets (see ../shared/eval).
 * Uses DATABASE_URL when set, otherwise a throw-away in-memory PGlite (never the service's DATA_DIR).
 */
const { values } = parseArgs({
  options: {
    dataset: { type: 'string' },
    all: { type: 'string' },
    queries: { type: 'string' },
    modes: { type: 'string', default: 'hybrid,bm25,vector' },
    out: { type: 'string' },
    json: { type: 'boolean', default: false },
    typos: { type: 'string' },
    seed: { type: 'string', default: '1' },
    replay: { type: 'string' },
    multilingual: { type: 'string' },
    scenarios: { type: 'string', default: 'clean,noisy,flood' },
    'learned-weights': { type: 'string' },
    /** Settings of the learned list to replay, as a grid: "minSimilarity=0.5,0.7 weight=1,2" (LearnedParams names). */
    'learned-grid': { type: 'string' },
    'vector-file': { type: 'string' },
    help: { type: 'boolean', default: false },
  },
});
if (values.help) {
  console.log(USAGE);
  process.exit(0);
}
if (!values.dataset === !values.all) {
  console.error(USAGE);
  process.exit(2);
}
const modes = values.modes!.split(',').map((mode) => mode.trim()) as SearchMode[];
for (const mode of modes) {
  if (!['bm25', 'vector', 'hybrid'].includes(mode)) {
    console.error(`unknown mode "${mode}": use bm25, vector, hybrid`);
    process.exit(2);
  }
}
const typoRate = values.typos === undefined ? 0 : Number(values.typos);
const seed = Number(values.seed);
if (!(typoRate >= 0 && typoRate <= 1) || !Number.isInteger(seed)) {
  console.error('--typos takes a rate between 0 and 1, --seed an integer');
  process.exit(2);
}
const datasets = values.all
  ? readdirSync(values.all)
      .filter((name) => existsSync(join(values.all!, name, 'catalog.jsonl')))
      .sort()
      .map((name) => join(values.all!, name))
  : [values.dataset!];
if (datasets.length === 0) {
  console.error(`no datasets (folders with catalog.jsonl) in ${values.all}`);
  process.exit(2);
}

const config = loadConfigOrExit({ ...process.env, LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn' });
const database = config.DATABASE_URL ? openPostgres(config.DATABASE_URL) : await openPglite('memory://');
await database.migrate();
const deps = await createDeps(config, {
  database,
  logger: pino({ level: config.LOG_LEVEL }),
  ...(values['vector-file'] ? { vectorFile: values['vector-file'] } : {}),
});
if (values.multilingual !== undefined) {
  if (!values.all) {
    console.error('--multilingual <fixtures> needs --all <folder of datasets> (where its corpora are)');
    process.exit(2);
  }
  try {
    const started = performance.now();
    const rows = await runMultilingualEval(deps, {
      root: values.all,
      fixtures: values.multilingual,
      modes,
      onProgress: (message) => console.error(`[multilingual] ${message} (${((performance.now() - started) / 1000).toFixed(1)} s)`),
    });
    if (values.json) console.log(JSON.stringify({ model: deps.embedderStatus.modelId, store: database.kind, rows }));
    else console.log(`model ${deps.embedderStatus.modelId}, store ${database.kind}\n${formatMultilingualReport(rows)}`);
  } finally {
    await deps.close();
    await database.close();
  }
  process.exit(0);
}
const cell = (value: number | undefined) => (value === undefined ? '-'.padEnd(6) : value.toFixed(3).padEnd(6));
if (values.replay !== undefined) {
  const folds = Number(values.replay);
  const scenarios = values.scenarios!.split(',').map((name) => name.trim()) as ReplayScenario[];
  const grid = `${values['learned-grid'] ?? ''} ${values['learned-weights'] ? `weight=${values['learned-weights']}` : ''}`
    .trim()
    .split(/\s+/)
    .filter(Boolean)
    .map((axis) => {
      const [name, list = ''] = axis.split('=');
      return { name: name as keyof LearnedParams, values: list.split(',').map(Number) };
    });
  let settings: Record<string, number>[] = [{}];
  for (const axis of grid) settings = settings.flatMap((setting) => axis.values.map((value) => ({ ...setting, [axis.name]: value })));
  const labelled = new Map(
    settings.map((setting) => [
      Object.entries(setting)
        .map(([name, value]) => `${name}=${value}`)
        .join(' ') || 'default',
      setting,
    ]),
  );
  const badAxis = grid.find((axis) => !(axis.name in DEFAULT_LEARNED_PARAMS) || axis.values.some((value) => !(value >= 0)));
  if (!Number.isInteger(folds) || folds < 2 || scenarios.some((name) => !['clean', 'noisy', 'flood', 'shown'].includes(name)) || badAxis) {
    console.error(
      '--replay takes a number of folds (2 or more), --scenarios some of clean,noisy,flood,shown, --learned-grid "name=v1,v2 ..." of LearnedParams names and numbers >= 0',
    );
    process.exit(2);
  }
  try {
    const started = performance.now();
    const reports = [];
    if (values.out) writeFileSync(values.out, '');
    for (const dataset of datasets) {
      reports.push(
        await runReplay(deps, {
          ...(values.out ? { onRow: (row: ReplayRow) => appendFileSync(values.out!, `${JSON.stringify({ dataset, ...row })}\n`) } : {}),
          dataset,
          queries: values.queries,
          folds,
          scenarios,
          settings: labelled,
          seed,
          onProgress: (message) => console.error(`[replay] ${dataset}: ${message} (${((performance.now() - started) / 1000).toFixed(1)} s)`),
        }),
      );
    }
    if (values.json) {
      console.log(JSON.stringify({ model: deps.embedderStatus.modelId, store: database.kind, folds, reports }));
    } else {
      console.log(`replay, ${folds} folds, seed ${seed}; model ${deps.embedderStatus.modelId}, store ${database.kind}`);
      const pair = (part: { ndcg10: number; recall10: number }) => `${part.ndcg10.toFixed(3)} / ${part.recall10.toFixed(3)}`;
      for (const report of reports) {
        const { off } = report;
        console.log(
          `\ndataset ${report.dataset}: ${report.tools} tools; queries ${off.all.queries}, fed ${off.fed.queries} (in full ${off.fedInFull.queries}), unfed ${off.unfed.queries}`,
        );
        console.log(`${'run'.padEnd(48)} all nDCG/R@10   fed nDCG/R@10   unfed nDCG/R@10  fed gap closed  fed in full: nDCG/R@10, gap closed`);
        const closed = (on: number, before: number) => `${((100 * (on - before)) / Math.max(1e-9, 1 - before)).toFixed(1)}%`;
        const row = (label: string, value: ReplayCell, extra = '') =>
          console.log(
            `${label.padEnd(48)} ${pair(value.all)}   ${pair(value.fed)}   ${pair(value.unfed)}    ${
              value === off ? '-'.padEnd(6) : closed(value.fed.ndcg10, off.fed.ndcg10).padEnd(6)
            }          ${pair(value.fedInFull)}${value === off ? '' : `, ${closed(value.fedInFull.ndcg10, off.fedInFull.ndcg10)}`}${extra}`,
          );
        row('off', off);
        for (const [scenario, byWeight] of Object.entries(report.on)) {
          for (const [weight, value] of Object.entries(byWeight)) {
            const moved = scenario === 'flood' ? report.floodMoved?.[weight] : undefined;
            row(
              `${scenario} ${weight}`,
              value,
              moved
                ? `  top 3 the flood (${moved.tool}) changed unearned, against ${moved.against}: ${moved.moved} of ${off.all.queries}${moved.entered.length ? ` (${moved.entered.join(', ')})` : ''}`
                : '',
            );
          }
        }
      }
    }
  } finally {
    await deps.close();
    await database.close();
  }
  process.exit(0);
}
try {
  const started = performance.now();
  const reports: EvalReport[] = [];
  const typoReports: (EvalReport | undefined)[] = [];
  const progress = (dataset: string) => (message: string) =>
    console.error(`[eval] ${dataset}: ${message} (${((performance.now() - started) / 1000).toFixed(1)} s)`);
  for (const dataset of datasets) {
    reports.push(await runEval(deps, { dataset, queries: values.queries, modes, onProgress: progress(dataset) }));
    if (typoRate === 0) continue;
    const random = seededRandom(seed);
    typoReports.push(
      await runEval(deps, {
        dataset,
        queries: values.queries,
        modes,
        rewriteQuery: (query) => addTypos(query, typoRate, random),
        onProgress: progress(`${dataset} (typos)`),
      }),
    );
  }
  const report = reports[0]!;
  if (values.out && reports.length === 1) {
    writeFileSync(values.out, report.rankings.map((row) => JSON.stringify(row)).join('\n') + '\n');
    const typos = typoReports[0];
    if (typos) writeFileSync(typoOut(values.out), typos.rankings.map((row) => JSON.stringify(row)).join('\n') + '\n');
  }
  const kept = (index: number, mode: string) => {
    const clean = reports[index]!.modes[mode]?.ndcg10;
    const typo = typoReports[index]?.modes[mode]?.ndcg10;
    return clean === undefined || typo === undefined ? undefined : clean === 0 ? 1 : typo / clean;
  };
  if (values.json) {
    const rows = reports.map((entry, index) => ({
      dataset: entry.dataset,
      tools: entry.tools,
      model: deps.embedderStatus.modelId,
      modes: entry.modes,
      ...(typoReports[index] ? { typos: { rate: typoRate, seed, modes: typoReports[index]!.modes } } : {}),
    }));
    console.log(JSON.stringify(reports.length === 1 ? rows[0] : { datasets: rows }));
  } else {
    console.log(`model ${deps.embedderStatus.modelId} (${deps.embedderStatus.state}), store ${database.kind}`);
    for (const [index, entry] of reports.entries()) {
      const queries = Object.values(entry.modes)[0]?.queries ?? 0;
      console.log(`\ndataset ${entry.dataset}: ${entry.tools} tools, ${queries} queries`);
      console.log('mode     R@1    R@5    R@10   nDCG@10 MRR@10 groupR@10');
      for (const [mode, m] of Object.entries(entry.modes)) {
        console.log(
          `${mode.padEnd(8)} ${[m.recall1, m.recall5, m.recall10, m.ndcg10, m.mrr10].map(cell).join(' ')} ${m.groupRecall10 === undefined ? '-' : m.groupRecall10.toFixed(3)}`,
        );
      }
      const { hybrid, bm25, vector } = entry.modes;
      if (hybrid && bm25 && vector) {
        // The fused list should never lose to one of its own inputs (tolerance 0.005).
        const holds = (key: 'ndcg10' | 'recall10') => hybrid[key] >= Math.max(bm25[key], vector[key]) - 0.005;
        console.log(`hybrid >= max(bm25, vector) - 0.005: nDCG@10 ${holds('ndcg10') ? 'yes' : 'NO'}, R@10 ${holds('recall10') ? 'yes' : 'NO'}`);
      }
      const typo = typoReports[index];
      if (typo) {
        console.log(`typos ${typoRate} (seed ${seed}):`);
        for (const [mode, m] of Object.entries(typo.modes)) {
          console.log(
            `${mode.padEnd(8)} ${[m.recall1, m.recall5, m.recall10, m.ndcg10, m.mrr10].map(cell).join(' ')} nDCG@10 kept ${(100 * kept(index, mode)!).toFixed(1)}%`,
          );
        }
      }
    }
  }
} finally {
  await deps.close();
  await database.close();
}
