import { queryTerms } from '../ranking/search-text.js';
import type { Embedder } from '../embed/embedder.js';
import type { Db } from '../store/database.js';
import type { Ranked } from '../store/search-store.js';
import { byScoreThenKey, distinctTerms } from '../ranking/bm25.js';
import { denseQueryText, expandTerms, expandTermsLoaded, type ExpandedTerms, type Vocabulary } from '../ranking/fuzzy-terms.js';
import { appendBelow, bm25Peak, denseWeight, fuseHybrid, RRF_DEPTH, RRF_K } from '../ranking/rrf.js';
import { boostByTags, carriesTag } from '../ranking/tags.js';
import type { CatalogIndexCache } from './catalog-index.js';
import type { CorpusSource, ServerList } from './corpus-source.js';
import type { CatalogVectorCache } from './catalog-vectors.js';
import type { StoreBreaker } from './store-breaker.js';
import type { CatalogEmbeddingStatus } from '../catalog/embedding-status.js';
import type { TermsRefresh } from '../catalog/refresh-terms.js';
import type { ServerIndex, ServerStatsCache } from './server-stats.js';
import { addServerVotes, entriesFor, serverCentroids, SERVER_DEPTH, SERVER_SCAN_MAX, type ServerLists, type ServerMembers } from '../ranking/servers.js';
import { rankByCosine } from '../ranking/vector-scan.js';
import type { VectorCache } from '../store/vector-cache.js';
import type { SeenTools } from './seen-tools.js';
import type { LearnedCache } from './learned-cache.js';
import type { RecentSearches } from './feedback.js';
import { addLearnedVotes, learnedWeight } from '../ranking/learned.js';
import { detectLanguage, isMultilingualModel } from '../ranking/language.js';
import { rerankHead, rerankText, type RerankMode } from '../ranking/rerank.js';
import type { Reranker } from '../embed/reranker.js';
import { withDeadline } from '../lib/deadline.js';

/** A query embedding that did not finish within the caller's latency budget (it still completes). */
export class EmbedderBusy extends Error {
  constructor(budgetMs: number) {
    super(`query embedding not ready within ${budgetMs} ms`);
    this.name = 'EmbedderBusy';
  }
}

export type SearchMode = 'hybrid' | 'bm25' | 'vector';

export interface RankQuery {
  query: string;
  topK: number;
  mode: SearchMode;
  /** Corpus ids the query names exactly: they go first, in this order (under a tag filter, those carrying a tag). */
  exactIds?: string[];
  /**
   * Only the ids the caller's key sees (search/visibility.ts): each list is read `hidden` deeper,
   * so the tools it leaves out cannot leave the answer short, and they go before the cut.
   */
  visible?: { keep(id: string): boolean; hidden: number };
}

/** How much deeper than topK a limited key's lists are read at most: past it, an answer may be short of topK. */
export const HIDDEN_DEPTH_MAX = 10_000;

export interface RankedTool {
  id: string;
  score: number;
  explain: {
    bm25: { rank: number; score: number } | null;
    vector: { rank: number; score: number } | null;
    tag_boost: number;
    /** What the tool's server added (ranking/servers.ts): 0 without a server or in a single mode. */
    server_vote: number;
    /** What was learned from use (ranking/learned.ts): the tool's place in the learned list, its events and the vote added; null: none. */
    learned: { rank: number; events: number; vote: number } | null;
    /** The tool's rank and score in the reranker's list; null: not reranked (no reranker, not in its top N, or it failed). */
    rerank: { rank: number; score: number } | null;
    exact_name: boolean;
  };
}

/** The optional rerank stage (RERANK_URL): the fused top `topN` reordered by a rerank service within `deadlineMs`. */
export interface RerankStage {
  reranker: Reranker;
  topN: number;
  deadlineMs: number;
  mode: RerankMode;
  /** Each rerank's outcome and time, for metrics. */
  observe?: (outcome: RerankOutcome, ms: number) => void;
}

/** What came of the rerank stage: `ok`, or why the fused order stands. */
export type RerankOutcome = 'ok' | 'timeout' | 'error';

export interface RankDeps {
  db: Db;
  /** null when the model is off or failed to load: ranking falls back to BM25. */
  embedder: Embedder | null;
  /** When present, an untagged set of hashes (a selector request) is scanned in process. */
  vectors?: VectorCache;
  /** When present, a catalog's server mean vectors are kept in process between searches. */
  serverStats?: ServerStatsCache;
  /** When present, a catalog's BM25 statistics (tools and servers) are kept in process per revision. */
  catalogIndexes?: CatalogIndexCache;
  /**
   * Whether every stored document's BM25 terms are of this release's recipe (catalog/refresh-terms.ts);
   * while not, a stored catalog ranks from its in-process index only. Absent: they are.
   */
  storedTerms?: Pick<TermsRefresh, 'current' | 'stale' | 'version'>;
  /** When present, a catalog search says whether the catalog's vectors are still being computed. */
  embeddingStatus?: CatalogEmbeddingStatus;
  /** When present, a complete catalog of up to VECTORS_IN_PROCESS_MAX tools has its vectors scanned in process (a small one's once held). */
  catalogVectors?: CatalogVectorCache;
  /** When present, the gateway selector answers from memory without asking a store that just failed (selectFromCatalog). */
  storeBreaker?: StoreBreaker;
  /** When present, the tools catalog searches answered with, for answers from memory that give text (search/seen-tools.ts). */
  seenTools?: SeenTools;
  /** When present (LEARNING on), a stored catalog's ranking adds what agents used after similar queries (ranking/learned.ts). */
  learned?: LearnedCache;
  /** When present, searches answered here, by id and per caller: what feedback quotes and MCP calls are matched with (search/feedback.ts). */
  recentSearches?: RecentSearches;
  /** Whether the embedder reads queries in other languages than English (EMBED_MULTILINGUAL); unset: known from its id (ranking/language.ts). */
  multilingual?: boolean;
  /** When present (RERANK_URL), hybrid rankings' heads are reordered by a rerank service. */
  rerank?: RerankStage;
}

export interface RankResult {
  tools: RankedTool[];
  /** Why the answer is not what the mode promises, e.g. the model is unavailable. */
  degraded?: 'embedder_unavailable' | 'embedder_error' | 'embedder_busy';
  timings: { query_embedding_ms: number; retrieval_ms: number; fusion_ms: number };
  /** The top score of each retriever's list (0 when it is empty): what confidence is relative to. */
  bests: { bm25: number; vector: number };
  /**
   * A query in another language than English (ranking/language.ts): its BCP 47 tag, and whether a
   * model that reads it embedded it (false: ranked by the words it shares with the catalog first).
   */
  language?: { tag: string; understood: boolean };
  /** The rerank stage's outcome and time, when it ran. */
  rerank?: { outcome: RerankOutcome; ms: number };
}

function positions(ranked: Ranked): Map<string, { rank: number; score: number }> {
  return new Map(ranked.map(([id, score], index) => [id, { rank: index + 1, score }]));
}

/** Combines the server lists that ran; none when neither did (no servers, or not hybrid). */
function combineServerLists(bm25: ServerList, vector: ServerList): ServerLists | undefined {
  if (!bm25 && !vector) return undefined;
  // Both lists usually carry the same members (a catalog's servers: 20,000 at 100,000 tools, which
  // copying twice a search made ~3 MB of garbage); only different ones are merged.
  const members = !bm25 || !vector || bm25.members === vector.members ? (bm25 ?? vector)!.members : mergedMembers(bm25.members, vector.members);
  return { bm25: bm25?.ranked ?? [], vector: vector?.ranked ?? [], members };
}

function mergedMembers(first: ServerMembers, second: ServerMembers): ServerMembers {
  const merged = new Map(first);
  for (const [server, tools] of second) merged.set(server, tools);
  return merged;
}

/** A query's terms expanded over a vocabulary, and the text the dense list embeds for it. */
export interface ExpandedQuery {
  vocabulary: Vocabulary;
  expanded: ExpandedTerms;
  text: string;
}

/**
 * What rankCorpus computes first for `query` over this vocabulary: for a caller that starts the
 * embedding early, which hands it back (`expandedQuery`) so rankCorpus does not expand it again.
 */
export function expandQuery(query: string, vocabulary: Vocabulary): ExpandedQuery {
  const expanded = expandTerms(distinctTerms(queryTerms(query)), vocabulary, { inflectionsOnly: !detectLanguage(query).english });
  return { vocabulary, expanded, text: denseQueryText(query, expanded) };
}

/**
 * The hybrid pipeline over any corpus source (corpus-source.ts). Stages pass ids and scores;
 * documents are loaded by the caller, last. The source filters by tag inside every list (before
 * any cut), fusion reads RRF_DEPTH candidates from each, tag boosts and exact names reorder, and
 * only then is the list cut to topK. The options are about the query's embedding, not the corpus.
 */
export async function rankCorpus(
  deps: Pick<RankDeps, 'embedder' | 'rerank' | 'multilingual'>,
  source: CorpusSource,
  request: RankQuery,
  options: {
    /**
     * The embedding of `queryText` (default: the query as written) when the caller started it early
     * (it then overlaps the caller's own work): used when that is the dense query's text.
     */
    queryVector?: Promise<number[]>;
    queryText?: string;
    /** The caller's `expandQuery` of this query: used when its vocabulary is the source's. */
    expandedQuery?: ExpandedQuery;
    /** How to embed the dense query's text otherwise (the caller's latency budget); default the embedder's. */
    embedQuery?: (text: string) => Promise<number[]>;
    onEmbedError?: (error: unknown) => void;
  } = {},
): Promise<RankResult> {
  const terms = distinctTerms(queryTerms(request.query));
  // A query in another language is matched to inflections only: its words are not misspelled English ones.
  const language = detectLanguage(request.query);
  const modelReads = deps.embedder !== null && (deps.multilingual ?? isMultilingualModel(deps.embedder.modelId));
  // Hybrid ranks BM25's list first for a query the model does not read, the dense list's tools after
  // it: fused, that list's nearest tools are noise among BM25's (docs/ranking.md, "Queries in other languages").
  const unread = request.mode === 'hybrid' && !language.english && deps.embedder !== null && !modelReads;
  const wantVector = request.mode !== 'bm25';
  const embedder = deps.embedder;
  const timings = { query_embedding_ms: 0, retrieval_ms: 0, fusion_ms: 0 };

  const started = performance.now();
  const depth = Math.max(RRF_DEPTH, request.topK + Math.min(request.visible?.hidden ?? 0, HIDDEN_DEPTH_MAX));
  // BM25 needs no vector: it runs while the model embeds the query.
  // Typo matching: words the corpus lacks also count through its nearest words (ranking/fuzzy-terms.ts),
  // read from the whole corpus's vocabulary, in process when the source holds it, else the store's.
  const vocabulary = source.vocabulary;
  // The dense list reads the same corrections, for the typos among them (fuzzy-terms.ts denseQueryText).
  const handed = vocabulary && options.expandedQuery?.vocabulary === vocabulary ? options.expandedQuery : undefined;
  const expandedPromise: Promise<ExpandedTerms> = vocabulary
    ? Promise.resolve(handed?.expanded ?? expandTerms(terms, vocabulary, { inflectionsOnly: !language.english }))
    : expandTermsLoaded(terms, (words) => source.termFrequencies(words), { inflectionsOnly: !language.english });
  expandedPromise.catch(() => {});
  // Without a vocabulary in hand, the model starts on the query as written while the store is asked;
  // a query with a typo is embedded again with its likely words.
  const early =
    options.queryVector !== undefined
      ? { text: options.queryText ?? request.query, vector: options.queryVector }
      : wantVector && embedder && !vocabulary && request.query.trim() !== ''
        ? { text: request.query, vector: embedder.embedQuery(request.query) }
        : undefined;
  early?.vector.catch(() => {}); // awaited below, or not needed
  const weightsPromise = expandedPromise.then(({ weights }) => weights);
  const bm25Promise: Promise<Ranked> = weightsPromise.then((weights) => (request.mode === 'vector' ? [] : source.bm25(weights, depth)));
  bm25Promise.catch(() => {}); // awaited below; no unhandled rejection while the model runs
  // Server votes (hybrid only): from the source's statistics in process, else the store's lists.
  // Their BM25 list, like the tools', runs while the model embeds the query.
  const withServers = request.mode === 'hybrid' && source.serverVotes;
  const serverIndexPromise: Promise<ServerIndex | undefined> = withServers
    ? weightsPromise.then((weights) => source.serverIndex([...weights.keys()]))
    : Promise.resolve(undefined);
  serverIndexPromise.catch(() => {}); // awaited below
  const serverBm25Promise: Promise<ServerList> = !withServers
    ? Promise.resolve(undefined)
    : weightsPromise.then(async (weights) => {
        const serverIndex = await serverIndexPromise;
        if (!serverIndex) return source.serversBm25(weights, SERVER_DEPTH);
        return serverIndex.members.size ? { ranked: serverIndex.bm25.searchWeighted(weights, SERVER_DEPTH), members: serverIndex.members } : undefined;
      });
  serverBm25Promise.catch(() => {});
  let degraded: RankResult['degraded'];
  let queryVector: number[] | undefined;
  if (wantVector && !embedder) degraded = 'embedder_unavailable';
  if (wantVector && embedder && request.query.trim() !== '') {
    const text = handed?.text ?? denseQueryText(request.query, await expandedPromise);
    const embedStarted = performance.now();
    try {
      queryVector = await (early?.text === text ? early.vector : (options.embedQuery ?? ((words: string) => embedder.embedQuery(words)))(text));
    } catch (error) {
      // A model failure must not fail the search: rank with BM25 alone and say so.
      if (request.mode === 'vector') throw error;
      if (error instanceof EmbedderBusy) {
        degraded = 'embedder_busy';
      } else {
        degraded = 'embedder_error';
        options.onEmbedError?.(error);
      }
    }
    timings.query_embedding_ms = performance.now() - embedStarted;
  }
  const vectorsInHand = embedder && queryVector ? source.vectors(embedder) : undefined;
  const searchingVectors = async (): Promise<Ranked> => {
    if (!embedder || !queryVector) return [];
    const inHand = await vectorsInHand;
    if (inHand) return rankByCosine(queryVector, inHand, depth, source.tieKeyOf);
    return source.dense(embedder, queryVector, depth);
  };
  const vectorPromise = searchingVectors();
  vectorPromise.catch(() => {}); // awaited below
  const searchingServerVectors = async (): Promise<ServerList> => {
    if (!withServers || !embedder || !queryVector || unread) return undefined;
    const serverIndex = await serverIndexPromise;
    const servers = serverIndex?.members.size ? serverIndex : undefined;
    if (serverIndex && !servers) return undefined;
    if (servers) {
      // The source's means (a catalog's, kept), else the means of the vectors in hand.
      const given = await source.serverMeans(embedder, servers.members);
      const inHand = given ? undefined : await vectorsInHand;
      const means = given ?? (inHand && serverCentroids(servers.members, inHand));
      if (means && means.size > SERVER_SCAN_MAX && servers.serverOf) {
        const [tools, bm25Servers] = await Promise.all([vectorPromise, serverBm25Promise]);
        const candidates = [...tools.map(([id]) => servers.serverOf!.get(id)), ...(bm25Servers?.ranked ?? []).map(([server]) => server)];
        return { ranked: rankByCosine(queryVector, entriesFor(candidates, means), SERVER_DEPTH), members: servers.members };
      }
      if (means) return { ranked: rankByCosine(queryVector, means, SERVER_DEPTH), members: servers.members };
    }
    return source.serversDense(embedder, queryVector, SERVER_DEPTH);
  };
  const [bm25Read, vectorRead, serverBm25, serverVector] = await Promise.all([bm25Promise, vectorPromise, serverBm25Promise, searchingServerVectors()]);
  timings.retrieval_ms = performance.now() - started - timings.query_embedding_ms;
  // A key that sees only some tools is ranked as if the others were not listed (read deep enough
  // for it above): their places would push the tools it sees down one list and not the other, and
  // `explain`'s ranks would count tools it does not see. Only the corpus's statistics stay shared.
  const visible = request.visible;
  const bm25 = visible ? bm25Read.filter(([id]) => visible.keep(id)) : bm25Read;
  const vector = visible ? vectorRead.filter(([id]) => visible.keep(id)) : vectorRead;

  const fusionStarted = performance.now();
  // A dense list that lacks some of the corpus's tools (not embedded yet) earns no say for its head
  // standing out: the tools that would have crowded it may be the ones missing.
  const denseComplete = source.denseComplete(await vectorsInHand);
  let fused: [string, number][] =
    request.mode === 'bm25'
      ? bm25
      : request.mode === 'vector'
        ? vector
        : unread
          ? appendBelow(fuseHybrid(bm25, []), vector)
          : fuseHybrid(bm25, vector, denseWeight((await expandedPromise).known, bm25, denseComplete ? vector : []));
  let serverVotes = new Map<string, number>();
  const serverLists = combineServerLists(serverBm25, serverVector);
  if (serverLists) ({ fused, votes: serverVotes } = addServerVotes(fused, serverLists));
  // The learned list (hybrid only): of the tools the lists above rank, those used after past queries
  // like this one, by its words and its embedding. What was learned only adds: a list that cannot be
  // read leaves the ranking as it was.
  const learned =
    request.mode === 'hybrid' && source.learned
      ? await source
          .learned(
            terms,
            queryVector,
            fused.map(([id]) => id),
            request.query,
          )
          .catch(() => undefined)
      : undefined;
  let learnedVotes = new Map<string, number>();
  if (learned && learned.ranked.length > 0)
    ({ fused, votes: learnedVotes } = addLearnedVotes(fused, learned.ranked, {
      weight: learnedWeight(learned.weight, learned.peakExponent, bm25Peak(bm25)),
      evidenceFull: learned.evidenceFull,
      k: RRF_K,
      tiesShare: learned.tiesShare,
      ...(learned.twinGroups ? { twinGroups: learned.twinGroups } : {}),
    }));
  const boosts = new Map<string, number>();
  const boostBy = source.tags;
  let exactIds = request.exactIds ?? [];
  if (boostBy?.length) {
    const ids = [...new Set([...fused.map(([id]) => id), ...exactIds])];
    const tags = await source.tagsOf(ids);
    const before = new Map(fused);
    fused = boostByTags(fused, tags, boostBy);
    for (const [id, score] of fused) boosts.set(id, score - (before.get(id) ?? score));
    // A tool named exactly passes the tag filter like any other.
    exactIds = exactIds.filter((id) => carriesTag(tags.get(id) ?? [], boostBy));
  }
  if (source.tieKeyOf) fused = [...fused].sort(byScoreThenKey(source.tieKeyOf));
  // What the key does not see goes before the rerank and the cut (a tool a server's or the learned
  // list brought, and a name it gives exactly too).
  if (visible) {
    fused = fused.filter(([id]) => visible.keep(id));
    exactIds = exactIds.filter((id) => visible.keep(id));
  }
  timings.fusion_ms = performance.now() - fusionStarted;
  // The rerank stage (hybrid only): the head reordered by the service; past its deadline, or on any
  // error, the fused order stands and the answer says why. Exact names still go first below.
  let rerankAt = new Map<string, { rank: number; score: number }>();
  let rerank: RankResult['rerank'];
  if (deps.rerank && request.mode === 'hybrid' && source.texts && fused.length > 1 && request.query.trim() !== '') {
    ({ fused, at: rerankAt, outcome: rerank } = await rerankFused(deps.rerank, source.texts, request.query, fused));
  }
  const exactStarted = performance.now();
  const exact = new Set(exactIds);
  if (exact.size > 0) {
    // Named tools come first even when no retriever surfaced them (say, an empty description).
    const scores = new Map(fused);
    fused = [...exactIds.map((id): [string, number] => [id, scores.get(id) ?? 0]), ...fused.filter(([id]) => !exact.has(id))];
  }
  timings.fusion_ms += performance.now() - exactStarted;

  const bm25At = positions(bm25);
  const vectorAt = positions(vector);
  const learnedAt = new Map([...learnedVotes.keys()].map((id, index) => [id, { rank: index + 1 }]));
  const tools = fused.slice(0, request.topK).map(([id, score]) => ({
    id,
    score,
    explain: {
      bm25: bm25At.get(id) ?? null,
      vector: vectorAt.get(id) ?? null,
      tag_boost: boosts.get(id) ?? 0,
      server_vote: serverVotes.get(id) ?? 0,
      learned: learnedAt.has(id) ? { ...learnedAt.get(id)!, events: learned?.events.get(id) ?? 0, vote: learnedVotes.get(id) ?? 0 } : null,
      rerank: rerankAt.get(id) ?? null,
      exact_name: exact.has(id),
    },
  }));
  // Understood: embedded by a model that reads the query's language (else BM25's list, put first, matched its shared words).
  const understood = queryVector !== undefined && modelReads;
  return {
    tools,
    timings,
    bests: { bm25: bm25[0]?.[1] ?? 0, vector: vector[0]?.[1] ?? 0 },
    ...(degraded ? { degraded } : {}),
    ...(rerank ? { rerank } : {}),
    ...(language.english ? {} : { language: { tag: language.tag, understood } }),
  };
}

/** The fused list with its head reordered by the rerank service, or as it was with the reason. */
async function rerankFused(
  stage: RerankStage,
  texts: NonNullable<CorpusSource['texts']>,
  query: string,
  fused: [string, number][],
): Promise<{ fused: [string, number][]; at: Map<string, { rank: number; score: number }>; outcome: { outcome: RerankOutcome; ms: number } }> {
  const started = performance.now();
  const head = fused.slice(0, stage.topN);
  const controller = new AbortController();
  let outcome: RerankOutcome = 'ok';
  try {
    const scores = await withDeadline(
      (async () => {
        const known = await texts(head.map(([id]) => id));
        const documents = head.map(([id]) => {
          const text = known.get(id);
          return text ? rerankText(text.name, text.description) : '';
        });
        return stage.reranker.rerank(query, documents, controller.signal);
      })(),
      Math.max(0, stage.deadlineMs),
      () => new RerankLate(),
    );
    const { reordered, at } = rerankHead(head, scores, stage.mode, RRF_K);
    return { fused: [...reordered, ...fused.slice(head.length)], at, outcome: done() };
  } catch (error) {
    controller.abort();
    outcome = error instanceof RerankLate ? 'timeout' : 'error';
    return { fused, at: new Map(), outcome: done() };
  }
  function done() {
    const ms = performance.now() - started;
    stage.observe?.(outcome, ms);
    return { outcome, ms };
  }
}

class RerankLate extends Error {}
