import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { loadConfigOrExit } from '../config.js';
import { createDeps } from '../deps.js';
import { runEval } from '../eval/run-eval.js';
import type { SearchMode } from '../search/hybrid-search.js';
import { openPglite, openPostgres } from '../store/database.js';

/**
 * npm run eval -- --dataset <dir> [--queries <file>] [--modes bm25,vector,hybrid] [--out <file>]
 * Uses DATABASE_URL when set, otherwise a throw-away in-memory PGlite (never the service's DATA_DIR).
 */
const { values } = parseArgs({
  options: {
    dataset: { type: 'string' },
    queries: { type: 'string' },
    modes: { type: 'string', default: 'hybrid,bm25,vector' },
    out: { type: 'string' },
    json: { type: 'boolean', default: false },
  },
});
if (!values.dataset) {
  console.error('usage: npm run eval -- --dataset <dir> [--queries <file>] [--modes hybrid,bm25,vector] [--out <file>] [--json]');
  process.exit(2);
}
const modes = values.modes!.split(',').map((mode) => mode.trim()) as SearchMode[];
for (const mode of modes) {
  if (!['bm25', 'vector', 'hybrid'].includes(mode)) {
    console.error(`unknown mode "${mode}": use bm25, vector, hybrid`);
    process.exit(2);
  }
}

const config = loadConfigOrExit({ ...process.env, LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn' });
const database = config.DATABASE_URL ? openPostgres(config.DATABASE_URL) : await openPglite('memory://');
await database.migrate();
const deps = await createDeps(config, { database, logger: pino({ level: config.LOG_LEVEL }) });
try {
  const started = performance.now();
  const report = await runEval(deps, {
    dataset: values.dataset,
    queries: values.queries,
    modes,
    onProgress: (message) => console.error(`[eval] ${message} (${((performance.now() - started) / 1000).toFixed(1)} s)`),
  });
  if (values.out) {
    writeFileSync(values.out, report.rankings.map((row) => JSON.stringify(row)).join('\n') + '\n');
  }
  if (values.json) {
    console.log(JSON.stringify({ dataset: report.dataset, tools: report.tools, model: deps.embedderStatus.modelId, modes: report.modes }));
  } else {
    const queries = Object.values(report.modes)[0]?.queries ?? 0;
    console.log(`dataset ${report.dataset}: ${report.tools} tools, ${queries} queries, model ${deps.embedderStatus.modelId} (${deps.embedderStatus.state}), store ${database.kind}`);
    console.log('mode     R@1    R@5    R@10   nDCG@10 MRR@10 groupR@10');
    for (const [mode, m] of Object.entries(report.modes)) {
      const cells = [m.recall1, m.recall5, m.recall10, m.ndcg10, m.mrr10].map((value) => value.toFixed(3).padEnd(6));
      console.log(`${mode.padEnd(8)} ${cells.join(' ')} ${m.groupRecall10 === undefined ? '-' : m.groupRecall10.toFixed(3)}`);
    }
  }
} finally {
  await deps.close();
  await database.close();
}
