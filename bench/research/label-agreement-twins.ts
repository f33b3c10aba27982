/**
 * How often two of a corpus's queries alike in words agree on their tool when twins count as the
 * same tool (issue 72, docs/ranking.md "Learning from use", fourth attempt), with clean events and
 * with a fifth of them at a wrong tool: whether a catalog's own events could tell a catalog whose
 * word-alike queries agree (loosen minSimilarity) from one whose do not. Twins: the tools' word
 * sets' idf-weighted cosine >= 0.4, never two tools of one server (as the learned list's
 * twinSimilarity). A wrong tool is a random non-relevant one of the query's ten tools with the most
 * idf weight of its words (a stand-in for the ranking's top 10).
 *
 *   npx tsx bench/research/label-agreement-twins.ts [--root ../shared/eval]
 */
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { termsDocument } from '../../src/catalog/catalog-service.js';
import { normalizeTool } from '../../src/catalog/tool-formats.js';
import { loadQueries } from '../../src/eval/run-eval.js';
import { seededRandom } from '../../src/eval/seeded-random.js';
import { distinctTerms } from '../../src/ranking/bm25.js';
import { queryTerms } from '../../src/ranking/search-text.js';

const { values } = parseArgs({ options: { root: { type: 'string', default: '../shared/eval' } } });
const root = values.root!;
const TWIN = 0.4;
const BANDS: [number, number][] = [
  [0.4, 0.85],
  [0.5, 0.85],
  [0.85, 1.01],
];

for (const name of readdirSync(root).sort()) {
  const file = join(root, name, 'queries.dev.jsonl');
  if (!existsSync(file)) continue;
  const tools = readFileSync(join(root, name, 'catalog.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => normalizeTool(JSON.parse(line)));
  const server = new Map(tools.map((tool) => [tool.name, tool.server]));
  const words = new Map(tools.map((tool) => [tool.name, new Set(termsDocument(tool).termFreqs.keys())]));
  const toolDf = new Map<string, number>();
  for (const set of words.values()) for (const word of set) toolDf.set(word, (toolDf.get(word) ?? 0) + 1);
  const toolIdf2 = (word: string) => Math.log(1 + (words.size - (toolDf.get(word) ?? 0) + 0.5) / ((toolDf.get(word) ?? 0) + 0.5)) ** 2;
  const toolNorm = new Map([...words].map(([tool, set]) => [tool, Math.sqrt([...set].reduce((sum, word) => sum + toolIdf2(word), 0))]));
  const twins = (a: string, b: string) => {
    if (a === b) return true;
    if (server.get(a) && server.get(a) === server.get(b)) return false;
    const one = words.get(a);
    const other = words.get(b);
    if (!one || !other) return false;
    let shared = 0;
    for (const word of one) if (other.has(word)) shared += toolIdf2(word);
    return shared / (toolNorm.get(a)! * toolNorm.get(b)!) >= TWIN;
  };
  const queries = loadQueries(file);
  const queryWords = queries.map((query) => distinctTerms(queryTerms(query.query)));
  const top10 = queryWords.map((set) =>
    [...words]
      .map(([tool, held]): [string, number] => [tool, set.reduce((sum, word) => sum + (held.has(word) ? toolIdf2(word) : 0), 0)])
      .sort((a, b) => b[1] - a[1])
      .slice(0, 10)
      .map(([tool]) => tool),
  );
  const df = new Map<string, number>();
  for (const set of queryWords) for (const word of set) df.set(word, (df.get(word) ?? 0) + 1);
  const weights = queryWords.map((set) => new Map(set.map((word) => [word, Math.log(1 + queries.length / (df.get(word) ?? 1)) ** 2])));
  const norms = weights.map((map) => Math.sqrt([...map.values()].reduce((sum, value) => sum + value, 0)));
  const lines: string[] = [];
  for (const noise of [0, 0.2]) {
    const random = seededRandom(1);
    const used = queries.map((query, at) =>
      query.relevant.map((tool) => {
        if (random() >= noise) return tool;
        const wrong = top10[at]!.filter((candidate) => !query.relevant.includes(candidate));
        return wrong.length ? wrong[Math.floor(random() * wrong.length)]! : tool;
      }),
    );
    const counts = BANDS.map(() => ({ pairs: 0, twins: 0, same: 0 }));
    for (let i = 0; i < queries.length; i++) {
      for (let j = i + 1; j < queries.length; j++) {
        let shared = 0;
        for (const [word, weight] of weights[i]!) if (weights[j]!.has(word)) shared += weight;
        const cosine = norms[i]! > 0 && norms[j]! > 0 ? shared / (norms[i]! * norms[j]!) : 0;
        BANDS.forEach(([low, high], band) => {
          if (cosine < low || cosine >= high) return;
          counts[band]!.pairs++;
          if (used[i]!.some((a) => used[j]!.some((b) => twins(a, b)))) counts[band]!.twins++;
          if (used[i]!.some((a) => used[j]!.includes(a))) counts[band]!.same++;
        });
      }
    }
    const share = (count: number, pairs: number) => (pairs ? `${((100 * count) / pairs).toFixed(0)}%` : '-');
    lines.push(
      `${noise ? '20% wrong' : 'clean'}: ${counts
        .map(
          ({ pairs, twins, same }, band) =>
            `[${BANDS[band]![0]}, ${Math.min(1, BANDS[band]![1])}) ${pairs} pairs: twins ${share(twins, pairs)}, same tool ${share(same, pairs)}`,
        )
        .join('; ')}`,
    );
  }
  console.log(`${name}\n  ${lines.join('\n  ')}`);
}
