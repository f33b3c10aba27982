import { queryTerms } from '../catalog/search-text.js';
import { currentRecipe } from '../embed/embed-documents.js';
import type { Embedder } from '../embed/embedder.js';
import type { Db } from '../store/database.js';
import { searchBm25, searchVector, tagsOf, type Corpus, type Ranked } from '../store/search-store.js';
import { distinctTerms } from './bm25.js';
import type { Bm25Index } from './bm25-index.js';
import { fuseHybrid, RRF_DEPTH } from './rrf.js';
import { boostByTags } from './tags.js';
import { rankByCosine } from './vector-scan.js';
import type { VectorCache } from '../store/vector-cache.js';

export type SearchMode = 'hybrid' | 'bm25' | 'vector';

export interface RankQuery {
  query: string;
  topK: number;
  mode: SearchMode;
  /** Filter first: only tools carrying at least one of these; then each match boosts. */
  tags?: string[];
  /** Corpus ids the query names exactly: they go first, in this order. */
  exactIds?: string[];
}

export interface RankedTool {
  id: string;
  score: number;
  explain: {
    bm25: { rank: number; score: number } | null;
    vector: { rank: number; score: number } | null;
    tag_boost: number;
    exact_name: boolean;
  };
}

export interface RankDeps {
  db: Db;
  /** null when the model is off or failed to load: ranking falls back to BM25. */
  embedder: Embedder | null;
  /** When present, an untagged set of hashes (a selector request) is scanned in process. */
  vectors?: VectorCache;
}

export interface RankResult {
  tools: RankedTool[];
  /** Why the answer is not what the mode promises, e.g. the model is unavailable. */
  degraded?: 'embedder_unavailable' | 'embedder_error';
  timings: { query_embedding_ms: number; retrieval_ms: number; fusion_ms: number };
}

function positions(ranked: Ranked): Map<string, { rank: number; score: number }> {
  return new Map(ranked.map(([id, score], index) => [id, { rank: index + 1, score }]));
}

/** pgvector for catalogs and tag filters; the in-process scan for a request's own tools. */
async function searchVectors(
  deps: RankDeps,
  embedder: Embedder,
  corpus: Corpus,
  vector: number[],
  options: { useVectorIndex: boolean; corpusVectors?: Promise<ReadonlyMap<string, Float32Array> | undefined> },
  depth: number,
): Promise<Ranked> {
  const useIndex = options.useVectorIndex;
  if (corpus.kind === 'hashes' && !corpus.tags?.length) {
    const inHand = await options.corpusVectors;
    if (inHand) return rankByCosine(vector, inHand, depth);
    if (deps.vectors) return rankByCosine(vector, (await deps.vectors.load(deps.db, currentRecipe(embedder.modelId), corpus.hashes)).vectors, depth);
  }
  return searchVector(deps.db, corpus, { model: embedder.modelId, vector, useIndex }, depth);
}

/**
 * The hybrid pipeline. Stages pass ids and scores; documents are loaded by the caller, last.
 * Tags filter inside both retrievers (before any cut), fusion reads RRF_DEPTH candidates from
 * each, tag boosts and exact names reorder, and only then is the list cut to topK.
 */
export async function rankCorpus(
  deps: RankDeps,
  corpus: Corpus,
  request: RankQuery,
  options: {
    useVectorIndex: boolean;
    /** The query's embedding when the caller started it early (it then overlaps the caller's own work). */
    queryVector?: Promise<number[]>;
    /** BM25 statistics of exactly this (untagged) corpus, cached by the caller: scored in process. */
    bm25Index?: Bm25Index;
    /**
     * The embedder's vectors of this (untagged) hash corpus, being loaded by the caller (alongside
     * BM25 and the query embedding): scanned in process.
     */
    corpusVectors?: Promise<ReadonlyMap<string, Float32Array> | undefined>;
    onEmbedError?: (error: unknown) => void;
  },
): Promise<RankResult> {
  const filtered: Corpus = request.tags?.length ? { ...corpus, tags: request.tags } : corpus;
  const terms = distinctTerms(queryTerms(request.query));
  const wantVector = request.mode !== 'bm25';
  const embedder = deps.embedder;
  const timings = { query_embedding_ms: 0, retrieval_ms: 0, fusion_ms: 0 };

  const started = performance.now();
  const depth = Math.max(RRF_DEPTH, request.topK);
  // BM25 needs no vector: it runs while the model embeds the query.
  const bm25Promise: Promise<Ranked> =
    request.mode === 'vector'
      ? Promise.resolve([])
      : options.bm25Index && !request.tags?.length
        ? Promise.resolve(options.bm25Index.search(terms, depth))
        : searchBm25(deps.db, filtered, { terms, weights: terms.map(() => 1) }, depth);
  bm25Promise.catch(() => {}); // awaited below; no unhandled rejection while the model runs
  let degraded: RankResult['degraded'];
  let queryVector: number[] | undefined;
  if (wantVector && !embedder) degraded = 'embedder_unavailable';
  if (wantVector && embedder && request.query.trim() !== '') {
    const embedStarted = performance.now();
    try {
      queryVector = await (options.queryVector ?? embedder.embedQuery(request.query));
    } catch (error) {
      // A model failure must not fail the search: rank with BM25 alone and say so.
      if (request.mode === 'vector') throw error;
      degraded = 'embedder_error';
      options.onEmbedError?.(error);
    }
    timings.query_embedding_ms = performance.now() - embedStarted;
  }
  const [bm25, vector] = await Promise.all([
    bm25Promise,
    embedder && queryVector ? searchVectors(deps, embedder, filtered, queryVector, options, depth) : Promise.resolve<Ranked>([]),
  ]);
  timings.retrieval_ms = performance.now() - started - timings.query_embedding_ms;

  const fusionStarted = performance.now();
  let fused: [string, number][] =
    request.mode === 'bm25' ? bm25 : request.mode === 'vector' ? vector : fuseHybrid(bm25, vector);
  const boosts = new Map<string, number>();
  if (request.tags?.length) {
    const tags = await tagsOf(deps.db, filtered, fused.map(([id]) => id));
    const before = new Map(fused);
    fused = boostByTags(fused, tags, request.tags);
    for (const [id, score] of fused) boosts.set(id, score - (before.get(id) ?? score));
  }
  const exactIds = request.exactIds ?? [];
  const exact = new Set(exactIds);
  if (exact.size > 0) {
    // Named tools come first even when no retriever surfaced them (say, an empty description).
    const scores = new Map(fused);
    fused = [...exactIds.map((id): [string, number] => [id, scores.get(id) ?? 0]), ...fused.filter(([id]) => !exact.has(id))];
  }
  timings.fusion_ms = performance.now() - fusionStarted;

  const bm25At = positions(bm25);
  const vectorAt = positions(vector);
  const tools = fused.slice(0, request.topK).map(([id, score]) => ({
    id,
    score,
    explain: {
      bm25: bm25At.get(id) ?? null,
      vector: vectorAt.get(id) ?? null,
      tag_boost: boosts.get(id) ?? 0,
      exact_name: exact.has(id),
    },
  }));
  return { tools, timings, ...(degraded ? { degraded } : {}) };
}
