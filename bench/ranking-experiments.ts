/**
 * Ranking ideas that were measured and not shipped (issue 3), rerunnable:
 *
 *   npx tsx bench/ranking-experiments.ts [--sets livemcpbench,toolbench_stable]
 *
 * An in-memory copy of the eval's hybrid: the same documents (`documentTerms`), BM25 maths
 * (`Bm25Index`), embedding text, model (use-lite) and fusion (`fuseHybrid`) as the service, over a
 * whole catalog. Its "shipped" row must equal `npm run eval` on the same set (livemcpbench
 * 0.448 / 0.351 R@10 / nDCG@10, toolbench_stable 0.766 / 0.676 on 2026-11-21); each other row
 * changes one thing. Nothing here is used by the service.
 */
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { stemmer } from 'stemmer';
import { documentTerms, embeddingText, queryTerms } from '../src/catalog/search-text.js';
import { normalizeTools } from '../src/catalog/tool-formats.js';
import { createUseLiteEmbedder } from '../src/embed/use-lite.js';
import { meanMetrics, scoreQuery } from '../src/eval/metrics.js';
import { loadQueries, readJsonl } from '../src/eval/run-eval.js';
import { distinctTerms } from '../src/search/bm25.js';
import { Bm25Index } from '../src/search/bm25-index.js';
import { fuseHybrid, fuseRrf, RRF_DEPTH, VECTOR_WEIGHT, type FusionInput, type Ranked } from '../src/search/rrf.js';
import { rankByCosine } from '../src/search/vector-scan.js';

const { values } = parseArgs({ options: { sets: { type: 'string', default: 'livemcpbench,toolbench_stable' } } });
const EVAL_DIR = fileURLToPath(new URL('../../shared/eval/', import.meta.url));

const dot = (a: readonly number[], b: readonly number[]) => a.reduce((sum, x, i) => sum + x * b[i]!, 0);
const normalize = (v: number[]) => {
  const length = Math.sqrt(dot(v, v));
  return v.map((x) => x / length);
};

/** A path or a file name in a task: `/root/ppt/apple.pptx`, `notes.md`. */
const PATH = /(?:^|[\s'"`(])(?:~|\.{1,2})?\/[\w.-]+(?:\/[\w.-]*)+|\b[\w-]+\.(?:md|txt|csv|json|pptx?|docx?|xlsx?|pdf|py|ts|js|html|bib|png|jpe?g)\b/;

/** Sentences and "then"-steps of a multi-step task; none when the task is one step. */
function subQueries(query: string): string[] {
  const parts = query
    .split(/(?<=[.!?;])\s+|\s*,?\s*\b(?:then|and then|after that|finally|also)\b\s*/i)
    .map((part) => part.trim())
    .filter((part) => part.split(/\s+/).length >= 3);
  return parts.length > 1 ? parts : [];
}

const stemCache = new Map<string, string>();
/** Porter stemming of Latin-letter terms; CJK bigrams and numbers stay as they are. */
function stem(term: string): string {
  let stemmed = stemCache.get(term);
  if (stemmed === undefined) stemCache.set(term, (stemmed = /^[a-z]+$/.test(term) ? stemmer(term) : term));
  return stemmed;
}

async function runSet(set: string, embedder: Awaited<ReturnType<typeof createUseLiteEmbedder>>): Promise<void> {
  // The catalog as ingestion reads it (the eval ingests through the REST API's code).
  const { tools, problems } = normalizeTools(readJsonl(`${EVAL_DIR}${set}/catalog.jsonl`));
  if (problems.length > 0) throw new Error(`${set}: ${problems.length} invalid tools, first: ${problems[0]!.message}`);
  const queries = loadQueries(`${EVAL_DIR}${set}/queries.dev.jsonl`);
  const documents = tools.map((tool) => ({ id: tool.name, ...documentTerms(tool) }));
  const index = new Bm25Index(documents);
  const stemmedIndex = new Bm25Index(
    documents.map(({ id, termFreqs, length }) => {
      const stemmed = new Map<string, number>();
      for (const [term, tf] of termFreqs) stemmed.set(stem(term), (stemmed.get(stem(term)) ?? 0) + tf);
      return { id, termFreqs: stemmed, length };
    }),
  );
  const vectors = await embedder.embedDocuments(tools.map(embeddingText));
  const vectorOf = new Map(tools.map((tool, i) => [tool.name, vectors[i]!]));
  const queryVectors = new Map<string, number[]>();
  const embed = async (text: string) => {
    let vector = queryVectors.get(text);
    if (!vector) queryVectors.set(text, (vector = await embedder.embedQuery(text)));
    return vector;
  };
  const byVector = (query: readonly number[]): Ranked => rankByCosine(query, vectorOf, RRF_DEPTH);
  const bm25 = (terms: string[], bm25Index = index): Ranked => bm25Index.search(distinctTerms(terms), RRF_DEPTH);
  const names = (ranked: Ranked) => ranked.map(([id]) => id);

  type Strategy = (query: string) => Promise<string[]>;
  const strategies: [string, Strategy][] = [
    ['shipped hybrid', async (q) => names(fuseHybrid(bm25(queryTerms(q)), byVector(await embed(q))))],
    [
      'sub-queries fused with the whole (weight 0.5)',
      async (q) => {
        const inputs: FusionInput[] = [
          { ranked: bm25(queryTerms(q)), weight: 1, scaleByScore: true },
          { ranked: byVector(await embed(q)), weight: VECTOR_WEIGHT, scaleByScore: false },
        ];
        for (const part of subQueries(q)) {
          inputs.push({ ranked: bm25(queryTerms(part)), weight: 0.5, scaleByScore: true });
          inputs.push({ ranked: byVector(await embed(part)), weight: 0.5 * VECTOR_WEIGHT, scaleByScore: false });
        }
        return names(fuseRrf(inputs));
      },
    ],
    ...[3, 5, 10].flatMap((k) =>
      [0.3, 0.6, 1].map((beta): [string, Strategy] => [
        `Rocchio: query vector + ${beta} x mean of the top ${k}`,
        async (q) => {
          const vector = await embed(q);
          const lexical = bm25(queryTerms(q));
          const top = fuseHybrid(lexical, byVector(vector))
            .slice(0, k)
            .map(([id]) => vectorOf.get(id)!);
          const moved = normalize(vector.map((x, j) => x + (beta * top.reduce((sum, doc) => sum + doc[j]!, 0)) / top.length));
          return names(fuseHybrid(lexical, byVector(moved)));
        },
      ]),
    ),
    ['Porter stemming (documents and queries)', async (q) => names(fuseHybrid(bm25(queryTerms(q).map(stem), stemmedIndex), byVector(await embed(q))))],
    ['"file" added when the query names a path', async (q) => names(fuseHybrid(bm25([...queryTerms(q), ...(PATH.test(q) ? ['file'] : [])]), byVector(await embed(q))))],
    [
      '"file" and "write" added when the query names a path',
      async (q) => names(fuseHybrid(bm25([...queryTerms(q), ...(PATH.test(q) ? ['file', 'write'] : [])]), byVector(await embed(q)))),
    ],
  ];

  console.log(`\n${set}: ${tools.length} tools, ${queries.length} dev queries`);
  console.log(`${'R@10'.padStart(6)} ${'nDCG@10'.padStart(8)} ${'R@5'.padStart(6)}  strategy`);
  for (const [label, strategy] of strategies) {
    const scored = [];
    for (const q of queries) scored.push(scoreQuery(await strategy(q.query), { relevant: q.relevant, relevantGroups: q.relevant_groups }));
    const mean = meanMetrics(scored);
    console.log(`${mean.recall10.toFixed(3).padStart(6)} ${mean.ndcg10.toFixed(3).padStart(8)} ${mean.recall5.toFixed(3).padStart(6)}  ${label}`);
  }
}

const embedder = await createUseLiteEmbedder();
try {
  for (const set of values.sets!.split(',')) await runSet(set.trim(), embedder);
} finally {
  await embedder.close();
}
