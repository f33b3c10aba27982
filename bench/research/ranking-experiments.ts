/**
 * Ranking ideas that were measured and not shipped (issue 3), rerunnable:
 *
 *   npx tsx bench/research/ranking-experiments.ts [--sets livemcpbench,toolbench_stable] [--settings]
 *                                        [--only '<text in an idea's label>|<another>']
 *
 * An in-memory copy of the eval's hybrid: the same documents (`documentTerms`), BM25 maths
 * (`Bm25Index`), embedding text, model (use-lite), fusion (`fuseHybrid`) and server votes
 * (`addServerVotes`) as the service, over a whole catalog. Its "shipped" row must equal `npm run
 * eval` on the same set (livemcpbench 0.474 / 0.362 R@10 / nDCG@10, toolbench_stable 0.766 / 0.681
 * on 2026-11-22; `npm run bench:smoke` checks livemcpbench). The next row is the ranking before
 * server votes (0.448 / 0.351, 0.766 / 0.676), and each row after it changes one thing from that
 * one, as they were measured before server votes shipped. A "grid" row tries every
 * setting of one idea and prints the range of its results and its best setting by Recall@10
 * (`--settings` prints every setting too), so a rejected idea is rejected over all of its settings,
 * not one; then a leave-one-query-out line, each query ranked by the setting best on the others,
 * for what that best setting owes to the dev split. Nothing here is used by the service. Took
 * ~16 minutes for the two default sets on 2 cores before the server-vote grid (160 settings; alone,
 * `--only 'server votes'`, 6.5 minutes): it embeds each catalog three ways and the catalog's whole
 * vocabulary once (each only when a row needs it, so `--only` is quicker).
 */
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { stemmer } from 'stemmer';
import { documentTerms, embeddingText, humanize, openingSentence, queryTerms, schemaParameters, type DocumentTerms } from '../../src/ranking/search-text.js';
import type { CanonicalTool } from '../../src/lib/tool.js';
import { normalizeTools } from '../../src/catalog/tool-formats.js';
import { l2Normalize } from '../../src/embed/embedder.js';
import { createUseLiteEmbedder } from '../../src/embed/use-lite.js';
import { meanMetrics, scoreQuery, type QueryMetrics } from '../../src/eval/metrics.js';
import { loadQueries, readJsonl } from '../../src/eval/run-eval.js';
import { byScoreThenId, distinctTerms } from '../../src/ranking/bm25.js';
import { Bm25Index } from '../../src/ranking/bm25-index.js';
import { denseWeight, fuseHybrid, fuseRrf, RRF_DEPTH, RRF_K, VECTOR_WEIGHT, type FusionInput, type Ranked } from '../../src/ranking/rrf.js';
import { denseQueryText, expandTerms } from '../../src/ranking/fuzzy-terms.js';
import { addServerVotes, serverCentroids, serverDocuments, SERVER_DEPTH } from '../../src/ranking/servers.js';
import { tokenize } from '../../src/ranking/tokenizer.js';
import { rankByCosine } from '../../src/ranking/vector-scan.js';
import { leaveOneOutChoices } from '../lib/stats.js';

const { values } = parseArgs({
  options: {
    sets: { type: 'string', default: 'livemcpbench,toolbench_stable' },
    settings: { type: 'boolean', default: false },
    only: { type: 'string' },
  },
});
const EVAL_DIR = fileURLToPath(new URL('../../../shared/eval/', import.meta.url));

/** Runs `make` on first call only; later calls share its promise. */
const once = <T>(make: () => Promise<T>): (() => Promise<T>) => {
  let made: Promise<T> | undefined;
  return () => (made ??= make());
};
const cartesian = <T extends unknown[]>(...axes: { [K in keyof T]: readonly T[K][] }): T[] =>
  axes.reduce<unknown[][]>((combos, axis) => combos.flatMap((combo) => axis.map((value) => [...combo, value])), [[]]) as T[];

/** A path or a file name in a task: `/root/ppt/apple.pptx`, `notes.md`. */
const PATH = /(?:^|[\s'"`(])(?:~|\.{1,2})?\/[\w.-]+(?:\/[\w.-]*)+|\b[\w-]+\.(?:md|txt|csv|json|pptx?|docx?|xlsx?|pdf|py|ts|js|html|bib|png|jpe?g)\b/;
/** Paths and URLs, which reach a sentence model as unknown tokens. */
const PATHS_AND_URLS = /\bhttps?:\/\/\S+|(?:~|\.{1,2})?\/[\w.-]+(?:\/[\w.-]*)+/g;

/** Sentences and "then"-steps of a multi-step task; none when the task is one step. */
function subQueries(query: string): string[] {
  const parts = query
    .split(/(?<=[.!?;])\s+|\s*,?\s*\b(?:then|and then|after that|finally|also)\b\s*/i)
    .map((part) => part.trim())
    .filter((part) => part.split(/\s+/).length >= 3);
  return parts.length > 1 ? parts : [];
}

/** The sentences of a task with at least two query terms each; none when it has one. */
function sentences(query: string): string[] {
  const parts = query
    .split(/(?<=[.!?;])\s+/)
    .map((part) => part.trim())
    .filter((part) => queryTerms(part).length >= 2);
  return parts.length > 1 ? parts : [];
}

const stemCache = new Map<string, string>();
/** Porter stemming of Latin-letter terms; CJK bigrams and numbers stay as they are. */
function stem(term: string): string {
  let stemmed = stemCache.get(term);
  if (stemmed === undefined) stemCache.set(term, (stemmed = /^[a-z]+$/.test(term) ? stemmer(term) : term));
  return stemmed;
}

/** A BM25 document with the terms of `text` added `times` times (negative: taken away). */
function adjusted(base: DocumentTerms, text: string, times: number): DocumentTerms {
  const termFreqs = new Map(base.termFreqs);
  let length = base.length;
  for (const term of tokenize(text)) {
    termFreqs.set(term, (termFreqs.get(term) ?? 0) + times);
    length += times;
  }
  for (const [term, tf] of termFreqs) if (tf <= 0) termFreqs.delete(term);
  return { termFreqs, length };
}

/** Variants of the BM25 document (`documentTerms`), each one change to the shipped recipe. */
const DOCUMENT_RECIPES: [string, (tool: CanonicalTool, base: DocumentTerms) => DocumentTerms][] = [
  [
    'without parameter descriptions',
    (tool, base) =>
      adjusted(
        base,
        schemaParameters(tool.inputSchema)
          .map((p) => p.description)
          .join(' '),
        -1,
      ),
  ],
  ['without the server', (tool, base) => adjusted(base, tool.server ?? '', -1)],
  ['without tags', (tool, base) => adjusted(base, tool.tags.join(' '), -1)],
  ['first sentence of the description twice', (tool, base) => adjusted(base, openingSentence(tool.description), 1)],
  ['name three times', (tool, base) => adjusted(base, tool.name, 1)],
];

/** Every query term at weight 1. */
const unitWeights = (query: string) => new Map(distinctTerms(queryTerms(query)).map((term) => [term, 1]));

/** Score normalisations for a convex combination (Bruch et al., "An Analysis of Fusion Functions for Hybrid Retrieval"). */
const NORMALIZATIONS: Record<string, (ranked: Ranked, floor: number) => (score: number) => number> = {
  'min-max': (ranked) => {
    const top = ranked[0]![1];
    const last = ranked[ranked.length - 1]![1];
    return (score) => (top > last ? (score - last) / (top - last) : 1);
  },
  'theoretical minimum (0 for BM25, -1 for cosine)': (ranked, floor) => {
    const top = ranked[0]![1];
    return (score) => (top > floor ? (score - floor) / (top - floor) : 1);
  },
  'mean +- 3 sd (distribution-based)': (ranked) => {
    const scores = ranked.map(([, score]) => score);
    const mean = scores.reduce((sum, x) => sum + x, 0) / scores.length;
    const sd = Math.sqrt(scores.reduce((sum, x) => sum + (x - mean) ** 2, 0) / scores.length);
    return (score) => (sd > 0 ? Math.min(1, Math.max(0, (score - (mean - 3 * sd)) / (6 * sd))) : 1);
  },
};

/**
 * (1 - alpha) x BM25 + alpha x cosine, each normalised over its own list; a tool missing from a
 * list gets that list's last value (all that is known is that it scored no higher).
 */
function fuseConvex(bm25: Ranked, dense: Ranked, alpha: number, normalization: string): [string, number][] {
  const fused = new Map<string, number>();
  const lists: [Ranked, number, number][] = [
    [bm25, 1 - alpha, 0],
    [dense, alpha, -1],
  ];
  const ids = new Set([...bm25, ...dense].map(([id]) => id));
  for (const [ranked, weight, floor] of lists) {
    if (ranked.length === 0) continue;
    const scale = NORMALIZATIONS[normalization]!(ranked, floor);
    const scores = new Map(ranked);
    const last = ranked[ranked.length - 1]![1];
    for (const id of ids) fused.set(id, (fused.get(id) ?? 0) + weight * scale(scores.get(id) ?? last));
  }
  return [...fused].sort(byScoreThenId);
}

/** Adjacent term pairs of a token sequence, as one term each: `stock price` -> `stock price`. */
const bigrams = (terms: readonly string[]) => terms.slice(1).map((term, i) => `${terms[i]} ${term}`);

/** The BM25 document's fields as token runs (a pair never spans two fields). */
function bigramDocument(tool: CanonicalTool): DocumentTerms {
  const runs = [tool.name, tool.description, tool.server ?? '', ...tool.tags, ...schemaParameters(tool.inputSchema).flatMap((p) => [p.name, p.description])];
  const termFreqs = new Map<string, number>();
  for (const run of runs) for (const pair of bigrams(tokenize(run))) termFreqs.set(pair, (termFreqs.get(pair) ?? 0) + 1);
  return { termFreqs, length: [...termFreqs.values()].reduce((sum, tf) => sum + tf, 0) };
}

type Embedder = Awaited<ReturnType<typeof createUseLiteEmbedder>>;
type Strategy = (query: string) => Promise<string[]>;
/** One idea at one setting, or a grid: one idea at every setting listed. */
type Row = { label: string; strategy: Strategy } | { label: string; grid: [string, Strategy][] };

async function runSet(set: string, embedder: Embedder): Promise<void> {
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
  const recipeIndexes = DOCUMENT_RECIPES.map(([label, recipe]): [string, Bm25Index] => [
    label,
    new Bm25Index(tools.map((tool, i) => ({ id: tool.name, ...recipe(tool, documents[i]!) }))),
  ]);
  const byId = new Map(documents.map((doc) => [doc.id, doc]));

  const vectorsOf = async (texts: string[]) => {
    const vectors = await embedder.embedDocuments(texts);
    return new Map(tools.map((tool, i) => [tool.name, vectors[i]!]));
  };
  const vectorOf = await vectorsOf(tools.map(embeddingText));
  // The rest is embedded on first use, so `--only` runs pay only for what they measure.
  // Second and third vectors per tool: what it is called, and the start of what it says it does.
  const nameVectors = once(() => vectorsOf(tools.map((tool) => humanize(tool.name.split('__').pop()!))));
  const descriptionVectors = once(() => vectorsOf(tools.map((tool) => tool.description.trim().slice(0, 400) || humanize(tool.name))));
  const queryVectors = new Map<string, number[]>();
  const embed = async (text: string) => {
    let vector = queryVectors.get(text);
    if (!vector) queryVectors.set(text, (vector = await embedder.embedQuery(text)));
    return vector;
  };
  // The catalog's words, embedded one by one, for expanding a query word with its neighbours.
  const catalogTerms = new Set(documents.flatMap((doc) => [...doc.termFreqs.keys()]));
  const termVectors = once(async () => {
    const vocabulary = [...catalogTerms].filter((term) => /^[a-z]{3,}$/.test(term));
    const vectors = await embedder.embedDocuments(vocabulary);
    return new Map(vocabulary.map((term, i) => [term, vectors[i]!]));
  });
  const neighbours = new Map<string, [string, number][]>();
  /** A word's three nearest catalog words (four, less the word itself when the catalog has it). */
  const neighboursOf = async (word: string) => {
    let found = neighbours.get(word);
    if (!found) {
      found = rankByCosine(await embed(word), await termVectors(), 4)
        .filter(([term]) => term !== word)
        .slice(0, 3);
      neighbours.set(word, found);
    }
    return found;
  };

  const bigramIndex = new Bm25Index(tools.map((tool) => ({ id: tool.name, ...bigramDocument(tool) })));
  /** Each tool's nearest other tools by the cosine of their vectors, for score smoothing. */
  const nearest = new Map<string, Ranked>();
  const neighboursOfTool = (id: string, k: number) => {
    let found = nearest.get(id);
    if (!found) nearest.set(id, (found = rankByCosine(vectorOf.get(id)!, vectorOf, 11).filter(([other]) => other !== id)));
    return found.slice(0, k);
  };

  // The service's server statistics (ranking/servers.ts) over the whole catalog.
  const servers = serverDocuments(tools.map((tool, i) => ({ ...documents[i]!, server: tool.server })));
  const serverIndex = new Bm25Index(servers.documents);
  const centroids = serverCentroids(servers.members, vectorOf);
  /** The shipped fusion plus server votes at the given setting (the shipped one by default). */
  const withServerVotes = async (q: string, options?: Parameters<typeof addServerVotes>[2]) => {
    const depth = options?.depth ?? SERVER_DEPTH;
    // As the service ranks: typo matching (the dense query with its typos' likely words), then the query's own dense weight (src/ranking/rrf.ts).
    const expanded = expandTerms(distinctTerms(queryTerms(q)), index.vocabulary());
    const vector = await embed(denseQueryText(q, expanded));
    const lexical = index.searchWeighted(expanded.weights, RRF_DEPTH);
    const lists = { bm25: serverIndex.searchWeighted(expanded.weights, depth), vector: rankByCosine(vector, centroids, depth), members: servers.members };
    const dense = byVector(vector);
    return addServerVotes(fuseHybrid(lexical, dense, denseWeight(expanded.known, lexical, dense)), lists, options).fused;
  };
  const catalogMean = [...vectorOf.values()].reduce((sum, v) => sum.map((x, j) => x + v[j]! / vectorOf.size), new Array<number>(512).fill(0));
  const centred: Record<number, Map<string, number[]>> = {};
  const byVector = (query: readonly number[], vectors = vectorOf): Ranked => rankByCosine(query, vectors, RRF_DEPTH);
  const bm25 = (terms: string[], bm25Index = index): Ranked => bm25Index.search(distinctTerms(terms), RRF_DEPTH);
  const names = (ranked: Ranked) => ranked.map(([id]) => id);
  /** Each tool's best cosine over several query vectors, or several vectors of its own. */
  const byMaxCosine = (scored: Ranked[]): Ranked => {
    const best = new Map<string, number>();
    for (const ranked of scored) for (const [id, score] of ranked) best.set(id, Math.max(best.get(id) ?? -Infinity, score));
    return [...best].sort(byScoreThenId).slice(0, RRF_DEPTH);
  };
  const all = tools.length;
  /** The shipped fusion with adjacent word pairs as a third BM25 list at weight w (none at 0). */
  const withPairs = async (q: string, w: number) => {
    const inputs: FusionInput[] = [
      { ranked: bm25(queryTerms(q)), weight: 1, scaleByScore: true },
      { ranked: byVector(await embed(q)), weight: VECTOR_WEIGHT, scaleByScore: false },
    ];
    if (w > 0) inputs.push({ ranked: bigramIndex.search(distinctTerms(bigrams(queryTerms(q))), RRF_DEPTH), weight: w, scaleByScore: true });
    return fuseRrf(inputs);
  };
  /** Each fused tool, and each nearest tool of one, scored + beta x mean fused score of its k nearest tools. */
  const smoothed = (fused: ReadonlyMap<string, number>, k: number, beta: number): Ranked => {
    const candidates = new Set([...fused.keys()].flatMap((id) => [id, ...neighboursOfTool(id, k).map(([other]) => other)]));
    return [...candidates]
      .map((id): [string, number] => [
        id,
        (fused.get(id) ?? 0) + (beta * neighboursOfTool(id, k).reduce((sum, [other]) => sum + (fused.get(other) ?? 0), 0)) / k,
      ])
      .sort(byScoreThenId);
  };

  const rows: Row[] = [
    { label: 'shipped hybrid', strategy: async (q) => names(await withServerVotes(q)) },
    {
      label: 'without server votes (shipped until 2026-11-22; the rows below change one thing from it)',
      strategy: async (q) => names(fuseHybrid(bm25(queryTerms(q)), byVector(await embed(q)))),
    },
    {
      label: 'sub-queries fused with the whole (weight 0.5)',
      strategy: async (q) => {
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
    },
    {
      label: 'each sentence its own BM25 (and dense) list, total weight w',
      grid: cartesian<[number, boolean]>([0.25, 0.5, 1], [false, true]).map(([w, dense]): [string, Strategy] => [
        `w ${w}${dense ? ', with dense lists' : ''}`,
        async (q) => {
          const inputs: FusionInput[] = [
            { ranked: bm25(queryTerms(q)), weight: 1, scaleByScore: true },
            { ranked: byVector(await embed(q)), weight: VECTOR_WEIGHT, scaleByScore: false },
          ];
          const parts = sentences(q);
          for (const part of parts) {
            inputs.push({ ranked: bm25(queryTerms(part)), weight: w / parts.length, scaleByScore: true });
            if (dense) inputs.push({ ranked: byVector(await embed(part)), weight: (w * VECTOR_WEIGHT) / parts.length, scaleByScore: false });
          }
          return names(fuseRrf(inputs));
        },
      ]),
    },
    {
      label: 'Rocchio: query vector + beta x mean of the top k',
      grid: cartesian<[number, number]>([3, 5, 10], [0.3, 0.6, 1]).map(([k, beta]): [string, Strategy] => [
        `k ${k}, beta ${beta}`,
        async (q) => {
          const vector = await embed(q);
          const lexical = bm25(queryTerms(q));
          const top = fuseHybrid(lexical, byVector(vector))
            .slice(0, k)
            .map(([id]) => vectorOf.get(id)!);
          const moved = l2Normalize(vector.map((x, j) => x + (beta * top.reduce((sum, doc) => sum + doc[j]!, 0)) / top.length));
          return names(fuseHybrid(lexical, byVector(moved)));
        },
      ]),
    },
    {
      label: 'BM25 pseudo-relevance feedback: m terms of the top k, weight lambda',
      grid: cartesian<['bm25' | 'hybrid', number, number, number]>(['bm25', 'hybrid'], [3, 5, 10], [5, 10, 20], [0.2, 0.5]).map(
        ([from, k, m, lambda]): [string, Strategy] => [
          `top ${k} of ${from}, ${m} terms, lambda ${lambda}`,
          async (q) => {
            const weights = unitWeights(q);
            const lexical = index.searchWeighted(weights, RRF_DEPTH);
            const dense = byVector(await embed(q));
            const feedback = new Map<string, number>();
            for (const [id] of (from === 'bm25' ? lexical : fuseHybrid(lexical, dense)).slice(0, k)) {
              const doc = byId.get(id)!;
              for (const [term, tf] of doc.termFreqs) feedback.set(term, (feedback.get(term) ?? 0) + ((tf / doc.length) * index.idf(term)) / k);
            }
            const added = [...feedback]
              .filter(([term]) => !weights.has(term))
              .sort(byScoreThenId)
              .slice(0, m);
            for (const [term, score] of added) weights.set(term, (lambda * score) / added[0]![1]);
            return names(fuseHybrid(index.searchWeighted(weights, RRF_DEPTH), dense));
          },
        ],
      ),
    },
    {
      label: "query words expanded with their nearest catalog words by the model's cosine",
      grid: cartesian<[number, number, number, boolean]>([0.6, 0.65, 0.7, 0.75], [1, 3], [0.3, 0.6], [false, true]).map(
        ([tau, n, lambda, onlyUnknown]): [string, Strategy] => [
          `cosine >= ${tau}, ${n} neighbours, weight ${lambda} x cosine${onlyUnknown ? ', words not in the catalog only' : ''}`,
          async (q) => {
            const weights = unitWeights(q);
            for (const word of [...weights.keys()]) {
              if (!/^[a-z]{3,}$/.test(word) || (onlyUnknown && catalogTerms.has(word))) continue;
              for (const [term, cosine] of (await neighboursOf(word)).slice(0, n)) {
                if (cosine >= tau && !weights.has(term)) weights.set(term, Math.max(weights.get(term) ?? 0, lambda * cosine));
              }
            }
            return names(fuseHybrid(index.searchWeighted(weights, RRF_DEPTH), byVector(await embed(q))));
          },
        ],
      ),
    },
    {
      label: 'Porter stemming (documents and queries)',
      strategy: async (q) => names(fuseHybrid(bm25(queryTerms(q).map(stem), stemmedIndex), byVector(await embed(q)))),
    },
    {
      label: 'BM25 document recipe',
      grid: recipeIndexes.map(([label, recipeIndex]): [string, Strategy] => [
        label,
        async (q) => names(fuseHybrid(bm25(queryTerms(q), recipeIndex), byVector(await embed(q)))),
      ]),
    },
    {
      label: '"file" added when the query names a path',
      strategy: async (q) => names(fuseHybrid(bm25([...queryTerms(q), ...(PATH.test(q) ? ['file'] : [])]), byVector(await embed(q)))),
    },
    {
      label: '"file" and "write" added when the query names a path',
      strategy: async (q) => names(fuseHybrid(bm25([...queryTerms(q), ...(PATH.test(q) ? ['file', 'write'] : [])]), byVector(await embed(q)))),
    },
    {
      label: 'the model reads the query without its paths and URLs',
      strategy: async (q) => names(fuseHybrid(bm25(queryTerms(q)), byVector(await embed(q.replace(PATHS_AND_URLS, ' ').replace(/\s+/g, ' ').trim())))),
    },
    {
      label: 'paths and URLs in the query replaced by r, for BM25 and/or the model',
      grid: cartesian<[string, boolean, boolean]>(['', 'file', 'file path'], [true, false], [true, false])
        // Dropped for the model alone is the row 'the model reads the query without its paths and URLs'.
        .filter(([r, lexical, dense]) => (lexical || dense) && !(r === '' && !lexical))
        .map(([r, lexical, dense]): [string, Strategy] => [
          `r '${r}'${lexical ? ', BM25' : ''}${dense ? ', model' : ''}`,
          async (q) => {
            const replaced = q.replace(PATHS_AND_URLS, ` ${r} `).replace(/\s+/g, ' ').trim();
            return names(fuseHybrid(bm25(queryTerms(lexical ? replaced : q)), byVector(await embed(dense ? replaced : q))));
          },
        ]),
    },
    {
      label: 'the model reads paths as p and URLs as u',
      grid: cartesian<[string, string | null]>(['file', 'file path', 'a file', 'path', 'folder or file'], [null, '', 'web page', 'link']).map(
        ([p, u]): [string, Strategy] => [
          `p '${p}', u ${u === null ? 'kept' : `'${u}'`}`,
          async (q) => {
            const urls = u === null ? q : q.replace(/\bhttps?:\/\/\S+/g, ` ${u} `);
            const replaced = urls.replace(PATHS_AND_URLS, ` ${p} `).replace(/\s+/g, ' ').trim();
            return names(fuseHybrid(bm25(queryTerms(q)), byVector(await embed(replaced))));
          },
        ],
      ),
    },
    {
      label: "dense list: each tool's best cosine over the query and its sentences",
      strategy: async (q) => {
        const scored: Ranked[] = [];
        for (const text of [q, ...sentences(q)]) scored.push(rankByCosine(await embed(text), vectorOf, all));
        return names(fuseHybrid(bm25(queryTerms(q)), byMaxCosine(scored)));
      },
    },
    {
      label: 'dense votes scaled by (cosine - last) / (first - last) of the list, weight w',
      grid: [0.4, 0.6].map((w): [string, Strategy] => [
        `w ${w}`,
        async (q) => {
          const dense = byVector(await embed(q));
          const last = dense[dense.length - 1]![1];
          // Score-scaled votes over cosine - last are (cosine - last) / (first - last) of each vote.
          const shifted = dense.map(([id, cosine]): [string, number] => [id, cosine - last]);
          return names(
            fuseRrf([
              { ranked: bm25(queryTerms(q)), weight: 1, scaleByScore: true },
              { ranked: shifted, weight: w, scaleByScore: true },
            ]),
          );
        },
      ]),
    },
    {
      label: "dense weight per query from a list's own confidence",
      grid: [
        ...[0.5, 1, 2].map((p): [string, Strategy] => [
          `0.4 x (z of the dense top cosine over the catalog / 4)^${p}`,
          async (q) => {
            const cosines = rankByCosine(await embed(q), vectorOf, all);
            const values = cosines.map(([, cosine]) => cosine);
            const mean = values.reduce((sum, x) => sum + x, 0) / values.length;
            const sd = Math.sqrt(values.reduce((sum, x) => sum + (x - mean) ** 2, 0) / values.length);
            const weight = VECTOR_WEIGHT * ((values[0]! - mean) / sd / 4) ** p;
            return names(
              fuseRrf([
                { ranked: bm25(queryTerms(q)), weight: 1, scaleByScore: true },
                { ranked: cosines.slice(0, RRF_DEPTH), weight, scaleByScore: false },
              ]),
            );
          },
        ]),
        ...[0.5, 1].map((p): [string, Strategy] => [
          `0.4 x min(3, 1.5 x (BM25 top score / 10th score)^-${p})`,
          async (q) => {
            const lexical = bm25(queryTerms(q));
            const ratio = lexical.length > 1 ? lexical[0]![1] / lexical[Math.min(9, lexical.length - 1)]![1] : 10;
            const weight = VECTOR_WEIGHT * Math.min(3, 1.5 * ratio ** -p);
            return names(
              fuseRrf([
                { ranked: lexical, weight: 1, scaleByScore: true },
                { ranked: byVector(await embed(q)), weight, scaleByScore: false },
              ]),
            );
          },
        ]),
      ],
    },
    {
      label: 'several vectors per tool (embedding text, name, description)',
      grid: (
        [
          ['best of text and name', ['text', 'name'], 'max'],
          ['best of text and description', ['text', 'description'], 'max'],
          ['best of all three', ['text', 'name', 'description'], 'max'],
          ['sum of text and description', ['text', 'description'], 'sum'],
          ['sum of all three', ['text', 'name', 'description'], 'sum'],
        ] as const
      ).map(([label, sources, combine]): [string, Strategy] => [
        label,
        async (q) => {
          const query = await embed(q);
          const source = { text: async () => vectorOf, name: nameVectors, description: descriptionVectors };
          const scored = await Promise.all(sources.map(async (which) => rankByCosine(query, await source[which](), all)));
          const dense =
            combine === 'max'
              ? byMaxCosine(scored)
              : [...scored.reduce((sum, ranked) => (ranked.forEach(([id, s]) => sum.set(id, (sum.get(id) ?? 0) + s)), sum), new Map<string, number>())]
                  .sort(byScoreThenId)
                  .slice(0, RRF_DEPTH);
          return names(fuseHybrid(bm25(queryTerms(q)), dense));
        },
      ]),
    },
    {
      label: 'convex combination of normalised scores, dense weight alpha',
      grid: cartesian<[string, number]>(Object.keys(NORMALIZATIONS), [0.2, 0.3, 0.4, 0.5, 0.6]).map(([normalization, alpha]): [string, Strategy] => [
        `${normalization}, alpha ${alpha}`,
        async (q) => names(fuseConvex(bm25(queryTerms(q)), byVector(await embed(q)), alpha, normalization)),
      ]),
    },
    {
      label: 'adjacent word pairs (query and document bigrams) as a third BM25 list, weight w',
      grid: [0.25, 0.5, 1].map((w): [string, Strategy] => [`w ${w}`, async (q) => names(await withPairs(q, w))]),
    },
    {
      label: "score smoothing: fused score + beta x mean fused score of the tool's k nearest tools",
      grid: cartesian<[number, number]>([3, 5, 10], [0.2, 0.4, 0.6]).map(([k, beta]): [string, Strategy] => [
        `k ${k}, beta ${beta}`,
        async (q) => names(smoothed(new Map(await withPairs(q, 0)), k, beta)),
      ]),
    },
    {
      label: 'smoothing among the candidates only, plus word pairs at weight w',
      grid: cartesian<[number, number, number]>([3, 5, 10], [0.2, 0.4], [0, 0.25, 0.5]).map(([k, beta, w]): [string, Strategy] => [
        `k ${k}, beta ${beta}, pairs ${w}`,
        async (q) => {
          const fused = await withPairs(q, w);
          const scores = new Map(fused);
          const candidates = new Map(fused.map(([id]) => [id, vectorOf.get(id)!]));
          const rescored = fused.map(([id, score]): [string, number] => {
            const around = rankByCosine(vectorOf.get(id)!, candidates, k + 1)
              .filter(([other]) => other !== id)
              .slice(0, k);
            return [id, score + (beta * around.reduce((sum, [other]) => sum + scores.get(other)!, 0)) / k];
          });
          return names(rescored.sort(byScoreThenId));
        },
      ]),
    },
    {
      label: 'smoothing over all tools, plus word pairs at weight w',
      grid: cartesian<[number, number, number]>([3, 5, 10], [0.2, 0.4], [0.25, 0.5]).map(([k, beta, w]): [string, Strategy] => [
        `k ${k}, beta ${beta}, pairs ${w}`,
        async (q) => names(smoothed(new Map(await withPairs(q, w)), k, beta)),
      ]),
    },
    {
      label: 'propagation: each of the top m fused tools passes beta/k of its score to its k nearest tools; word pairs at weight w',
      grid: cartesian<[number, number, number, number]>([20, 50], [3, 5], [0.2, 0.4], [0, 0.25]).map(([m, k, beta, w]): [string, Strategy] => [
        `m ${m}, k ${k}, beta ${beta}, pairs ${w}`,
        async (q) => {
          const fused = await withPairs(q, w);
          const scores = new Map(fused);
          for (const [id, score] of fused.slice(0, m)) {
            for (const [other] of neighboursOfTool(id, k)) scores.set(other, (scores.get(other) ?? 0) + (beta * score) / k);
          }
          return names([...scores].sort(byScoreThenId));
        },
      ]),
    },
    {
      label: 'neighbours outside the fused list only: each of the top m passes beta/k of its score to those of its k nearest tools',
      grid: cartesian<[number, number, number]>([10, 20, 50], [3, 5], [0.2, 0.4, 0.6]).map(([m, k, beta]): [string, Strategy] => [
        `m ${m}, k ${k}, beta ${beta}`,
        async (q) => {
          const fused = await withPairs(q, 0);
          const scores = new Map(fused);
          const added = new Map<string, number>();
          for (const [id, score] of fused.slice(0, m)) {
            for (const [other] of neighboursOfTool(id, k)) if (!scores.has(other)) added.set(other, (added.get(other) ?? 0) + (beta * score) / k);
          }
          return names([...scores, ...added].sort(byScoreThenId));
        },
      ]),
    },
    {
      label: "query term frequency: each BM25 query term weighted by Okapi's (k3 + 1) qtf / (k3 + qtf)",
      grid: [1, 2, 8, 1000].map((k3): [string, Strategy] => [
        `k3 ${k3}`,
        async (q) => {
          const qtf = new Map<string, number>();
          for (const term of queryTerms(q)) qtf.set(term, (qtf.get(term) ?? 0) + 1);
          const weights = new Map([...qtf].map(([term, n]) => [term, ((k3 + 1) * n) / (k3 + n)]));
          return names(fuseHybrid(index.searchWeighted(weights, RRF_DEPTH), byVector(await embed(q))));
        },
      ]),
    },
    {
      label: 'centred vectors: cosine after subtracting beta x the catalog mean vector',
      grid: cartesian<[number, number]>([0, 0.25, 0.5, 0.75, 1], [0, 0.3, 0.4, 0.5]).map(([beta, w]): [string, Strategy] => [
        `beta ${beta}, w ${w}`,
        async (q) => {
          const centre = (v: readonly number[]) => v.map((x, j) => x - beta * catalogMean[j]!);
          centred[beta] ??= new Map([...vectorOf].map(([id, v]) => [id, l2Normalize(centre(v))]));
          const dense = rankByCosine(l2Normalize(centre(await embed(q))), centred[beta], RRF_DEPTH);
          if (w === 0) return names(dense);
          return names(
            fuseRrf([
              { ranked: bm25(queryTerms(q)), weight: 1, scaleByScore: true },
              { ranked: dense, weight: w, scaleByScore: false },
            ]),
          );
        },
      ]),
    },
    {
      label: "dense list's own RRF constant k (BM25 keeps 60), dense weight w",
      grid: cartesian<[number, number]>([1, 5, 10, 20, 30, 60], [0.1, 0.2, 0.3, 0.4, 0.6]).map(([k, w]): [string, Strategy] => [
        `k ${k}, w ${w}`,
        async (q) => {
          const fused = new Map(fuseRrf([{ ranked: bm25(queryTerms(q)), weight: 1, scaleByScore: true }]));
          for (const [id, vote] of fuseRrf([{ ranked: byVector(await embed(q)), weight: w, scaleByScore: false }], { k, depth: RRF_DEPTH }))
            fused.set(id, (fused.get(id) ?? 0) + vote);
          return names([...fused].sort(byScoreThenId));
        },
      ]),
    },
    {
      label: 'server votes (shipped since 2026-11-22): BM25 server list at weight wb, dense server list at weight wd, top s servers of each',
      grid: cartesian<[number, number, number]>([0, 0.1, 0.2, 0.3, 0.5], [0, 0.1, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5], [2, 3, 5, 10]).map(
        ([wb, wd, s]): [string, Strategy] => [
          `wb ${wb}, wd ${wd}, s ${s}`,
          async (q) => names(await withServerVotes(q, { bm25Weight: wb, vectorWeight: wd, depth: s, k: RRF_K })),
        ],
      ),
    },
    {
      label: 'fusion weights: dense weight w, dense list cut to its first d',
      grid: cartesian<[number, number]>([0.2, 0.3, 0.4, 0.5], [10, 20, 50]).map(([w, d]): [string, Strategy] => [
        `w ${w}, d ${d}`,
        async (q) =>
          names(
            fuseRrf([
              { ranked: bm25(queryTerms(q)), weight: 1, scaleByScore: true },
              { ranked: byVector(await embed(q)).slice(0, d), weight: w, scaleByScore: false },
            ]),
          ),
      ]),
    },
  ];
  /** Each dev query's metrics under one strategy, in query order. */
  const scoreAll = async (strategy: Strategy): Promise<QueryMetrics[]> => {
    const scored = [];
    for (const q of queries) scored.push(scoreQuery(await strategy(q.query), { relevant: q.relevant, relevantGroups: q.relevant_groups }));
    return scored;
  };
  const f = (x: number) => x.toFixed(3);
  console.log(`\n${set}: ${tools.length} tools, ${queries.length} dev queries`);
  console.log(`${'R@10'.padStart(11)} ${'nDCG@10'.padStart(11)} ${'R@5'.padStart(6)}  idea`);
  for (const row of rows) {
    if (
      values.only !== undefined &&
      row.label !== 'shipped hybrid' &&
      !row.label.startsWith('without server votes') &&
      !values.only.split('|').some((text) => row.label.includes(text))
    )
      continue;
    if ('strategy' in row) {
      const mean = meanMetrics(await scoreAll(row.strategy));
      console.log(`${f(mean.recall10).padStart(11)} ${f(mean.ndcg10).padStart(11)} ${f(mean.recall5).padStart(6)}  ${row.label}`);
      continue;
    }
    const results: [string, ReturnType<typeof meanMetrics>][] = [];
    const scored: QueryMetrics[][] = [];
    for (const [label, strategy] of row.grid) {
      scored.push(await scoreAll(strategy));
      const mean = meanMetrics(scored.at(-1)!);
      results.push([label, mean]);
      if (values.settings)
        console.log(`${f(mean.recall10).padStart(11)} ${f(mean.ndcg10).padStart(11)} ${f(mean.recall5).padStart(6)}    ${row.label}: ${label}`);
    }
    const range = (pick: (m: (typeof results)[number][1]) => number) => {
      const xs = results.map(([, m]) => pick(m));
      return `${f(Math.min(...xs))}-${f(Math.max(...xs))}`;
    };
    const [bestLabel, best] = results.reduce((a, b) =>
      b[1].recall10 > a[1].recall10 || (b[1].recall10 === a[1].recall10 && b[1].ndcg10 > a[1].ndcg10) ? b : a,
    );
    console.log(
      `${range((m) => m.recall10)} ${range((m) => m.ndcg10)} ${range((m) => m.recall5)}  ${row.label}: ${results.length} settings; best R@10 ${f(best.recall10)} / nDCG@10 ${f(best.ndcg10)} at ${bestLabel}`,
    );
    // What choosing the best setting on this split is worth on a query it was not chosen on.
    const chosen = leaveOneOutChoices(scored.map((perSetting) => perSetting.map((m) => [m.recall10, m.ndcg10])));
    const held = meanMetrics(chosen.map((setting, query) => scored[setting]![query]!));
    console.log(
      `${f(held.recall10).padStart(11)} ${f(held.ndcg10).padStart(11)} ${f(held.recall5).padStart(6)}    leave-one-query-out: each query ranked by the setting best on the other ${queries.length - 1}`,
    );
  }
}

const embedder = await createUseLiteEmbedder();
try {
  for (const set of values.sets!.split(',')) await runSet(set.trim(), embedder);
} finally {
  await embedder.close();
}
