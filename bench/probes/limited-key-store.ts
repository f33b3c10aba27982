/**
 * What a key that sees only some tools costs on the store's path (no catalog index in hand: a
 * catalog larger than CATALOG_INDEX_MEMORY, or its first searches): the store ranks the tools the
 * key sees as its corpus (`CorpusNames`, src/store/search-store.ts), the names it sees or those it
 * does not, whichever list is shorter, sent with each SQL list. Over a stored catalog of `--size`
 * generated tools (bench/lib/scale-catalog.ts, pushed as bench:scale does), BM25 in SQL and typo
 * matching's document frequencies for toolbench_stable's first dev queries: the whole catalog
 * against keys hiding a tenth, half, and all but a tenth of the tools.
 *
 *   npx tsx bench/probes/limited-key-store.ts [--size 100000] [--queries 30] [--store postgres|pglite] [--pg postgres://postgres@127.0.0.1:5432]
 */
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { loadQueries } from '../../src/eval/run-eval.js';
import { distinctTerms } from '../../src/ranking/bm25.js';
import { queryTerms } from '../../src/ranking/search-text.js';
import { getCatalog } from '../../src/store/catalog-store.js';
import { loadTermFrequencies, searchBm25, type Corpus, type CorpusNames } from '../../src/store/search-store.js';
import { openBenchStore } from '../lib/bench-store.js';
import { startInProcess } from '../lib/in-process.js';
import { toolAt } from '../lib/scale-catalog.js';
import { summarize } from '../lib/stats.js';

const { values } = parseArgs({
  options: {
    size: { type: 'string', default: '100000' },
    queries: { type: 'string', default: '30' },
    store: { type: 'string', default: 'postgres' },
    pg: { type: 'string', default: process.env.BENCH_PG ?? 'postgres://postgres@127.0.0.1:5432' },
  },
});
const size = Number(values.size);

const queries = loadQueries(fileURLToPath(new URL('../../../shared/eval/toolbench_stable/queries.dev.jsonl', import.meta.url)))
  .slice(0, Number(values.queries))
  .map((row) => distinctTerms(queryTerms(row.query)));

const { database, drop } = await openBenchStore(values.store, values.pg, 'toolsift_probe_limited');
const service = await startInProcess({ EMBED_MODEL: 'none', CATALOG_WARMUP: 'false', CATALOG_INDEX_MEMORY: '0' }, database);
try {
  const names: string[] = [];
  for (let start = 0; start < size; start += 5000) {
    const tools = Array.from({ length: Math.min(5000, size - start) }, (_, k) => toolAt(start + k));
    names.push(...tools.map((tool) => tool.name));
    const answer = await fetch(`${service.base}/v1/catalogs/limited/tools`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ tools }),
    });
    if (!answer.ok) throw new Error(`push answered ${answer.status}: ${await answer.text()}`);
  }
  const row = (await getCatalog(database.db, 'default', 'limited'))!;
  const views: [string, CorpusNames | undefined][] = [
    ['the whole catalog', undefined],
    ['a tenth hidden (except, 10%)', { except: names.filter((_, i) => i % 10 === 0) }],
    ['half hidden (except, 50%)', { except: names.filter((_, i) => i % 2 === 0) }],
    ['a tenth seen (only, 10%)', { only: names.filter((_, i) => i % 10 === 0) }],
  ];
  // One untimed pass (plans and caches), then three rounds alternating the views.
  const timed = new Map<string, { bm25: number[]; df: number[] }>(views.map(([label]) => [label, { bm25: [], df: [] }]));
  for (let round = 0; round < 4; round++) {
    for (const [label, view] of round % 2 ? [...views].reverse() : views) {
      const corpus: Corpus = { kind: 'catalog', catalogId: row.id, ...(view ? { names: view } : {}) };
      for (const terms of queries) {
        let started = performance.now();
        await searchBm25(database.db, corpus, { terms, weights: terms.map(() => 1) }, 100);
        const bm25 = performance.now() - started;
        started = performance.now();
        await loadTermFrequencies(database.db, corpus, terms);
        const df = performance.now() - started;
        if (round > 0) {
          timed.get(label)!.bm25.push(bm25);
          timed.get(label)!.df.push(df);
        }
      }
    }
  }
  console.log(`${values.store}, ${size} tools, ${queries.length} queries x 3 rounds; ms p50 / p90`);
  for (const [label, { bm25, df }] of timed) {
    const b = summarize(bm25);
    const d = summarize(df);
    console.log(`${label.padEnd(32)} BM25 ${b.p50.toFixed(1)} / ${b.p90.toFixed(1)}   document frequencies ${d.p50.toFixed(1)} / ${d.p90.toFixed(1)}`);
  }
} catch (error) {
  // A failed query's error carries its parameters (every name): its first lines say enough.
  const cause = (error as { cause?: Error }).cause;
  console.error(`failed: ${String((error as Error).message).slice(0, 400)}${cause ? `\ncaused by: ${cause.message}` : ''}`);
  process.exitCode = 1;
} finally {
  await service.close();
  await drop();
}
