/**
 * A set of tools to rank, as the fusion needs it (issue 71): each list's retrieval, wherever its
 * data lives. `rankCorpus` (hybrid-search.ts) asks a source for its BM25 list, its dense list, its
 * servers' lists, its vocabulary and its tools' tags, and fuses what it gets; it never asks where
 * they come from. A source is chosen once per request:
 * - `requestListSource`: the tools a request carries (the selector, tool-search): its BM25 and server
 *   statistics in process, its vectors as loaded by hash;
 * - `storedCatalogSource`: a stored catalog through the store: every list in SQL, except those the
 *   process holds for the catalog's revision (its index, its vectors, its servers' means), which it
 *   ranks in process. With nothing held it is the catalog read through SQL;
 * - `rememberedCatalogSource`: a catalog as this process last saw it, while the store does not
 *   answer: only what the process holds, never the store;
 * - `storedListSource`: a list of stored documents by hash, every list in SQL (what the selector's
 *   in-process ranking is held equal to).
 * A new list is one more method here, implemented by each source, and one more input of the fusion.
 */
import type { Embedder } from '../embed/embedder.js';
import type { Bm25Index } from '../ranking/bm25-index.js';
import type { Vocabulary } from '../ranking/fuzzy-terms.js';
import type { ServerMembers } from '../ranking/servers.js';
import { cosine, type LearnedIndex, type LearnedList, type LearnedParams, type ToolLikeness, type ToolWords } from '../ranking/learned.js';
import type { Db } from '../store/database.js';
import {
  type Corpus,
  type CorpusNames,
  loadTermFrequencies,
  type Ranked,
  searchBm25,
  searchServersBm25,
  searchServersVector,
  searchVector,
  tagsOf,
  textsOf,
} from '../store/search-store.js';
import type { CatalogIndex } from './catalog-index.js';
import type { ServerIndex } from './server-stats.js';

/** A server list as retrieved: the servers ranked, and each server's tools. */
export type ServerList = { ranked: Ranked; members: ServerMembers } | undefined;

/** Weighted query terms as the SQL statements take them. */
const weighted = (weights: ReadonlyMap<string, number>) => ({ terms: [...weights.keys()], weights: [...weights.values()] });

export interface CorpusSource {
  /** The words typo matching reads, when in process; undefined: the store's, read per query (`termFrequencies`). */
  readonly vocabulary: Vocabulary | undefined;
  /** The document frequencies of `words` in the corpus (typo matching without a vocabulary in hand). */
  termFrequencies(words: readonly string[]): Promise<Map<string, number>>;
  /** BM25 over the corpus (the tag filter applied first), for weighted query terms, best `depth`. */
  bm25(weights: ReadonlyMap<string, number>, depth: number): Promise<Ranked>;
  /**
   * The corpus's servers for the server votes, in process, given the query's (expanded) terms;
   * undefined: the store's server lists (`serversBm25`, `serversDense`).
   */
  serverIndex(terms: readonly string[]): Promise<ServerIndex | undefined>;
  /** The store's BM25 list of servers (when `serverIndex` gives none). */
  serversBm25(weights: ReadonlyMap<string, number>, depth: number): Promise<ServerList>;
  /**
   * The corpus's vectors in process, by id, for the embedder's current model (being loaded: they
   * come while BM25 runs and the model embeds the query); undefined: the dense list runs in the store.
   */
  vectors(embedder: Embedder): Promise<ReadonlyMap<string, Float32Array> | undefined>;
  /** The store's dense list (when the vectors are not in process). */
  dense(embedder: Embedder, vector: number[], depth: number): Promise<Ranked>;
  /** The servers' unit-length mean vectors when the source keeps them; undefined: computed from the vectors in hand, else in the store. */
  serverMeans(embedder: Embedder, members: ServerMembers): Promise<ReadonlyMap<string, Float32Array> | undefined>;
  /** The store's dense list of servers. */
  serversDense(embedder: Embedder, vector: number[], depth: number): Promise<ServerList>;
  /** The tags of `ids` (for the tag boost and the exact names' filter). */
  tagsOf(ids: string[]): Promise<ReadonlyMap<string, readonly string[]>>;
  /** The tags the corpus is filtered by: each one a tool carries boosts it. */
  readonly tags: readonly string[] | undefined;
  /** Whether every tool of the corpus has a current vector, given the vectors in hand. */
  denseComplete(inHand: ReadonlyMap<string, Float32Array> | undefined): boolean;
  /** Whether servers vote (their SQL would cost too much for a large catalog without its index). */
  readonly serverVotes: boolean;
  /**
   * The learned list (ranking/learned.ts): of `candidates` (the tools the other lists rank), those
   * used after past queries like this one, by the query's words and embedding. Absent: nothing is learned for this corpus (a request's tools,
   * LEARNING=off).
   */
  readonly learned?: (terms: readonly string[], vector: number[] | undefined, candidates: readonly string[], text?: string) => Promise<LearnedList | undefined>;
  /** What orders tied tools where the id does not (a request's hashes: their names). */
  readonly tieKeyOf?: (id: string) => string;
  /** The names and descriptions of `ids`, for the rerank stage; absent: not reranked (a remembered catalog). */
  readonly texts?: (ids: string[]) => Promise<ReadonlyMap<string, { name: string; description: string }>>;
}

/** What every source that can reach the store shares: the SQL lists over `corpus`. */
function storeLists(db: Db, corpus: Corpus, useVectorIndex: boolean) {
  return {
    termFrequencies: (words: readonly string[]) => loadTermFrequencies(db, corpus, words),
    serversBm25: (weights: ReadonlyMap<string, number>, depth: number): Promise<ServerList> => searchServersBm25(db, corpus, weighted(weights), depth),
    dense: (embedder: Embedder, vector: number[], depth: number) =>
      searchVector(db, corpus, { model: embedder.modelId, vector, useIndex: useVectorIndex }, depth),
    serversDense: (embedder: Embedder, vector: number[], depth: number): Promise<ServerList> =>
      searchServersVector(db, corpus, { model: embedder.modelId, vector }, depth),
    texts: (ids: string[]) => textsOf(db, corpus, ids),
  };
}

/** A list of stored documents by hash, every list in SQL. */
export function storedListSource(db: Db, hashes: string[], options: { tags?: string[] } = {}): CorpusSource {
  const corpus: Corpus = { kind: 'hashes', hashes, ...(options.tags?.length ? { tags: options.tags } : {}) };
  return {
    ...storeLists(db, corpus, false),
    vocabulary: undefined,
    bm25: (weights, depth) => searchBm25(db, corpus, weighted(weights), depth),
    serverIndex: async () => undefined,
    vectors: async () => undefined,
    serverMeans: async () => undefined,
    tagsOf: (ids) => tagsOf(db, corpus, ids),
    tags: options.tags?.length ? options.tags : undefined,
    denseComplete: (inHand) => inHand !== undefined && inHand.size >= hashes.length,
    serverVotes: true,
  };
}

/**
 * The tools a request carries, filtered by the caller when tagged: their BM25 and server
 * statistics in process, their vectors as the caller loads them (`vectors`), the store's dense list
 * for what is not loaded. Ids are content hashes; ties go by name (`tieKeyOf`).
 */
export function requestListSource(
  db: Db,
  list: {
    hashes: string[];
    bm25: Bm25Index;
    servers: ServerIndex;
    /** The words typo matching reads: the whole list's, when this is its tag-filtered part. */
    vocabulary: Vocabulary;
    vectors: Promise<ReadonlyMap<string, Float32Array> | undefined>;
    /** The servers' means, when kept for the list (every vector in hand). */
    serverMeans?: () => Promise<ReadonlyMap<string, Float32Array>>;
    tieKeyOf: (id: string) => string;
    /** The tags the caller filtered the list by, and each tool's tags. */
    tagged?: { tags: readonly string[]; byId: ReadonlyMap<string, readonly string[]> };
    /** The tools' names and descriptions by hash, in hand (a list's tools may not be stored yet). */
    texts?: (ids: string[]) => ReadonlyMap<string, { name: string; description: string }>;
  },
): CorpusSource {
  const corpus: Corpus = { kind: 'hashes', hashes: list.hashes };
  return {
    ...storeLists(db, corpus, false),
    vocabulary: list.vocabulary,
    bm25: async (weights, depth) => list.bm25.searchWeighted(weights, depth),
    serverIndex: async () => list.servers,
    vectors: () => list.vectors,
    serverMeans: async () => (list.serverMeans ? list.serverMeans() : undefined),
    tagsOf: async () => list.tagged?.byId ?? new Map(),
    tags: list.tagged?.tags,
    denseComplete: (inHand) => inHand !== undefined && inHand.size >= list.hashes.length,
    serverVotes: true,
    tieKeyOf: list.tieKeyOf,
    ...(list.texts ? { texts: async (ids: string[]) => list.texts!(ids) } : {}),
  };
}

/** What a stored or remembered catalog's source holds in process for its revision. */
export interface CatalogInHand {
  catalogId: number;
  /** The catalog's index for this revision: BM25 (tag filter included), servers, tags, vocabulary. */
  index?: CatalogIndex;
  /** The catalog's (under a tag filter: the tagged tools') vectors, being read or held. */
  vectors?: Promise<ReadonlyMap<string, Float32Array> | undefined>;
  /** The servers' means (a catalog's, kept per revision; a tag filter's, kept with its vectors). */
  serverMeans?: (members: ServerMembers) => Promise<ReadonlyMap<string, Float32Array> | undefined>;
  /** Under a tag filter, the tagged tools' servers for the query's terms (the index's `serversCarrying`). */
  tagServers?: (terms: readonly string[]) => ServerIndex;
  tags?: string[];
  /** Every tool has a current vector (the catalog's embedding status); undefined: not known to. */
  denseComplete?: boolean;
  /** No server votes (a large catalog without its index: their SQL would cost too much). */
  withoutServers?: boolean;
  /** The BM25 recipe the store's list must rank with (else `MixedRecipes`); undefined: not checked. */
  termsVersion?: number;
  /** What was learned from use in the catalog (being read, or held), and how to read it. */
  learned?: { index: Promise<LearnedIndex | undefined>; params: LearnedParams };
  /** The store's terms are of two recipes (being refreshed) and no index is in hand: nothing reads them (no BM25, no typo matching). */
  withoutTerms?: boolean;
  /** Without the index, for a key that sees only some tools: the store's lists and statistics are of those tools. */
  names?: CorpusNames;
}

/** The learned list from a catalog's learned index in hand (none: nothing learned yet, or it could not be read). */
function learnedFrom(held: CatalogInHand): CorpusSource['learned'] {
  const learned = held.learned;
  if (!learned) return undefined;
  const index = held.index;
  const toolWords: ToolWords | undefined = index ? (tools, words) => index.toolWords(tools, words) : undefined;
  return async (terms, vector, candidates, text) => {
    const past = await learned.index.catch(() => undefined);
    if (!past) return undefined;
    const { twinSimilarity, twinCosine } = learned.params;
    const vectors = twinCosine > 0 ? await held.vectors?.catch(() => undefined) : undefined;
    const toolLikeness: ToolLikeness | undefined =
      (index && twinSimilarity > 0) || vectors
        ? (tools, only) => {
            const words = index && twinSimilarity > 0 ? index.toolLikeness(tools, only, learned.params.twinMinShared) : () => 0;
            // One server's tools are different functions by construction, however alike their words.
            const serverOf = (tool: string) => index?.servers.serverOf.get(tool);
            return (a, b) =>
              serverOf(a) !== undefined && serverOf(a) === serverOf(b)
                ? { words: 0, meaning: 0 }
                : { words: words(a, b), meaning: vectors ? cosine(vectors.get(a), vectors.get(b)) : 0 };
          }
        : undefined;
    return past.list(candidates, terms, vector, Date.now() / 1000, learned.params, toolWords, toolLikeness, text);
  };
}

/** A stored catalog through the store: in process what `held` has, in SQL the rest. */
export function storedCatalogSource(db: Db, held: CatalogInHand, useVectorIndex: boolean): CorpusSource {
  const corpus: Corpus = {
    kind: 'catalog',
    catalogId: held.catalogId,
    ...(held.tags?.length ? { tags: held.tags } : {}),
    ...(held.names && !held.index ? { names: held.names } : {}),
  };
  const { index, tagServers } = held;
  const tagged = held.tags?.length ? held.tags : undefined;
  return {
    ...storeLists(db, corpus, useVectorIndex),
    vocabulary: index?.bm25.vocabulary(),
    bm25: async (weights, depth) => (index ? index.search(weights, depth, tagged) : searchBm25(db, corpus, weighted(weights), depth, held.termsVersion)),
    // Under a tag filter only the tagged tools' servers vote: from the index in hand, else in SQL.
    serverIndex: async (terms) => (tagged ? tagServers?.(terms) : index?.serversFor(terms)),
    vectors: async () => held.vectors,
    serverMeans: async (_embedder, members) => held.serverMeans?.(members),
    tagsOf: async (ids) => (index ? index.tagsOf(ids) : tagsOf(db, corpus, ids)),
    tags: tagged,
    denseComplete: () => held.denseComplete === true,
    serverVotes: !held.withoutServers && !held.withoutTerms,
    ...(held.learned ? { learned: learnedFrom(held) } : {}),
    ...(held.withoutTerms ? { termFrequencies: async () => new Map<string, number>(), bm25: async () => [] } : {}),
  };
}

/** Every store list of a remembered catalog: asked for, it is a bug (the source must not touch the store). */
const notInMemory = (): never => {
  throw new Error('a remembered catalog was asked for a list only the store has');
};

/**
 * A catalog as this process last saw it (its index, perhaps a revision behind the store's), while
 * the store does not answer: the lists the process holds, never the store. Without its vectors (or
 * its servers' means) there is no dense list: BM25 with typo matching and the servers' BM25 votes,
 * as the store ranks while the model is down.
 */
export function rememberedCatalogSource(held: CatalogInHand & { index: CatalogIndex }): CorpusSource {
  const { index, tagServers } = held;
  const tagged = held.tags?.length ? held.tags : undefined;
  return {
    vocabulary: index.bm25.vocabulary(),
    termFrequencies: notInMemory,
    bm25: async (weights, depth) => index.search(weights, depth, tagged),
    serverIndex: async (terms) => (tagged ? tagServers?.(terms) : index.serversFor(terms)),
    serversBm25: notInMemory,
    vectors: async () => held.vectors,
    dense: notInMemory,
    serverMeans: async (_embedder, members) => held.serverMeans?.(members),
    serversDense: notInMemory,
    tagsOf: async (ids) => index.tagsOf(ids),
    tags: tagged,
    denseComplete: () => true,
    serverVotes: true,
    ...(held.learned ? { learned: learnedFrom(held) } : {}),
  };
}
