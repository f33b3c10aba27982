/**
 * How often two of a corpus's queries that are alike in words are labelled with the same tool: the
 * ceiling of any learned list that judges "like this one" by the words alone (issue 72,
 * docs/ranking.md "Learning from use"). Pairs of dev queries are binned by the learned list's word
 * similarity (cosine of idf-weighted word sets, idf over the corpus's queries, the words as the
 * service reads them), and each bin counts the pairs that share a relevant tool.
 *
 *   npx tsx bench/research/label-agreement.ts [--root ../shared/eval]
 */
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { readdirSync, existsSync } from 'node:fs';
import { loadQueries } from '../../src/eval/run-eval.js';
import { queryTerms } from '../../src/ranking/search-text.js';
import { distinctTerms } from '../../src/ranking/bm25.js';

const { values } = parseArgs({ options: { root: { type: 'string', default: '../shared/eval' } } });
const root = values.root!;
const EDGES = [0.3, 0.5, 0.7, 0.85, 1.01];

for (const name of readdirSync(root).sort()) {
  const file = join(root, name, 'queries.dev.jsonl');
  if (!existsSync(file)) continue;
  const queries = loadQueries(file);
  const words = queries.map((query) => distinctTerms(queryTerms(query.query)));
  const df = new Map<string, number>();
  for (const set of words) for (const word of set) df.set(word, (df.get(word) ?? 0) + 1);
  const idf2 = (word: string) => Math.log(1 + queries.length / (df.get(word) ?? 1)) ** 2;
  const weights = words.map((set) => new Map(set.map((word) => [word, idf2(word)])));
  const norms = weights.map((map) => Math.sqrt([...map.values()].reduce((sum, value) => sum + value, 0)));
  const bins = EDGES.slice(0, -1).map(() => ({ pairs: 0, same: 0 }));
  for (let i = 0; i < queries.length; i++) {
    for (let j = i + 1; j < queries.length; j++) {
      let shared = 0;
      for (const [word, weight] of weights[i]!) if (weights[j]!.has(word)) shared += weight;
      const cosine = norms[i]! > 0 && norms[j]! > 0 ? shared / (norms[i]! * norms[j]!) : 0;
      const bin = EDGES.findIndex((edge, at) => cosine >= edge && cosine < EDGES[at + 1]!);
      if (bin < 0) continue;
      bins[bin]!.pairs++;
      if (queries[i]!.relevant.some((tool) => queries[j]!.relevant.includes(tool))) bins[bin]!.same++;
    }
  }
  const cells = bins.map(
    ({ pairs, same }, at) =>
      `[${EDGES[at]}, ${Math.min(1, EDGES[at + 1]!)}${at === bins.length - 1 ? ']' : ')'} ${same}/${pairs}${pairs ? ` (${((100 * same) / pairs).toFixed(0)}%)` : ''}`,
  );
  console.log(`${name.padEnd(18)} ${queries.length} queries; pairs sharing a relevant tool, by word similarity: ${cells.join(', ')}`);
}
