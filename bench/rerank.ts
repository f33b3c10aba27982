/**
 * `npm run bench:rerank`: what the rerank stage (RERANK_URL) costs a catalog search at N = 30.
 *
 * Two services in this process, each on its own in-memory PGlite with the same catalog
 * (livemcpbench's 527 tools; no model, so the first stage is BM25 and the server votes), one
 * without a reranker and one with the suite's rerank server (test/fixtures/embedding-service.ts,
 * TEI's shape, scoring by word overlap in well under a millisecond) at RERANK_TOP_N=30. The dev
 * queries of the four corpora go to both in alternating order, `--rounds` times; the table gives
 * the client-side time of each and the stage's own time from its metric. What a real reranker adds
 * on top is its inference on 30 texts (tens of ms on a GPU for a cross-encoder; not measurable here).
 *
 *   npm run bench:rerank -- [--rounds 3] [--queries 200]
 *
 * The last line is the report as JSON.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { startEmbeddingService } from '../test/fixtures/embedding-service.js';
import { startInProcess } from './lib/in-process.js';
import { summarize } from './lib/stats.js';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '3' }, queries: { type: 'string', default: '200' } } });
const rounds = Number(values.rounds);
const EVAL = fileURLToPath(new URL('../../shared/eval/', import.meta.url));
const readJsonl = (path: string) =>
  readFileSync(path, 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, unknown>);

const tools = readJsonl(`${EVAL}livemcpbench/catalog.jsonl`);
const queries = readdirSync(EVAL)
  .filter((name) => !name.startsWith('.') && name !== 'poison' && name !== 'README.md')
  .flatMap((name) => readJsonl(`${EVAL}${name}/queries.dev.jsonl`).map((row) => String(row.query)))
  .filter((_, index, all) => index % Math.max(1, Math.floor(all.length / Number(values.queries))) === 0)
  .slice(0, Number(values.queries));

const reranker = await startEmbeddingService();
const plain = await startInProcess({ EMBED_MODEL: 'none', CATALOG_WARMUP: 'false' });
const reranked = await startInProcess({ EMBED_MODEL: 'none', CATALOG_WARMUP: 'false', RERANK_URL: `${reranker.url}/rerank`, RERANK_TOP_N: '30' });
try {
  for (const service of [plain, reranked]) {
    const put = await fetch(`${service.base}/v1/catalogs/bench`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ tools }),
    });
    if (!put.ok) throw new Error(`push failed: ${put.status} ${await put.text()}`);
  }
  const search = async (base: string, query: string) => {
    const started = performance.now();
    const response = await fetch(`${base}/v1/catalogs/bench/search`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query, top_k: 5, mode: 'hybrid' }),
    });
    const body = (await response.json()) as { rerank?: string };
    return { ms: performance.now() - started, rerank: body.rerank };
  };
  // One warm-up pass each (the catalog's index is read on its first search).
  for (const query of queries.slice(0, 20)) {
    await search(plain.base, query);
    await search(reranked.base, query);
  }
  const without: number[] = [];
  const withRerank: number[] = [];
  const outcomes = new Map<string, number>();
  for (let round = 0; round < rounds; round++) {
    for (const [index, query] of queries.entries()) {
      // Alternating which goes first, so neither always meets a cold cache or a GC pause second.
      const order = (index + round) % 2 === 0 ? [plain, reranked] : [reranked, plain];
      for (const service of order) {
        const { ms, rerank } = await search(service.base, query);
        if (service === plain) without.push(ms);
        else {
          withRerank.push(ms);
          outcomes.set(rerank ?? 'none', (outcomes.get(rerank ?? 'none') ?? 0) + 1);
        }
      }
    }
  }
  const metrics = await (await fetch(`${reranked.base}/metrics`)).text();
  const stageSum = Number(/toolsift_rerank_duration_seconds_sum\{outcome="ok"\} ([\d.e-]+)/.exec(metrics)?.[1] ?? Number.NaN);
  const stageCount = Number(/toolsift_rerank_duration_seconds_count\{outcome="ok"\} (\d+)/.exec(metrics)?.[1] ?? Number.NaN);
  const a = summarize(without);
  const b = summarize(withRerank);
  const fixed = (value: number) => value.toFixed(2);
  console.log(`\n${queries.length} queries x ${rounds} rounds, livemcpbench catalog (527 tools), RERANK_TOP_N=30\n`);
  console.log('| search | p50 ms | p90 ms | p99 ms |');
  console.log('|---|---|---|---|');
  console.log(`| without rerank | ${fixed(a.p50)} | ${fixed(a.p90)} | ${fixed(a.p99)} |`);
  console.log(`| with rerank (local test server) | ${fixed(b.p50)} | ${fixed(b.p90)} | ${fixed(b.p99)} |`);
  console.log(`| difference | ${fixed(b.p50 - a.p50)} | ${fixed(b.p90 - a.p90)} | ${fixed(b.p99 - a.p99)} |`);
  console.log(
    `\nthe stage itself (texts read, request, reorder), mean of ${stageCount}: ${fixed((stageSum / stageCount) * 1000)} ms; outcomes: ${JSON.stringify(Object.fromEntries(outcomes))}`,
  );
  console.log(
    JSON.stringify({
      bench: 'rerank',
      queries: queries.length,
      rounds,
      topN: 30,
      without: a,
      with: b,
      stageMeanMs: (stageSum / stageCount) * 1000,
      outcomes: Object.fromEntries(outcomes),
    }),
  );
} finally {
  await plain.close();
  await reranked.close();
  await reranker.close();
}
