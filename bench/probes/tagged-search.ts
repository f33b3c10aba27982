/**
 * Catalog search through a running service, under a tag filter and without, alternating: the
 * service's own `took_ms` for toolbench_stable's first dev queries, after one pass of each (query
 * embeddings cached, vectors read). For a large catalog kept by `npm run bench:scale -- --keep`,
 * with a service started on that database:
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/<kept> PORT=8099 npm start
 *   npx tsx bench/probes/tagged-search.ts --url http://localhost:8099 --catalog scale-100000 --tag tools [--queries 20] [--rounds 4]
 */
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { loadQueries } from '../../src/eval/run-eval.js';
import { summarize } from '../lib/stats.js';

const { values } = parseArgs({
  options: {
    url: { type: 'string', default: 'http://localhost:8080' },
    catalog: { type: 'string', default: 'scale-100000' },
    tag: { type: 'string', default: 'tools' },
    queries: { type: 'string', default: '20' },
    rounds: { type: 'string', default: '4' },
    'api-key': { type: 'string' },
  },
});
const queries = loadQueries(fileURLToPath(new URL('../../../shared/eval/toolbench_stable/queries.dev.jsonl', import.meta.url)))
  .slice(0, Number(values.queries))
  .map((row) => row.query);
const headers = { 'content-type': 'application/json', ...(values['api-key'] ? { 'x-api-key': values['api-key'] } : {}) };

async function search(query: string, tags?: string[]): Promise<number> {
  const response = await fetch(`${values.url}/v1/catalogs/${encodeURIComponent(values.catalog!)}/search`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ query, top_k: 10, ...(tags ? { tags } : {}) }),
  });
  const body = (await response.json()) as { took_ms?: number };
  if (!response.ok || typeof body.took_ms !== 'number') throw new Error(`search answered ${response.status}: ${JSON.stringify(body).slice(0, 300)}`);
  return body.took_ms;
}

const tags = [values.tag!];
for (const query of queries) await search(query);
for (const query of queries) await search(query, tags);
const took = { tagged: [] as number[], untagged: [] as number[] };
for (let round = 0; round < Number(values.rounds); round++) {
  for (const query of queries) {
    took.tagged.push(await search(query, tags));
    took.untagged.push(await search(query));
  }
}
for (const [name, ms] of Object.entries(took)) {
  const s = summarize(ms);
  console.log(
    `${name === 'tagged' ? `under "${values.tag}"` : 'without a tag'}: p50 ${s.p50.toFixed(1)} ms, p90 ${s.p90.toFixed(1)}, max ${s.max.toFixed(1)} (n=${ms.length})`,
  );
}
