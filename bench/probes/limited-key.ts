/**
 * What ranking a key that sees only some tools by those tools' statistics costs
 * (`src/search/visibility.ts`, `visibleIndex`): over bench:scale's catalog, for keys hiding one
 * copy of the corpora (`*_copy3`), every tool of a tenth of the servers, and half the tools, the
 * first search's building of the key's view and index (once per revision and key), the memory it
 * holds, and a search's BM25 list and servers for toolbench_stable's first dev queries against the
 * whole catalog's (the catalog's own index, as a key seeing every tool reads it).
 *
 *   npx tsx bench/probes/limited-key.ts [--size 100000] [--queries 50]
 */
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { queryTerms } from '../../src/ranking/search-text.js';
import { distinctTerms } from '../../src/ranking/bm25.js';
import { CatalogIndex } from '../../src/search/catalog-index.js';
import { visibleIndex, visibleInIndex } from '../../src/search/visibility.js';
import { Access, type KeyPolicy } from '../../src/trust/policy.js';
import { loadQueries } from '../../src/eval/run-eval.js';
import { scaleIndexRows } from '../lib/scale-catalog.js';
import { summarize } from '../lib/stats.js';
import { memoryInUse as memory } from '../lib/memory.js';

const { values } = parseArgs({ options: { size: { type: 'string', default: '100000' }, queries: { type: 'string', default: '50' } } });
const size = Number(values.size);

const { rows } = scaleIndexRows(size);
const index = await CatalogIndex.build(1, 1, rows);
const servers = [...index.servers.members.keys()].sort();
const queries = loadQueries(fileURLToPath(new URL('../../../shared/eval/toolbench_stable/queries.dev.jsonl', import.meta.url)))
  .slice(0, Number(values.queries))
  .map((row) => distinctTerms(queryTerms(row.query)));
const weightsOf = (terms: readonly string[]) => new Map(terms.map((term) => [term, 1]));

const policy = (id: string, scope: Pick<KeyPolicy, 'tools' | 'servers'>): KeyPolicy => ({ id, tenant: 't', call: true, write: false, manage: false, ...scope });
const keys: [string, KeyPolicy][] = [
  ['one copy of the corpora hidden (*_copy3)', policy('copy', { tools: { deny: ['*_copy3'] } })],
  ['a tenth of the servers hidden', policy('servers', { servers: { deny: servers.filter((_, i) => i % 10 === 0) } })],
  [
    'half the tools hidden (*_copy1* .. *_copy5*, odd copies)',
    policy('half', { tools: { deny: ['*_copy1*', '*_copy3*', '*_copy5*', '*_copy7*', '*_copy9*'] } }),
  ],
];
console.log(`${size} tools, ${servers.length} servers; ${queries.length} toolbench_stable dev queries`);
const perQuery = (run: (terms: readonly string[]) => unknown) => {
  const ms: number[] = [];
  for (const terms of queries) {
    const started = performance.now();
    run(terms);
    ms.push(performance.now() - started);
  }
  return summarize(ms);
};
const fmt = (s: ReturnType<typeof summarize>) => `p50 ${s.p50.toFixed(2)} ms, p99 ${s.p99.toFixed(2)} ms`;
const wholeBm25 = perQuery((terms) => index.search(weightsOf(terms), 50));
const wholeServers = perQuery((terms) => index.serversFor(terms).bm25.searchWeighted(weightsOf(terms), 3));
console.log(`whole catalog: BM25 list ${fmt(wholeBm25)}; servers ${fmt(wholeServers)}`);
for (const [label, keyPolicy] of keys) {
  const before = memory();
  const started = performance.now();
  const visible = visibleInIndex(new Access(keyPolicy), 'c', index)!;
  const viewMs = performance.now() - started;
  const ranked = visibleIndex(index, visible);
  const builtMs = performance.now() - started;
  const heldMb = (memory() - before) / 2 ** 20;
  const bm25 = perQuery((terms) => ranked.search(weightsOf(terms), 50));
  const serversList = perQuery((terms) => ranked.serversFor(terms).bm25.searchWeighted(weightsOf(terms), 3));
  console.log(
    `${label}: ${visible.hidden} hidden; view ${viewMs.toFixed(0)} ms, with its index ${builtMs.toFixed(0)} ms, holding ${heldMb.toFixed(1)} MB; BM25 list ${fmt(bm25)}; servers ${fmt(serversList)}`,
  );
}
