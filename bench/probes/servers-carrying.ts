/**
 * What an answer from memory under a tag filter adds: building the tagged tools' servers as BM25
 * documents from a catalog's in-process index (`CatalogIndex.serversCarrying`, one pass over its
 * postings), for the commonest tag and a median one of bench:scale's catalog; and for a query's
 * terms only (what a search builds: those terms' postings), over toolbench_stable's first dev queries;
 * and the tagged servers' mean vectors (`serverCentroids`, what a hybrid search under the tag ranks
 * servers by when the tagged tools' vectors are in process), from seeded random 512-d unit vectors.
 *
 *   npx tsx bench/probes/servers-carrying.ts [--size 100000] [--runs 7]
 */
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { queryTerms } from '../../src/ranking/search-text.js';
import { CatalogIndex } from '../../src/search/catalog-index.js';
import { serverCentroids } from '../../src/ranking/servers.js';
import { l2Normalize } from '../../src/embed/embedder.js';
import { loadQueries } from '../../src/eval/run-eval.js';
import { seededRandom } from '../../src/eval/seeded-random.js';
import { scaleIndexRows, tagCounts } from '../lib/scale-catalog.js';
import { summarize } from '../lib/stats.js';

const { values } = parseArgs({
  options: { size: { type: 'string', default: '100000' }, runs: { type: 'string', default: '7' }, queries: { type: 'string', default: '20' } },
});
const size = Number(values.size);
const runs = Number(values.runs);
const { tools, rows } = scaleIndexRows(size);
const index = await CatalogIndex.build(1, 1, rows);
const queries = loadQueries(fileURLToPath(new URL('../../../shared/eval/toolbench_stable/queries.dev.jsonl', import.meta.url)))
  .slice(0, Number(values.queries))
  .map((row) => queryTerms(row.query));
const sorted = tagCounts(tools.map((tool) => tool.tags));
console.log(
  `${size} tools, ${index.servers.members.size} servers, ${sorted.length} tags; commonest ${sorted
    .slice(0, 3)
    .map(([t, n]) => `${t} ${n}`)
    .join(', ')}`,
);
for (const [tag, n] of [sorted[0]!, sorted[Math.floor(sorted.length / 2)]!]) {
  const ms: number[] = [];
  let servers = 0;
  for (let run = 0; run < runs; run++) {
    const started = performance.now();
    servers = index.serversCarrying([tag]).members.size;
    ms.push(performance.now() - started);
  }
  const s = summarize(ms);
  console.log(
    `tag "${tag}" (${n} tools, ${servers} servers): serversCarrying median ${s.p50.toFixed(1)} ms [${s.min.toFixed(1)} .. ${s.max.toFixed(1)}], ${runs} runs`,
  );
  const perQuery: number[] = [];
  for (const terms of queries) {
    const started = performance.now();
    index.serversCarrying([tag], terms);
    perQuery.push(performance.now() - started);
  }
  const q = summarize(perQuery);
  console.log(`tag "${tag}", a query's terms only: median ${q.p50.toFixed(2)} ms [${q.min.toFixed(2)} .. ${q.max.toFixed(2)}], ${perQuery.length} queries`);
  const random = seededRandom(1);
  const vectors = new Map(
    [...index.namesCarrying([tag])].map((name) => [name, Float32Array.from(l2Normalize(Array.from({ length: 512 }, () => random() - 0.5)))]),
  );
  const members = index.serversCarrying([tag]).members;
  const means: number[] = [];
  for (let run = 0; run < runs; run++) {
    const started = performance.now();
    serverCentroids(members, vectors);
    means.push(performance.now() - started);
  }
  const m = summarize(means);
  console.log(
    `tag "${tag}", its ${members.size} servers' mean vectors: median ${m.p50.toFixed(2)} ms [${m.min.toFixed(2)} .. ${m.max.toFixed(2)}], ${runs} runs`,
  );
}
