/**
 * `npm run fit:confidence`: fits the confidence model (ranking/confidence.ts) on the dev splits of
 * every corpus under ../shared/eval and reports its calibration: in sample, and for each corpus
 * fitted on the others only (leave-one-corpus-out), as expected calibration error (ECE, 10 equal-
 * width bins, weighted by count) and a reliability table. `--write` stores the all-corpora fit in
 * src/ranking/confidence-model.ts.
 *
 *   npm run fit:confidence -- [--root ../shared/eval] [--depth 10] [--write]
 *
 * Examples: each query's top `--depth` hybrid results, labelled relevant or not by the corpus's
 * judgements. Each corpus weighs the same in a fit (its examples are weighted by 1 / its count), so
 * bfcl's 736 queries do not decide the model for livemcpbench's 24.
 */
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { loadConfigOrExit } from '../config.js';
import { createDeps } from '../deps.js';
import { runEval } from '../eval/run-eval.js';
import { calibration, fitLogistic, type Example } from '../eval/calibration.js';
import { CONFIDENCE_FEATURES, confidenceFeatures, type ConfidenceModel } from '../ranking/confidence.js';
import { FITTED_CONFIDENCE } from '../ranking/confidence-model.js';
import { openPglite } from '../store/database.js';

const { values } = parseArgs({
  options: {
    root: { type: 'string', default: fileURLToPath(new URL('../../../shared/eval', import.meta.url)) },
    depth: { type: 'string', default: '10' },
    write: { type: 'boolean', default: false },
  },
});
const depth = Number(values.depth);

const corpora = readdirSync(values.root!)
  .filter((name) => existsSync(join(values.root!, name, 'catalog.jsonl')))
  .sort();
const config = loadConfigOrExit({ ...process.env, LOG_LEVEL: 'warn', DATABASE_URL: '' });
const examples = new Map<string, Example[]>();
for (const corpus of corpora) {
  // A fresh store per corpus: the list statistics are the corpus's alone.
  const database = await openPglite('memory://');
  await database.migrate();
  const deps = await createDeps(config, { database, logger: pino({ level: 'warn' }) });
  const rows: Example[] = [];
  try {
    await runEval(deps, {
      dataset: join(values.root!, corpus),
      modes: ['hybrid'],
      onResult: (query, _mode, result) => {
        const relevant = new Set([...query.relevant, ...(query.relevant_groups ?? []).flat()]);
        result.tools.slice(0, depth).forEach((tool, index) => {
          rows.push({ x: confidenceFeatures({ rank: index + 1, ...tool.explain }, result.bests), y: relevant.has(tool.id) ? 1 : 0 });
        });
      },
    });
  } finally {
    await deps.close();
    await database.close();
  }
  examples.set(corpus, rows);
  console.error(`${corpus}: ${rows.length} examples, ${rows.filter((row) => row.y).length} relevant`);
}

const table = (title: string, model: ConfidenceModel, rows: Example[]) => {
  const { ece, bins } = calibration(model, rows);
  console.log(
    `${title.padEnd(34)} ECE ${ece.toFixed(3)}   ` +
      bins.map((bin) => (bin.n ? `${bin.confidence.toFixed(2)}:${bin.relevant.toFixed(2)}(${bin.n})` : '-')).join(' '),
  );
  return ece;
};
console.log(`\nreliability: per confidence bin 0.0-0.1 ... 0.9-1.0, "mean confidence:share relevant(examples)"; top ${depth} of each query, hybrid`);
const full = fitLogistic([...examples.values()]);
for (const corpus of corpora) table(`${corpus}, fitted on all four`, full, examples.get(corpus)!);
let held = 0;
for (const corpus of corpora) {
  const others = corpora.filter((other) => other !== corpus).map((other) => examples.get(other)!);
  held += table(`${corpus}, left out of the fit`, fitLogistic(others), examples.get(corpus)!);
}
console.log(`mean ECE left out ${(held / corpora.length).toFixed(3)}`);
// The model in use (confidence-model.ts) on the same examples: whether a ranking change needs a new fit.
for (const corpus of corpora) table(`${corpus}, the model in use`, FITTED_CONFIDENCE, examples.get(corpus)!);
console.log(`weights: ${CONFIDENCE_FEATURES.map((name, i) => `${name} ${full.weights[i]!.toFixed(3)}`).join(', ')}, bias ${full.bias.toFixed(3)}`);
if (values.write) {
  const path = fileURLToPath(new URL('../ranking/confidence-model.ts', import.meta.url));
  const round = (list: number[]) => list.map((value) => Number(value.toPrecision(6)));
  writeFileSync(
    path,
    `// Written by \`npm run fit:confidence -- --write\` (src/cli/fit-confidence.ts); do not edit by hand.\n` +
      `// Fitted on the dev splits of: ${corpora.map((corpus) => basename(corpus)).join(', ')} (top ${depth} of each query, hybrid).\n` +
      `export const FITTED_CONFIDENCE = ${JSON.stringify({ ...full, weights: round(full.weights), bias: Number(full.bias.toPrecision(6)), means: round(full.means), scales: round(full.scales) }, null, 2)};\n`,
  );
  console.log(`wrote ${path}`);
}
