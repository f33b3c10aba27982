import { AppError, notFound } from '../errors.js';
import { catalogToolServers, getCatalog, listCatalogTools, loadCatalogTools } from '../store/catalog-store.js';
import { corpusIds, EXACT_SCAN_MAX, existingNames, MixedRecipes } from '../store/search-store.js';
import { rankingConfidences } from '../ranking/confidence.js';
import type { CatalogSummary, CatalogToolRow } from '../store/catalog-store.js';
import { EmbedderBusy, expandQuery, HIDDEN_DEPTH_MAX, rankCorpus, type RankDeps, type RankQuery, type RankedTool, type RankResult } from './hybrid-search.js';
import { rememberedCatalogSource, storedCatalogSource } from './corpus-source.js';
import { SEARCH_RECOUNT_MS, type PendingEmbeddings } from '../catalog/embedding-status.js';
import { toolsSeen, withoutVector } from '../catalog/catalog-service.js';
import { nameCandidates } from './patterns.js';
import type { Bm25Index } from '../ranking/bm25-index.js';
import type { CatalogIndex } from './catalog-index.js';
import { withDeadline } from '../lib/deadline.js';
import { isDatabaseUnavailable } from '../store/database.js';
import { entriesFor, type ServerMembers } from '../ranking/servers.js';
import { currentRecipe } from '../embed/embed-documents.js';
import type { Access } from '../trust/policy.js';
import { visibleIndex, visibleInIndex, visibleInStore, visibleMeans, type Visible } from './visibility.js';

/** The largest catalog whose server votes are computed in SQL while its index is read. */
export const SQL_SERVER_LISTS_MAX = 20_000;

/** A catalog search: the query, how many, the mode, and a tag filter (only tools carrying one of them; each match boosts). */
export type CatalogQuery = Omit<RankQuery, 'exactIds' | 'visible'> & {
  tags?: string[];
  /** The key asking (trust/policy.ts): its catalogs, and only the tools it sees, ranked before the cut. */
  access?: Access;
  /** How long the query's embedding may take (the gateway selector's budget); past it BM25 answers (`embedder_busy`). */
  embedBudgetMs?: number;
};

export interface CatalogSearchResult {
  tools: (RankedTool & { tool: CatalogToolRow })[];
  /** `query_language`: the query is not in English and the model does not read its language (`language`), and nothing else is amiss. */
  degraded?: RankResult['degraded'] | 'embeddings_pending' | 'query_language' | 'terms_refreshing';
  /** A query in another language than English: its tag and whether the model read it (RankResult's). */
  language?: RankResult['language'];
  /** With `embeddings_pending`: tools of the catalog with a current vector, of all (of those the key sees, for a key that sees only some). */
  embedding?: PendingEmbeddings;
  timings: RankResult['timings'];
  bests: RankResult['bests'];
  rerank?: RankResult['rerank'];
}

/**
 * Ranks one stored catalog for a query; documents are loaded for the top results only. `read`: the
 * catalog's row when the caller has just read it (its revision keys the in-process index).
 */
export async function searchCatalog(
  deps: RankDeps,
  ref: { tenant: string; name: string },
  request: CatalogQuery,
  read?: CatalogSummary,
): Promise<CatalogSearchResult> {
  try {
    return await searchCatalogOnce(deps, ref, request, read);
  } catch (error) {
    // The store's BM25 list met terms of another recipe (a release of another recipe wrote them since
    // this one counted): they are refreshed, and this search ranks again from the index alone.
    if (!(error instanceof MixedRecipes) || !deps.storedTerms) throw error;
    deps.storedTerms.stale();
    return searchCatalogOnce(deps, ref, request, read);
  }
}

async function searchCatalogOnce(
  deps: RankDeps,
  ref: { tenant: string; name: string },
  request: CatalogQuery,
  read?: CatalogSummary,
): Promise<CatalogSearchResult> {
  // The query's embedding needs nothing from the store and is the slowest step under load: it
  // starts first, so the catalog's row, names and embedding status are read while the model works.
  // Its text is the dense query's (typos' likely words added) from the index in hand for the caller's
  // catalog row, else for the row as last read here (a revision behind at worst: rankCorpus embeds
  // again only if the current vocabulary corrects the query otherwise), else the query as written
  // (embedded again in rankCorpus if it has a typo).
  const early =
    request.mode !== 'bm25' && deps.embedder
      ? read
        ? deps.catalogIndexes?.held(read)
        : deps.catalogIndexes?.lastSeen(ref.tenant, ref.name)?.index
      : undefined;
  const expandedQuery = early ? expandQuery(request.query, early.bm25.vocabulary()) : undefined;
  const queryText = expandedQuery?.text ?? request.query;
  // Within the caller's budget, from the request's start: an embedding service that is slow
  // leaves this search to BM25 (its vector is cached for the next one when it arrives).
  const started = performance.now();
  const budget = request.embedBudgetMs;
  const embedQuery =
    deps.embedder && budget !== undefined
      ? (text: string) => withDeadline(deps.embedder!.embedQuery(text), Math.max(0, budget - (performance.now() - started)), () => new EmbedderBusy(budget))
      : undefined;
  const queryVector =
    request.mode !== 'bm25' && deps.embedder && request.query.trim() !== ''
      ? (embedQuery ?? ((text: string) => deps.embedder!.embedQuery(text)))(queryText)
      : undefined;
  queryVector?.catch(() => {}); // awaited in rankCorpus, which reports a failure
  const catalog = read ?? (await getCatalog(deps.db, ref.tenant, ref.name));
  if (!catalog) throw notFound(`catalog "${ref.name}"`);
  deps.catalogIndexes?.seen(ref.tenant, catalog);
  if (request.mode === 'vector' && !deps.embedder) {
    throw new AppError('service_unavailable', 'mode "vector" needs the embedding model, which is not available (see /readyz)');
  }
  const candidates = nameCandidates(request.query);
  // The catalog's terms in process (per revision, derived from the last one's), or BM25 in SQL until they are read.
  // Vector mode reads it too: its vocabulary corrects the dense query's typos (in SQL, each query's
  // words' postings over every catalog: ~100 ms for a 1,460-tool catalog beside a 100,000-tool one).
  // Which names the query mentions exist: the index in hand knows its revision's names, else the store.
  const held = deps.catalogIndexes?.held(catalog);
  // While stored terms of another recipe are refreshed, BM25 comes from the catalog's index alone;
  // a catalog whose index cannot be held ranks by meaning meanwhile (`termsRefreshing`).
  const refreshing = deps.storedTerms !== undefined && !deps.storedTerms.current;
  const [index, existing, pending] = await Promise.all([
    refreshing ? indexOfOneRecipe(deps, catalog) : deps.catalogIndexes?.forSearch(catalog, deps.db),
    held ? candidates.filter((name) => held.bm25.indexOf(name) !== undefined) : existingNames(deps.db, catalog.id, candidates),
    request.mode !== 'bm25' && deps.embedder && deps.embeddingStatus ? deps.embeddingStatus.pending(deps.db, catalog, deps.embedder.modelId) : undefined,
  ]);
  const found = new Set(existing);
  // Stored terms being refreshed and no index to rank BM25 from (a catalog larger than
  // CATALOG_INDEX_MEMORY): ranked by meaning alone meanwhile, exact names first, and said so. BM25
  // over the store's terms would mix two recipes' scores; nothing is answered that cannot be ranked.
  const termsRefreshing = refreshing && !index;
  if (termsRefreshing && request.mode === 'bm25') throw termsRefreshingError(ref.name, 'mode "bm25" needs them');
  if (termsRefreshing && !deps.embedder) throw termsRefreshingError(ref.name, 'without the embedding model nothing else ranks it');
  // A key that sees only some tools: those it does not see leave the ranking before its cut.
  // Without the index, the store ranks the tools the key sees as its corpus (their statistics).
  const inStore =
    request.access?.limitsTools && !index ? visibleInStore(request.access, catalog.name, await catalogToolServers(deps.db, catalog.id)) : undefined;
  const visible = index ? visibleInIndex(request.access, catalog.name, index) : inStore?.visible;
  const storeNames = inStore?.names;
  // Such a key is told how far the tools it sees are embedded: the catalog's count would tell of the others.
  const seenEmbedding = pending && request.access?.limitsTools ? seenPending(deps, catalog, request.access) : undefined;
  seenEmbedding?.catch(() => {}); // awaited with the answer
  // A complete catalog's vectors in process (search/catalog-vectors.ts), scanned exactly. A mid-size
  // one's are read for its search: the alternative is a filter over the HNSW graph every catalog
  // shares. A small one's are used once held, and read after its first search, which ranks in SQL
  // (an exact scan there too): held, they spare each search the scan's read, and they let the
  // gateway selector answer from memory with the hybrid ranking while the store is down. A failed
  // read ranks in SQL. Under a tag filter, the vectors of the tools carrying a tag (named by the
  // index in hand, else read): HNSW with a filter missed some of a tag's nearest tools, unlike the
  // same tools sent inline.
  const keepVectors =
    request.mode !== 'bm25' &&
    deps.embedder &&
    deps.catalogVectors &&
    deps.embeddingStatus &&
    pending === undefined &&
    catalog.toolCount <= deps.catalogVectors.maxTools
      ? { cache: deps.catalogVectors, recipe: currentRecipe(deps.embedder.modelId) }
      : undefined;
  const vectorsNow =
    keepVectors &&
    (catalog.toolCount > EXACT_SCAN_MAX
      ? keepVectors.cache.get(deps.db, catalog, keepVectors.recipe)
      : keepVectors.cache.held(catalog, keepVectors.recipe.model));
  const taggedNames = request.tags?.length ? index?.namesCarrying(request.tags) : undefined;
  // A larger catalog under a tag filter, its index in hand: the tagged tools' vectors by their hashes,
  // kept for the revision and tags (with their servers' means) when as few as a catalog scanned in
  // process. In SQL the filter reads every tool's tags (the vector and server lists took ~600 ms each
  // at 100,000 tools), and HNSW's filtered walk is approximate.
  const readTagged =
    !keepVectors &&
    taggedNames &&
    request.tags &&
    deps.catalogVectors &&
    taggedNames.size <= deps.catalogVectors.maxTools &&
    request.mode !== 'bm25' &&
    deps.embedder &&
    deps.embeddingStatus &&
    pending === undefined
      ? deps.catalogVectors.tagged(deps.db, catalog, request.tags, taggedNames, currentRecipe(deps.embedder.modelId)).catch(() => undefined)
      : undefined;
  const inProcessVectors = vectorsNow
    ? Promise.all([
        vectorsNow,
        request.tags?.length ? (taggedNames ?? corpusIds(deps.db, { kind: 'catalog', catalogId: catalog.id, tags: request.tags })) : undefined,
      ])
        .then(([vectors, tagged]) => (vectors && tagged ? entriesFor(tagged, vectors) : vectors))
        .catch(() => undefined)
    : readTagged?.then((kept) => kept?.vectors);
  // Under a tag filter the tagged tools' servers come from the index in hand too (as from memory),
  // built for the query's terms (~3 ms for 3,740 tagged of 100,000, where SQL's filter took ~600 ms),
  // their means from the tagged vectors when in process (kept with a larger catalog's), else in SQL.
  const tags = request.tags;
  // What agents used after similar queries (read while the lists run; a failed read adds nothing).
  const learned =
    request.mode === 'hybrid' && deps.learned
      ? { index: deps.learned.forSearch(deps.db, catalog, deps.embedder?.modelId ?? null), params: deps.learned.params }
      : undefined;
  learned?.index.catch(() => {});
  // A key that sees only some tools is ranked with the index less the others (their words, servers and statistics).
  const ranking = index && visibleIndex(index, visible);
  const tagServers = request.mode === 'hybrid' && tags?.length && ranking ? (terms: readonly string[]) => ranking.serversCarrying(tags, terms) : undefined;
  const catalogMeans = async () => {
    const means = await deps.serverStats!.means(deps.db, catalog, deps.embedder!.modelId, index?.changedSince);
    return index && visible ? visibleMeans(index, visible, means, await inProcessVectors) : means;
  };
  const source = storedCatalogSource(
    deps.db,
    {
      catalogId: catalog.id,
      ...(ranking ? { index: ranking } : {}),
      ...(tags?.length ? { tags } : {}),
      ...(tagServers ? { tagServers } : {}),
      ...(inProcessVectors ? { vectors: inProcessVectors } : {}),
      // The catalog's means would carry the tools a limited key does not see: its servers' votes come from the store's corpus.
      ...(deps.serverStats && request.mode === 'hybrid' && !tags?.length && !storeNames
        ? { serverMeans: catalogMeans }
        : readTagged && request.mode === 'hybrid'
          ? { serverMeans: async (members: ServerMembers) => (await readTagged)?.means(members) }
          : {}),
      // Without the index, server votes in SQL read every tool's terms and vector: seconds at
      // 100,000 tools, past the request's deadline. A large catalog ranks without them until its index is in.
      withoutServers: !index && catalog.toolCount > SQL_SERVER_LISTS_MAX,
      ...(deps.storedTerms ? { termsVersion: deps.storedTerms.version } : {}),
      denseComplete: deps.embeddingStatus !== undefined && pending === undefined,
      ...(learned ? { learned } : {}),
      ...(termsRefreshing ? { withoutTerms: true } : {}),
      ...(storeNames ? { names: storeNames } : {}),
    },
    catalog.toolCount > EXACT_SCAN_MAX,
  );
  const { tags: _tags, access: _access, ...query } = request;
  const ranked = await rankCorpus(
    deps,
    source,
    {
      ...query,
      ...(termsRefreshing ? { mode: 'vector' as const } : {}),
      exactIds: candidates.filter((name) => found.has(name)),
      ...(visible ? { visible } : {}),
    },
    { ...(queryVector ? { queryVector, queryText } : {}), ...(expandedQuery ? { expandedQuery } : {}), ...(embedQuery ? { embedQuery } : {}) },
  ).catch((error: unknown) => {
    // The query's embedding failed (not the store, which the callers' fallbacks read).
    if (!termsRefreshing || request.mode === 'vector' || isDatabaseUnavailable(error)) throw error;
    throw termsRefreshingError(ref.name, `the embedding model did not answer either (${error instanceof Error ? error.message : String(error)})`);
  });
  const rows = await loadCatalogTools(
    deps.db,
    catalog.id,
    ranked.tools.map((tool) => tool.id),
  );
  deps.seenTools?.remember(catalog.id, rows.values());
  // A small catalog's vectors, read once per revision after the search that ranked without them.
  if (keepVectors && !vectorsNow) keepVectors.cache.get(deps.db, catalog, keepVectors.recipe).catch(() => {});
  // A key whose tools all have their vectors is answered whole: a hidden tool's pending vector is not its news.
  const seen = seenEmbedding ? await seenEmbedding : undefined;
  const embedding = seen ? (seen.done < seen.total ? seen : undefined) : pending;
  return {
    tools: ranked.tools.flatMap((tool) => {
      const row = rows.get(tool.id);
      return row ? [{ ...tool, tool: row }] : [];
    }),
    timings: ranked.timings,
    bests: ranked.bests,
    // Ranked without BM25 says the most; a model that did not answer more than the vectors still missing.
    ...(termsRefreshing && request.mode !== 'vector'
      ? { degraded: 'terms_refreshing' as const }
      : ranked.degraded
        ? { degraded: ranked.degraded }
        : embedding
          ? { degraded: 'embeddings_pending' as const, embedding }
          : ranked.language?.understood === false
            ? { degraded: 'query_language' as const }
            : {}),
    ...(ranked.rerank ? { rerank: ranked.rerank } : {}),
    ...(ranked.language ? { language: ranked.language } : {}),
  };
}

/** How far the tools of `catalog` that `access` sees are embedded, counted as often as the catalog's pending count. */
function seenPending(deps: RankDeps, catalog: CatalogSummary, access: Access): Promise<PendingEmbeddings> {
  const model = deps.embedder!.modelId;
  return deps.embeddingStatus!.progress(deps.db, catalog, model, SEARCH_RECOUNT_MS, {
    id: access.scopeId,
    count: async () => {
      const { seen } = (await toolsSeen(deps, [catalog], access)).get(catalog.id)!;
      const missing = await withoutVector(
        deps,
        catalog.id,
        model,
        seen.map((tool) => tool.hash),
      );
      return { done: seen.length - missing.length, total: seen.length };
    },
  });
}

/**
 * The catalog's index while some stored BM25 terms are of another recipe than this release's (its
 * refresh running in the background, or a release of another recipe sharing the store): the
 * store's BM25 lists would mix two ways of counting in one score, so the search waits for the index
 * (read whole if need be), whose rows of another recipe take their terms from their text.
 */
async function indexOfOneRecipe(deps: RankDeps, catalog: CatalogSummary): Promise<CatalogIndex | undefined> {
  return (await deps.catalogIndexes?.forSearch(catalog, deps.db)) ?? (await deps.catalogIndexes?.get(catalog));
}

/** No BM25 for a catalog while its stored terms are refreshed and its index cannot be held: what can rank it, and what cannot. */
const termsRefreshingError = (name: string, why: string) =>
  new AppError(
    'service_unavailable',
    `catalog "${name}": its BM25 terms are being recomputed for this release (see /readyz, terms) and its index could not be read into process (CATALOG_INDEX_MEMORY); ${why}; retry shortly`,
  );

/**
 * A stored catalog ranked for a query: by the store (the catalog search, with its row), or, when the
 * store does not answer, from memory (the catalog as last seen here). Each tool has its calibrated
 * confidence (1 for a name the query gives exactly). A blank query ranks nothing.
 */
export type CatalogRanking =
  | {
      from: 'store';
      catalog: CatalogSummary;
      result: CatalogSearchResult;
      /** Each result's calibrated confidence as the model gives it (`tools` puts an exact name at 1). */
      confidences: number[];
      tools: { name: string; score: number; confidence: number; row: CatalogToolRow }[];
    }
  | { from: 'memory'; index: CatalogIndex | undefined; ranked: RememberedRanking; tools: { name: string; score: number; confidence: number }[] };

/**
 * The one place a stored catalog's ranking chooses between the store and memory (`storeOrMemory`),
 * for every entry point that may answer from memory (the selector, tool-search, MCP): the catalog
 * search over the catalog's row (`read` when the caller has it; else read within `deadlineMs` when
 * memory can answer), else `rankRemembered` over the index as last seen here, when `canRemember`
 * accepts it (what the caller's answer needs of it). Both answers are cut to `query.topK`;
 * `memoryDepth` ranks a remembered catalog deeper (its `ranked` keeps them all). `orNothing`: a
 * catalog this process holds no index of answers nothing from memory (one of several searched
 * together, while the others answer), rather than the store's error.
 */
export async function rankCatalog(
  deps: RankDeps,
  ref: { tenant: string; name: string },
  query: CatalogQuery,
  options: { read?: CatalogSummary; deadlineMs?: number; canRemember?: (index: CatalogIndex) => boolean; memoryDepth?: number; orNothing?: boolean } = {},
): Promise<CatalogRanking> {
  // Every ranking of a stored catalog asks the key first (the selector's and tool-search's `catalog` too).
  query.access?.requireCatalog(ref.name);
  return storeOrMemory(
    deps,
    ref,
    async (): Promise<CatalogRanking> => {
      const catalog = options.read ?? (await readCatalogRow(deps, ref, options.deadlineMs));
      deps.catalogIndexes?.seen(ref.tenant, catalog);
      const result = query.query.trim() === '' ? emptySearch() : await searchCatalog(deps, ref, query, catalog);
      const sure = rankingConfidences(
        result.tools.map((tool, i) => ({ ...tool.explain, rank: i + 1 })),
        result.bests,
        result.language,
      );
      const tools = result.tools.map((tool, i) => ({
        name: tool.tool.name,
        score: tool.score,
        confidence: tool.explain.exact_name ? 1 : (sure[i] ?? 0),
        row: tool.tool,
      }));
      return { from: 'store', catalog, result, confidences: sure, tools };
    },
    async (): Promise<CatalogRanking | undefined> => {
      const index = deps.catalogIndexes?.lastSeen(ref.tenant, ref.name)?.index;
      if (!index)
        return options.orNothing ? { from: 'memory', index: undefined, ranked: { exact: [], found: [], confidences: [], timings: {} }, tools: [] } : undefined;
      if (options.canRemember && !options.canRemember(index)) return undefined;
      const ranked = await rankRemembered(deps, index, {
        pattern: query.query,
        depth: options.memoryDepth ?? query.topK,
        ...(query.tags?.length ? { tags: query.tags } : {}),
        ...(options.deadlineMs === undefined ? {} : { deadlineMs: options.deadlineMs }),
        ...(query.access?.limitsTools ? { visible: visibleInIndex(query.access, ref.name, index) } : {}),
      });
      return { from: 'memory', index, ranked, tools: rememberedTools(ranked, query.topK) };
    },
  );
}

function emptySearch(): CatalogSearchResult {
  return { tools: [], timings: { query_embedding_ms: 0, retrieval_ms: 0, fusion_ms: 0 }, bests: { bm25: 0, vector: 0 } };
}

/** What the gateway selector answers from a stored catalog. */
export interface CatalogSelection {
  names: string[];
  ranked: number;
  confidence: number;
  /** Definition tokens offered and kept; absent when the answer came from memory (no rows read). */
  tokens?: { offered: number; selected: number };
  timings: CatalogSelectionTimings;
  /** Set when the store did not answer and the catalog as last seen here did (`selectFromMemory`). */
  fallback?: 'store_error';
  /** A query in another language than English (RankResult's): the selector's contract cannot carry it; metrics and the log line do. */
  language?: RankResult['language'];
}

/**
 * The gateway selector over a stored catalog instead of inline tools: at most `topK` names,
 * `always_keep` names of the catalog first, then the catalog search (hybrid, exact names first),
 * then the catalog's names in order, so a catalog with tools never yields an empty answer (the
 * selector contract: an empty answer makes gateways fail open or trip their breaker).
 *
 * Never fails closed on a catalog this process has searched: when the database is unavailable, or
 * the catalog's row is not read within `storeDeadlineMs` (the selector's store deadline), the answer
 * comes from the catalog as last seen here (`selectFromMemory`); and while `deps.storeBreaker` is
 * open after such a failure, without waiting for the store again (search/store-breaker.ts).
 */
export async function selectFromCatalog(
  deps: RankDeps,
  ref: { tenant: string; name: string },
  input: { pattern: string; topK: number; alwaysKeep: string[]; storeDeadlineMs?: number; embedBudgetMs?: number; access?: Access },
): Promise<CatalogSelection> {
  const started = performance.now();
  const wanted = [...new Set(input.alwaysKeep)];
  // From memory the ranking goes as deep as the kept names the catalog has, as the answer's places.
  const remembered = deps.catalogIndexes?.lastSeen(ref.tenant, ref.name)?.index;
  const kept = remembered ? wanted.filter((name) => remembered.bm25.indexOf(name) !== undefined).length : 0;
  const ranking = await rankCatalog(
    deps,
    ref,
    {
      query: input.pattern,
      topK: input.topK,
      mode: 'hybrid',
      ...(input.embedBudgetMs === undefined ? {} : { embedBudgetMs: input.embedBudgetMs }),
      ...(input.access ? { access: input.access } : {}),
    },
    { ...(input.storeDeadlineMs === undefined ? {} : { deadlineMs: input.storeDeadlineMs }), memoryDepth: input.topK + kept },
  );
  return ranking.from === 'store'
    ? selectedFromStore(deps, ref, input, ranking, wanted, started)
    : selectedFromMemory(input, ranking, wanted, started, input.access?.limitsTools ? visibleInIndex(input.access, ref.name, ranking.index!) : undefined);
}

/**
 * `fromStore`'s answer, or `fromMemory`'s (the catalog as last seen here) when the store is
 * unavailable or late (StoreLate); while `deps.storeBreaker` is open after such a failure, memory's
 * at once, and one probe at a time asks the store. The store's error when memory has no answer.
 */
export async function storeOrMemory<T>(
  deps: RankDeps,
  ref: { tenant: string; name: string },
  fromStore: () => Promise<T>,
  fromMemory: () => Promise<T | undefined>,
): Promise<T> {
  const breaker = deps.storeBreaker;
  if (breaker?.open) {
    // The store failed a moment ago: answer from memory at once, and let one probe ask the store.
    const remembered = await fromMemory();
    if (remembered) {
      breaker.probe(() =>
        getCatalog(deps.db, ref.tenant, ref.name).catch((error: unknown) => {
          if (isDatabaseUnavailable(error)) throw error; // any other answer is the store answering
        }),
      );
      return remembered;
    }
  }
  try {
    const answered = await fromStore();
    breaker?.succeeded();
    return answered;
  } catch (error) {
    if (!(error instanceof StoreLate) && !isDatabaseUnavailable(error)) throw error;
    breaker?.failed();
    const remembered = await fromMemory();
    if (remembered) return remembered;
    // A read is bounded only when memory can answer; should that answer be gone meanwhile (its
    // index evicted), the late store is a 503 like an unavailable one, not an unexpected error.
    if (error instanceof StoreLate) throw new AppError('service_unavailable', `${error.message}, and this process holds no answer of catalog "${ref.name}"`);
    throw error;
  }
}

/**
 * The catalog's row (404 when there is none). Within `deadlineMs` when given and an answer from
 * memory is at hand (StoreLate past it, for `storeOrMemory`; the read goes on); otherwise the
 * read's own deadline applies.
 */
export async function readCatalogRow(deps: RankDeps, ref: { tenant: string; name: string }, deadlineMs?: number): Promise<CatalogSummary> {
  const lookup = getCatalog(deps.db, ref.tenant, ref.name);
  const bounded = deadlineMs !== undefined && deps.catalogIndexes?.lastSeen(ref.tenant, ref.name);
  const catalog = await (bounded ? withDeadline(lookup, deadlineMs, () => new StoreLate()) : lookup);
  if (!catalog) throw notFound(`catalog "${ref.name}"`);
  return catalog;
}

/** The catalog's row was not read within the store deadline (the read goes on). */
class StoreLate extends Error {
  constructor() {
    super('the store did not answer within the deadline');
  }
}

async function selectedFromStore(
  deps: RankDeps,
  ref: { tenant: string; name: string },
  input: { topK: number; access?: Access },
  ranking: Extract<CatalogRanking, { from: 'store' }>,
  wanted: string[],
  started: number,
): Promise<CatalogSelection> {
  const { catalog, result } = ranking;
  const sees = (row: CatalogToolRow) => !input.access?.limitsTools || input.access.seesTool({ catalog: ref.name, name: row.name, server: row.server });
  const held = new Map(
    [...(wanted.length > 0 ? await loadCatalogTools(deps.db, catalog.id, wanted) : new Map<string, CatalogToolRow>())].filter(([, row]) => sees(row)),
  );
  const ordered = wanted.filter((name) => held.has(name));
  // The catalog's row and the kept tools: what the answer waited for besides the ranking's stages.
  const timings: CatalogSelectionTimings = { lookup_ms: 0, padding_ms: 0, ...result.timings };
  timings.lookup_ms = performance.now() - started - result.timings.query_embedding_ms - result.timings.retrieval_ms - result.timings.fusion_ms;
  const rows = new Map<string, CatalogToolRow>([...held, ...ranking.tools.map((tool) => [tool.name, tool.row] as const)]);
  let names = [...new Set([...ordered, ...ranking.tools.map((tool) => tool.name)])];
  if (names.length < input.topK && names.length < catalog.toolCount) {
    const paddingStarted = performance.now();
    const padding = input.access?.limitsTools ? await visiblePadding(deps, ref, input.topK, sees) : await listCatalogTools(deps.db, ref, { limit: input.topK });
    for (const row of padding) if (!rows.has(row.name)) rows.set(row.name, row);
    names = [...new Set([...names, ...padding.map((row) => row.name)])];
    timings.padding_ms = performance.now() - paddingStarted;
  }
  names = names.slice(0, input.topK);
  // The gateway sends the definitions it was given; their tokens as sent are what it offers and keeps.
  const selected = names.reduce((sum, name) => sum + (rows.get(name)?.tokens.as_sent ?? 0), 0);
  return {
    names,
    ranked: ranking.tools.length,
    confidence: Math.max(0, ...ranking.confidences),
    tokens: { offered: catalog.definitionTokens.as_sent, selected },
    timings,
    ...(result.language ? { language: result.language } : {}),
  };
}

/**
 * The selector's answer while the store does not give one: the catalog as last seen by this
 * process (its in-process index, perhaps a revision behind the store's): `always_keep` names
 * first, names the pattern mentions exactly, the ranking (`rankRemembered`), then padding in
 * name order. `rankCatalog` answers the store's 503 when this process holds no index of the
 * catalog (the gateway's own fail-open decides).
 */
function selectedFromMemory(
  input: { topK: number },
  ranking: Extract<CatalogRanking, { from: 'memory' }>,
  wanted: string[],
  started: number,
  visible?: Visible,
): CatalogSelection {
  const { ranked } = ranking;
  const { bm25 } = ranking.index!;
  const keep = wanted.filter((name) => bm25.indexOf(name) !== undefined && (!visible || visible.keep(name)));
  const timings: CatalogSelectionTimings = { lookup_ms: 0, query_embedding_ms: 0, retrieval_ms: 0, fusion_ms: 0, padding_ms: 0, ...ranked.timings };
  timings.lookup_ms =
    performance.now() - started - (ranked.timings.query_embedding_ms ?? 0) - (ranked.timings.retrieval_ms ?? 0) - (ranked.timings.fusion_ms ?? 0);
  let names = [...new Set([...keep, ...ranked.exact, ...ranked.found.map(([name]) => name)])];
  if (names.length < input.topK) {
    const paddingStarted = performance.now();
    const first = firstNames(bm25, input.topK + Math.min(visible?.hidden ?? 0, HIDDEN_DEPTH_MAX));
    names = [...new Set([...names, ...(visible ? first.filter((name) => visible.keep(name)) : first)])];
    timings.padding_ms = performance.now() - paddingStarted;
  }
  return {
    names: names.slice(0, input.topK),
    ranked: ranked.found.length,
    confidence: Math.max(0, ...ranked.confidences),
    timings,
    fallback: 'store_error',
    ...(ranked.language ? { language: ranked.language } : {}),
  };
}

/** The catalog's first `count` tools in name order that `sees` accepts: a selection's padding. */
async function visiblePadding(
  deps: RankDeps,
  ref: { tenant: string; name: string },
  count: number,
  sees: (row: CatalogToolRow) => boolean,
): Promise<CatalogToolRow[]> {
  const kept: CatalogToolRow[] = [];
  let after: string | undefined;
  for (;;) {
    const rows = await listCatalogTools(deps.db, ref, { limit: Math.max(count, 100), ...(after === undefined ? {} : { after }) });
    for (const row of rows) if (sees(row) && kept.push(row) === count) return kept;
    if (rows.length < Math.max(count, 100)) return kept;
    after = rows[rows.length - 1]!.name;
  }
}

/** A ranking of a catalog as last seen here (`rankRemembered`). */
export interface RememberedRanking {
  /** Names of the catalog the pattern mentions exactly (carrying one of the tags, when asked). */
  exact: string[];
  /** The ranking, best first, with scores (the exact names among them). */
  found: (readonly [string, number])[];
  /** Each of `found`'s calibrated confidence (ranking/confidence.ts). */
  confidences: number[];
  timings: Partial<CatalogSelectionTimings>;
  /** A query in another language than English (RankResult's). */
  language?: RankResult['language'];
}

/**
 * Ranks a catalog from its index as last seen by this process (perhaps a revision behind the
 * store's), touching no store: the store's own hybrid ranking when everything it reads is in
 * process for the index's revision (the model, the catalog's vectors and its servers' means: a
 * complete catalog of up to VECTORS_IN_PROCESS_MAX tools searched here; under a tag filter, the
 * tagged tools' vectors and servers), else the store's ranking while the model is down (BM25 with
 * typo matching and server votes, from the index). `depth` counts the ranked names past the exact ones.
 */
export async function rankRemembered(
  deps: RankDeps,
  index: CatalogIndex,
  query: { pattern: string; depth: number; tags?: string[]; deadlineMs?: number; visible?: Visible },
): Promise<RememberedRanking> {
  if (query.pattern.trim() === '') return { exact: [], found: [], confidences: [], timings: {} };
  const tagged = query.tags?.length ? index.namesCarrying(query.tags) : undefined;
  const { visible } = query;
  const exact = nameCandidates(query.pattern).filter(
    (name) => index.bm25.indexOf(name) !== undefined && (!tagged || tagged.has(name)) && (!visible || visible.keep(name)),
  );
  const ranked = await rankFromMemory(deps, index, query.pattern, query.depth + exact.length, exact, query.tags, query.deadlineMs, visible);
  return {
    exact,
    found: ranked.tools.map(({ id, score }) => [id, score] as const),
    confidences: rankingConfidences(
      ranked.tools.map((tool, i) => ({ ...tool.explain, rank: i + 1 })),
      ranked.bests,
      ranked.language,
    ),
    timings: ranked.timings,
    ...(ranked.language ? { language: ranked.language } : {}),
  };
}

/**
 * `rankRemembered`'s ranking as the catalog search's callers answer it: cut to `depth`, a name the
 * pattern mentions at confidence 1 (the ranking puts those names first).
 */
export function rememberedTools(ranked: RememberedRanking, depth: number): { name: string; score: number; confidence: number }[] {
  const exact = new Set(ranked.exact);
  return ranked.found.slice(0, depth).map(([name, score], at) => ({ name, score, confidence: exact.has(name) ? 1 : ranked.confidences[at]! }));
}

/**
 * The catalog search's hybrid ranking from what this process holds for the index's revision, within
 * `deadlineMs` when given (it should touch no store, and a store that stopped answering must not
 * hold the answer); when the model, the vectors or the servers' means are not in hand, or the
 * deadline passes, the store's ranking without the model.
 */
async function rankFromMemory(
  deps: RankDeps,
  index: CatalogIndex,
  pattern: string,
  depth: number,
  exactIds: string[],
  tags: string[] | undefined,
  deadlineMs: number | undefined,
  visible?: Visible,
): Promise<RankResult> {
  const embedder = deps.embedder;
  const revision = { id: index.catalogId, revision: index.revision };
  // A key that sees only some tools is ranked with the index less the others (their words, servers and statistics).
  const ranked = visibleIndex(index, visible);
  // Under a tag filter the servers of the tagged tools, and their means from the tagged vectors, as the store reads them.
  const tagServers = tags?.length ? (terms: readonly string[]) => ranked.serversCarrying(tags, terms) : undefined;
  const vectors = embedder && deps.catalogVectors?.held(revision, embedder.modelId);
  // A catalog too large to keep whole: its tag filter's set, kept by a healthy search under the same tags.
  const tagged = embedder && tags?.length && !vectors ? deps.catalogVectors?.heldTagged(revision, tags, embedder.modelId) : undefined;
  const catalogMeans =
    embedder && !tagServers
      ? ranked.servers.members.size === 0
        ? new Map<string, Float32Array>()
        : deps.serverStats?.held(revision, embedder.modelId)
      : undefined;
  const means = catalogMeans && visibleMeans(index, visible, catalogMeans, vectors || undefined);
  const query = { query: pattern, topK: depth, mode: 'hybrid' as const, exactIds, ...(visible ? { visible } : {}) };
  const learned = deps.learned?.remembered(index.catalogId);
  const remembered = {
    catalogId: index.catalogId,
    index: ranked,
    ...(tags?.length ? { tags } : {}),
    ...(tagServers ? { tagServers } : {}),
    ...(learned ? { learned: { index: Promise.resolve(learned), params: deps.learned!.params } } : {}),
  };
  // The store's ranking while the model is down, from the index alone: BM25 with typo matching and the servers' BM25 votes.
  const withoutModel = () => rankCorpus({ embedder: null }, rememberedCatalogSource(remembered), query);
  if (!embedder || !(vectors || tagged) || (!tagServers && !means)) return withoutModel();
  const ranking = rankCorpus(
    deps,
    rememberedCatalogSource({
      ...remembered,
      // Under a tag filter, the vectors of the tools carrying a tag, as the store's path scans them.
      vectors: Promise.resolve(tagged ? tagged.vectors : tags?.length ? entriesFor(index.namesCarrying(tags), vectors!) : vectors!),
      ...(tagServers ? (tagged ? { serverMeans: async (members: ServerMembers) => tagged.means(members) } : {}) : { serverMeans: async () => means! }),
    }),
    query,
  );
  // A model that does not answer leaves BM25 (typo matching and server votes included), as on the store's path.
  return (deadlineMs === undefined ? ranking : withDeadline(ranking, deadlineMs, () => new StoreLate())).catch(withoutModel);
}

/** The index's first `count` names (past `after`, when given) in the catalog's order (code points, as the store's `collate "C"` over UTF-8): its padding, or a page of its names. */
export function firstNames(bm25: Bm25Index, count: number, after?: string): string[] {
  const first: string[] = [];
  for (let at = 0; at < bm25.size; at++) {
    const name = bm25.idAt(at);
    // A derived index's place of a removed tool may hold a name the lookup no longer knows there.
    if (name === undefined || bm25.indexOf(name) !== at) continue;
    if (after !== undefined && byCodePoints(name, after) <= 0) continue;
    if (first.length === count && byCodePoints(name, first[count - 1]!) >= 0) continue;
    let place = first.length;
    while (place > 0 && byCodePoints(name, first[place - 1]!) < 0) place--;
    first.splice(place, 0, name);
    if (first.length > count) first.pop();
  }
  return first;
}

/** Code point order, which is UTF-8 byte order (UTF-16 units order astral characters before U+E000-U+FFFF). */
function byCodePoints(a: string, b: string): number {
  const left = a[Symbol.iterator]();
  const right = b[Symbol.iterator]();
  for (;;) {
    const x = left.next();
    const y = right.next();
    if (x.done || y.done) return (x.done ? 0 : 1) - (y.done ? 0 : 1);
    const difference = x.value.codePointAt(0)! - y.value.codePointAt(0)!;
    if (difference !== 0) return difference;
  }
}

/**
 * Where a selection from a stored catalog spent its time: the catalog's row and `always_keep`
 * tools (lookup), the ranking's stages as the catalog search reports them, and the request-order
 * tools that fill an answer the ranking left short (padding; 0 when none was needed).
 */
export interface CatalogSelectionTimings extends Record<string, number> {
  lookup_ms: number;
  query_embedding_ms: number;
  retrieval_ms: number;
  fusion_ms: number;
  padding_ms: number;
}
