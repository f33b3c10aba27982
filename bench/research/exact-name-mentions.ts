/**
 * The evidence behind the exact-name rule (`nameCandidates`): in each eval set's dev queries, how
 * often a query word that is some tool's whole name names a relevant tool, for plain prose words
 * and for identifier-shaped or quoted ones, counted once per query and name.
 *
 *   npx tsx bench/research/exact-name-mentions.ts [--sets livemcpbench,toolbench_stable,sealtools]
 */
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { loadQueries, readJsonl } from '../../src/eval/run-eval.js';
import { queryWords } from '../../src/search/patterns.js';

const { values } = parseArgs({ options: { sets: { type: 'string', default: 'livemcpbench,toolbench_stable,sealtools' } } });
const EVAL_DIR = fileURLToPath(new URL('../../../shared/eval/', import.meta.url));

for (const set of values.sets!.split(',').map((name) => name.trim())) {
  const names = new Set(readJsonl(`${EVAL_DIR}${set}/catalog.jsonl`).map((line) => (line as { name: string }).name));
  const counts = { prose: { named: 0, relevant: 0 }, shaped: { named: 0, relevant: 0 } };
  for (const query of loadQueries(`${EVAL_DIR}${set}/queries.dev.jsonl`)) {
    const seen = new Set<string>();
    for (const { word, quoted, identifierShaped } of queryWords(query.query)) {
      if (!names.has(word) || seen.has(word)) continue;
      seen.add(word);
      const count = quoted || identifierShaped ? counts.shaped : counts.prose;
      count.named += 1;
      if (query.relevant.includes(word)) count.relevant += 1;
    }
  }
  console.log(
    `${set}: prose words naming a tool ${counts.prose.named}, of them relevant ${counts.prose.relevant}; ` +
      `identifier-shaped or quoted ${counts.shaped.named}, relevant ${counts.shaped.relevant}`,
  );
}
