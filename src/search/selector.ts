import type { BackgroundWork } from '../lib/background-work.js';
import { contentHash } from '../catalog/content-hash.js';
import { documentTerms, queryTerms } from '../ranking/search-text.js';
import { countedDocuments, termsDocument } from '../catalog/catalog-service.js';
import { countHere, type TextCounter, type TokenCounter } from '../catalog/tokens.js';
import { normalizeTool, ToolFormatError, TOOL_NAME_MAX } from '../catalog/tool-formats.js';
import type { Tool } from '../lib/tool.js';
import { AppError } from '../errors.js';
import { currentRecipe } from '../embed/embed-documents.js';
import type { EmbedQueue } from '../jobs/embed-queue.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { KnownBytes } from '../lib/known-bytes.js';
import { LruCache } from '../lib/lru-cache.js';
import { storeDocuments, type ToolDocument } from '../store/tool-store.js';
import type { DocumentUse } from '../store/document-use.js';
import { TimeSlice } from '../lib/time-slice.js';
import { Bm25Builder, Bm25Index } from '../ranking/bm25-index.js';
import { bm25Confidences, rankingConfidences } from '../ranking/confidence.js';
import { EmbedderBusy, expandQuery, rankCorpus, type RankDeps } from './hybrid-search.js';
import { requestListSource } from './corpus-source.js';
import { withDeadline } from '../lib/deadline.js';
import type { ServerIndex } from './server-stats.js';
import { matchNamesByRegex, NameIndex, type RegexSandbox, REGEX_BUDGET_MS } from './patterns.js';
import { entriesFor, serverCentroids, ServerDocumentsBuilder } from '../ranking/servers.js';
import { carriesTag } from '../ranking/tags.js';
import { inBackground } from '../store/priority.js';

export const DEFAULT_TOP_K = 5;
/**
 * Tool lists remembered whole (see `toolListCache`): gateways send a handful of distinct lists,
 * and each holds its BM25 index and vectors, so the cache is bounded by tools as well as lists
 * (~2-3 KB per tool: at most ~150 MB).
 */
export const TOOL_LIST_CACHE_LISTS = 256;
export const TOOL_LIST_CACHE_TOOLS = 50_000;
/** Bytes of remembered lists kept for finding them again (`toolListBytes`): ~1 KB a tool, 100 lists of 300 tools. */
export const TOOL_LIST_BYTES = 32 * 1024 * 1024;
/** Tag sets whose filtered sub-list a remembered list keeps indexed (tool-search's `tags`). */
export const TAGGED_LISTS = 8;
/**
 * Writes of new tools that may run after their answers at once; a request beyond this waits for
 * its own. Each holds at most one request's tools; gateways resend the same tools, so more than a
 * few at a time means a client pushing new tools faster than the store takes them.
 */
export const MAX_WRITES_IN_FLIGHT = 8;

export interface SelectorDeps extends RankDeps {
  queue: EmbedQueue | null;
  /**
   * Request tools already parsed, by their exact JSON: gateways send the same tools every turn,
   * so the steady state skips normalizing, hashing and storing them. Holds only tools known to be
   * stored.
   */
  toolCache: LruCache<string, RequestTool>;
  /**
   * Whole tool lists by `SelectorInput.toolsKey`: a turn that resends the same tools skips even
   * the per-tool cache lookups, and ranks BM25 from the list's cached statistics. Holds only lists
   * whose tools are all stored.
   */
  toolListCache: LruCache<string, CachedToolList>;
  /**
   * The exact bytes of the lists in `toolListCache` a turn has resent, so the next turn finds its
   * list by a compare of bytes rather than a scan and a digest of the body (http/tool-list-body.ts).
   * Absent: every turn scans and digests.
   */
  toolListBytes?: KnownBytes;
  /** Where a request's never-seen tools are written after it has answered (shutdown waits for it). */
  background: BackgroundWork;
  /** Reused for every regex pattern; a fresh one per request when absent (slower, same answers). */
  regexSandbox?: RegexSandbox;
  /**
   * How long, from a request's arrival, it waits for its query embedding before ranking by BM25
   * alone (SELECTOR_BUDGET_MS). Gateways call on every turn: a model busy with a catalog's
   * documents must not add its backlog to their latency. Absent = wait for the model.
   */
  budgetMs?: number;
  /** Documents per write statement (SELECTOR_STORE_SLICE of the store in use). */
  writeSlice?: number;
  /** Definition tokens of request tools, counted once per content hash (the saving in /metrics). */
  tokens: TokenCounter;
  /** Where never-seen tools' definition tokens are counted (the service's counting thread); absent = on this thread. */
  tokenCounter?: TextCounter;
  /** Marks the documents of the request's tools as used, so the sweep keeps them (absent: nothing marked). */
  documentUse?: DocumentUse;
  logger: Logger;
  metrics?: Metrics;
}

export interface SelectorInput {
  pattern: string;
  topK: number;
  alwaysKeep: string[];
  /** The request's tools as sent; ignored when `cached` is given. */
  tools: unknown[];
  /** A digest of the exact bytes the tools arrived as, when the caller has them (see http/selector.ts). */
  toolsKey?: string;
  /** The list `toolsKey` names, when the caller already found it (and so did not parse the tools). */
  cached?: CachedToolList;
  /**
   * Rank only the tools carrying one of these (case-insensitive; tool-search's filter), as a stored
   * catalog filters first: BM25 statistics, servers and vectors of those tools alone, typos read
   * against the whole list's words, each tag a tool carries boosting it.
   */
  tags?: readonly string[];
}

/** A tool list seen before, as `toolListCache` keeps it. */
export interface CachedToolList {
  /** Normalized and hashed, first of each name. */
  tools: RequestTool[];
  /** How many tools the request carried, repeats included. */
  toolsIn: number;
  /**
   * BM25 statistics of exactly these tools, computed in process from their terms (the same terms
   * the store keeps, the same maths as the SQL): every turn scores without asking the database.
   */
  bm25: Bm25Index;
  /** The same for the tools' servers, when they name one (ranking/servers.ts). */
  servers: ServerIndex;
  /** Every tool's vector, once all exist (until then they are looked up per request). */
  vectors?: { model: string; byHash: ReadonlyMap<string, Float32Array> };
  /** Its servers' unit-length mean vectors over `vectors` (that very map), computed on the first turn that ranks with them all. */
  serverMeans?: { of: ReadonlyMap<string, Float32Array>; means: ReadonlyMap<string, Float32Array> };
  /** Until then, the last read's vectors and whether a read is under way (see `listVectors`). */
  partialVectors?: { model: string; byHash: ReadonlyMap<string, Float32Array>; reading: boolean };
  /** When its documents were last marked as used (`markUsed`, DocumentUse's clock): a turn within the interval skips even the per-tool lookups. */
  usedAt?: number;
  /** Its tag-filtered sub-lists already indexed (`taggedTools`), by tag set; made on first use. */
  tagged?: LruCache<string, TaggedList>;
  /** Its names and hashes as every turn looks them up (`listLookup`); made on first use. */
  lookup?: ListLookup;
}

/** A list's tools by name and hash, as a turn reads them: the same for every turn that resends the list. */
interface ListLookup {
  /** Each tool's name, in the list's order. */
  names: string[];
  present: ReadonlySet<string>;
  /** The tools' hashes, in the list's order. */
  hashes: string[];
  /** Name by hash. */
  nameOf: ReadonlyMap<string, string>;
  /** The names a pattern mentions exactly (patterns.ts). */
  mentions: NameIndex;
}

function listLookup(tools: readonly RequestTool[]): ListLookup {
  const names = tools.map(({ tool }) => tool.name);
  return {
    names,
    present: new Set(names),
    hashes: tools.map(({ hash }) => hash),
    nameOf: new Map(tools.map(({ tool, hash }) => [hash, tool.name])),
    mentions: new NameIndex(names),
  };
}

/** The first `count` distinct names of `groups` in order (the answer: kept names, evidence, then request order). */
function firstDistinct(groups: readonly (readonly string[])[], count: number): string[] {
  const picked = new Set<string>();
  for (const group of groups) {
    for (const name of group) {
      if (picked.size >= count) return [...picked];
      picked.add(name);
    }
  }
  return [...picked];
}

/** The tools of a list that carry one of a request's tags, indexed on their own. */
type TaggedList = Pick<CachedToolList, 'tools' | 'bm25' | 'servers'>;

export type FallbackReason = 'blank_pattern' | 'no_match' | 'store_error' | 'embedder_unavailable' | 'embedder_error' | 'embedder_busy';

export interface Selection {
  names: string[];
  /** Set when the answer did not come from the full hybrid ranking. */
  fallback?: FallbackReason;
  /** A query in another language than English: its tag and whether the model read it (ranking/language.ts). */
  language?: { tag: string; understood: boolean };
  toolsIn: number;
  /** Filled in once `stored` settles, like `timings.store_ms`. */
  newDocuments: number;
  evidence: { always_keep: number; exact: number; regex: number | 'timeout' | 'invalid' | null };
  /** `total_ms` is the time to the answer; `store_ms` is the write that follows it. */
  timings: { parse_ms: number; store_ms: number; query_embedding_ms: number; ranking_ms: number; total_ms: number };
  /**
   * The request's never-seen tools being written, after the answer (see `storeNewTools`); tracked
   * by `SelectorDeps.background`. Never rejects: a failed write is logged and tried again by the
   * next request that sends the same tools.
   */
  stored: Promise<void>;
  /** The request's tools as parsed (first of each name), for callers that describe the answer. */
  tools: RequestTool[];
  /** Ranking scores by name (tools the ranking found; exact and regex matches may have none). */
  scores: Map<string, number>;
  /** Calibrated confidence by name (ranking/confidence.ts), for the tools the ranking found. */
  confidence: Map<string, number>;
  /** Whether a query term occurs in any of the request's tools (BM25 vocabulary). */
  knowsTerm: (term: string) => boolean;
}

export interface RequestTool {
  tool: Tool;
  hash: string;
}

/**
 * A gateway tool as leniently as the gateway itself: a definition in a shape we do not know (a
 * provider's newer built-in tool, say) still leaves a named, described tool to rank, rather than
 * failing a request that gateways send on every turn. Only a tool without a usable name is an error.
 */
export function normalizeRequestTool(raw: unknown, index: number): Tool {
  try {
    return normalizeTool(raw);
  } catch (error) {
    if (!(error instanceof ToolFormatError)) throw error;
    const record = typeof raw === 'object' && raw !== null && !Array.isArray(raw) ? (raw as Record<string, unknown>) : {};
    const name = record.name;
    if (typeof name !== 'string' || name.length === 0 || name.length > TOOL_NAME_MAX || name.includes('\u0000')) {
      throw new AppError('invalid_tool', `tools[${index}]: ${error.message}`, [{ index, message: error.message, issues: error.issues }]);
    }
    const description = typeof record.description === 'string' ? record.description.replaceAll('\u0000', '') : '';
    const parameters = record.parameters;
    return {
      name,
      description,
      inputSchema: typeof parameters === 'object' && parameters !== null && !Array.isArray(parameters) ? (parameters as Record<string, unknown>) : null,
      tags: [],
      server: null,
      format: 'gateway',
      definition: raw,
    };
  }
}

/** A tool this process has not seen stored: its document (terms included) and its exact JSON. */
export interface FreshTool {
  entry: RequestTool;
  document: ToolDocument;
  key: string;
}

/**
 * The request's tools, each normalized and hashed (or taken from the cache), first of a name wins;
 * tools not cached as stored also get their document and BM25 terms.
 */
async function parseRequestTools(deps: SelectorDeps, raws: unknown[]): Promise<{ tools: RequestTool[]; fresh: FreshTool[] }> {
  const seen = new Set<string>();
  const tools: RequestTool[] = [];
  const fresh: FreshTool[] = [];
  const slice = new TimeSlice();
  for (let index = 0; index < raws.length; index++) {
    // 50-800 us a never-seen tool (a quiet machine; two busy cores): a 100-tool list in one piece
    // held every other request, remembered turns included, for up to 80 ms under load.
    if (slice.due()) await slice.yield();
    const raw = raws[index];
    const key = JSON.stringify(raw);
    let entry = deps.toolCache.get(key);
    if (!entry) {
      const tool = normalizeRequestTool(raw, index);
      entry = { tool, hash: contentHash(tool) };
      fresh.push({ entry, document: termsDocument(tool, entry.hash), key });
    }
    // A repeated name is the same tool to the gateway, which matches answers by name: keep the first.
    if (seen.has(entry.tool.name)) continue;
    seen.add(entry.tool.name);
    tools.push(entry);
  }
  return { tools, fresh };
}

/**
 * BM25 statistics of exactly the request's tools and their servers, from the terms in hand (computed
 * for the rest), built between time slices: at 10,000 tools the two indexes took 120-195 ms of one
 * piece on a 2-core machine, every other request waiting (docs/benchmarks.md, stalls).
 */
export async function indexTools(tools: RequestTool[], fresh: FreshTool[], slice = new TimeSlice()): Promise<Pick<CachedToolList, 'bm25' | 'servers'>> {
  const computed = new Map(fresh.map(({ document }) => [document.hash, document]));
  const documents = new Bm25Builder();
  const servers = new ServerDocumentsBuilder();
  for (const { tool, hash } of tools) {
    if (slice.due()) await slice.yield();
    const { termFreqs, length } = computed.get(hash) ?? documentTerms(tool);
    // Ties go by name, as in a catalog (hybrid-search.ts tieKeyOf).
    documents.add(hash, length, termFreqs, tool.name);
    servers.add(hash, tool.server, length, termFreqs);
  }
  return {
    bm25: await Bm25Index.packed(documents, slice),
    servers: { bm25: await servers.index(slice), members: servers.members },
  };
}

/**
 * Writes the documents of tools not cached as stored, then queues their embeddings and remembers
 * the tools (and the whole list) as stored. Runs after the request has answered: its ranking needs
 * none of it (BM25 in process, vectors that already exist). Without their BM25 terms (NO_TERMS):
 * the selector ranks its lists from terms it computes itself and never reads them back, and a
 * catalog that later includes a tool writes them; under a gateway's mixed load on PGlite the terms
 * of never-seen tools held the event loop's thread for a third of the time (docs/benchmarks.md).
 * Slices of whole documents (storeDocuments): other requests run between slices, and requests
 * writing the same new tools store each once.
 */
async function storeNewTools(deps: SelectorDeps, selection: Selection, fresh: FreshTool[], list?: { key: string; list: CachedToolList }): Promise<void> {
  // Let the answer go out first: the documents' JSON and the tokens' texts are made on this thread.
  await new Promise((resolve) => setImmediate(resolve));
  const started = performance.now();
  try {
    if (fresh.length > 0) {
      // Definition tokens are counted here, after the answer: the store keeps them with the document.
      const documents = await countedDocuments(
        deps.tokenCounter ?? countHere,
        fresh.map(({ document }) => document),
      );
      for (const document of documents) deps.tokens.remember(document.hash, document.tokens);
      selection.newDocuments = (await storeDocuments(deps.db, documents, deps.writeSlice, 1, { withTerms: false })).length;
      for (const { key, entry } of fresh) deps.toolCache.set(key, entry);
      queueEmbeddings(deps, fresh);
    }
    if (list) deps.toolListCache.set(list.key, list.list);
  } catch (error) {
    deps.logger.warn({ err: error }, 'selector: could not store new tools; the next request that sends them tries again');
  } finally {
    selection.timings.store_ms = performance.now() - started;
  }
}

/**
 * Marks the request's tools' documents as used (store/document-use.ts: at most once an interval
 * each), after the answer. The caches above outlive a quiet spell longer than the retention, so a
 * tool they hold as stored may have been swept meanwhile: it is stored again (and embedded again),
 * as if never seen; the turn ranks from what it holds in memory either way.
 */
function markUsed(deps: SelectorDeps, tools: RequestTool[], fresh: FreshTool[], cachedList?: CachedToolList): void {
  const use = deps.documentUse;
  if (!use || tools.length === 0) return;
  const now = use.now();
  if (cachedList) {
    if (cachedList.usedAt !== undefined && now - cachedList.usedAt < use.everyMs) return;
    cachedList.usedAt = now;
  }
  void use.touch(tools.map(({ hash }) => hash)).then((missing) => {
    if (missing.size === 0) return;
    // Never-seen tools are being stored by `storeNewTools` already.
    const storing = new Set(fresh.map(({ entry }) => entry.hash));
    const lost = tools.filter(({ hash }) => missing.has(hash) && !storing.has(hash));
    if (lost.length > 0) void deps.background.run(inBackground(() => storeAgain(deps, lost)));
  });
}

/** Stores again the documents of tools the sweep removed while this process held them as stored, and queues their embeddings. */
async function storeAgain(deps: SelectorDeps, tools: RequestTool[]): Promise<void> {
  try {
    const documents = await countedDocuments(
      deps.tokenCounter ?? countHere,
      tools.map(({ tool, hash }) => termsDocument(tool, hash)),
    );
    const stored = await storeDocuments(deps.db, documents, deps.writeSlice, 1, { withTerms: false });
    if (stored.length > 0) deps.logger.info({ tools: stored.length }, 'selector: stored again tools whose documents the sweep had removed');
    if (deps.queue && stored.length > 0) await deps.queue.enqueue(stored);
  } catch (error) {
    deps.logger.warn({ err: error }, 'selector: could not store again tools the sweep had removed; their next marking tries again');
  }
}

/** Queues embeddings for tools just stored for the first time (same threads as the query model). */
function queueEmbeddings(deps: SelectorDeps, fresh: FreshTool[]): void {
  if (!deps.queue) return;
  deps.queue.enqueue(fresh.map(({ entry }) => entry.hash)).catch((error: unknown) => {
    deps.logger.warn({ err: error }, 'selector: could not queue embeddings; they will be re-discovered');
  });
}

/**
 * The vectors of a list's tools: from the list itself once every tool has a current one, else
 * from the vector cache (which asks pgvector for the rest, whose embeddings may have landed).
 * Only a list's first read is waited for, and for at most one budget. While some of its vectors
 * are still being embedded, a turn ranks with the last read's and asks for the rest in the
 * background, one read at a time: a read per turn waited behind any large write on the store (a
 * remembered turn took 0.4-0.6 s during a 10,000-tool write, `npm run bench -- --stalls`).
 */
async function listVectors(deps: SelectorDeps, list: CachedToolList): Promise<ReadonlyMap<string, Float32Array> | undefined> {
  const model = deps.embedder?.modelId;
  if (model === undefined || !deps.vectors) return undefined;
  if (list.vectors?.model === model) return list.vectors.byHash;
  const partial = list.partialVectors?.model === model ? list.partialVectors : undefined;
  if (!partial) return firstListVectors(deps, list, model);
  if (!partial.reading) {
    partial.reading = true;
    // A failed read (the store down) is tried again by a later turn.
    readListVectors(deps, list, model).catch(() => (partial.reading = false));
  }
  return partial.byHash;
}

/**
 * A list's first read, waited for at most one SELECTOR_BUDGET_MS: behind a large write on the store
 * it could hold a new list's turn for the store's deadline. Past the budget the turn ranks without
 * the list's vectors, and the read goes on and leaves what it found on the list for the next turn.
 */
async function firstListVectors(deps: SelectorDeps, list: CachedToolList, model: string): Promise<ReadonlyMap<string, Float32Array>> {
  const read = readListVectors(deps, list, model);
  if (deps.budgetMs === undefined) return read;
  const late = new Error("the list's vectors were not read within the budget");
  try {
    return await withDeadline(read, deps.budgetMs, () => late);
  } catch (error) {
    if (error !== late) throw error;
    const pending = { model, byHash: new Map<string, Float32Array>(), reading: true };
    if (list.vectors?.model !== model && list.partialVectors?.model !== model) list.partialVectors = pending;
    // A read that fails late is tried again by a later turn.
    read.catch(() => (pending.reading = false));
    return pending.byHash;
  }
}

/** The list's server means over its complete vectors, kept on the list while those are its vectors. */
function listServerMeans(list: CachedToolList, vectors: NonNullable<CachedToolList['vectors']>): ReadonlyMap<string, Float32Array> {
  if (list.serverMeans?.of !== vectors.byHash) list.serverMeans = { of: vectors.byHash, means: serverCentroids(list.servers.members, vectors.byHash) };
  return list.serverMeans.means;
}

/** Reads the list's vectors and keeps them on it: whole once complete, else as the latest partial read. */
async function readListVectors(deps: SelectorDeps, list: CachedToolList, model: string): Promise<ReadonlyMap<string, Float32Array>> {
  const loaded = await deps.vectors!.load(
    deps.db,
    currentRecipe(model),
    list.tools.map(({ hash }) => hash),
  );
  if (loaded.complete) {
    list.vectors = { model, byHash: loaded.vectors };
    list.partialVectors = undefined;
  } else {
    list.partialVectors = { model, byHash: loaded.vectors, reading: false };
  }
  return loaded.vectors;
}

/**
 * The list's tools that carry one of `tags`, indexed on their own (a catalog's tag filter: N, avgdl,
 * df and servers of the kept tools). Kept on the list by tag set, so a turn that repeats its filter
 * ranks at once: at most `TAGGED_LISTS` sets, and together at most as many tools as the list holds,
 * so a list's cached weight at most doubles (its vectors are shared, not copied).
 */
async function taggedTools(list: CachedToolList, fresh: FreshTool[], tags: readonly string[]): Promise<TaggedList> {
  const key = [...new Set(tags.map((tag) => tag.toLowerCase()))].sort().join('\n');
  const known = list.tagged?.get(key);
  if (known) return known;
  const tools = list.tools.filter(({ tool }) => carriesTag(tool.tags, tags));
  const tagged = { tools, ...(await indexTools(tools, fresh)) };
  list.tagged ??= new LruCache(TAGGED_LISTS, { max: list.tools.length, weigh: ({ tools }) => tools.length });
  list.tagged.set(key, tagged);
  return tagged;
}

/** A ranking of hashes as the request's names: already ordered by score, then name (`tieKeyOf`, the list's index keys). */
function namesOf(ranked: readonly (readonly [string, number])[], nameOf: ReadonlyMap<string, string>): string[] {
  return ranked.map(([hash]) => nameOf.get(hash)!);
}

/**
 * The gateway selector: at most `topK` names, always exactly as sent. Order of evidence:
 * `always_keep` names present in the request, names the pattern mentions exactly (also the bare
 * name of a `server__name` tool), names a regular-expression pattern matches, then the hybrid
 * ranking over exactly the request's tools, then request order, so a non-empty tool list never
 * yields an empty answer (an empty answer makes gateways fail open or trip their breaker).
 */
export async function selectTools(deps: SelectorDeps, input: SelectorInput): Promise<Selection> {
  const started = performance.now();
  // The query's embedding is the slowest step and needs nothing else: start it first, so parsing,
  // hashing and BM25 all happen while the model thread works.
  const cachedList = input.cached ?? (input.toolsKey === undefined ? undefined : deps.toolListCache.get(input.toolsKey));
  const toolCount = cachedList?.tools.length ?? input.tools.length;
  // A remembered list's vocabulary is in hand, so the text is the dense query's own (typos' likely
  // words added); a new list's is the pattern as written, embedded again in rankCorpus if it has a typo.
  const embedWithinBudget = (text: string): Promise<number[]> => {
    const embedding = deps.embedder!.embedQuery(text);
    embedding.catch(() => {}); // awaited in rankCorpus, which reports a failure
    return deps.budgetMs === undefined
      ? embedding
      : withDeadline(embedding, deps.budgetMs - (performance.now() - started), () => new EmbedderBusy(deps.budgetMs!));
  };
  const expandedQuery = cachedList && deps.embedder ? expandQuery(input.pattern, cachedList.bm25.vocabulary()) : undefined;
  const queryText = expandedQuery?.text ?? input.pattern;
  const queryVector = deps.embedder && input.pattern.trim() !== '' && toolCount > 0 ? embedWithinBudget(queryText) : undefined;
  queryVector?.catch(() => {});
  const { tools, fresh } = cachedList ? { tools: cachedList.tools, fresh: [] } : await parseRequestTools(deps, input.tools);
  markUsed(deps, tools, fresh, cachedList);
  // A remembered list's names are looked up the same way every turn: indexed once, kept on the list.
  const lookup = cachedList ? (cachedList.lookup ??= listLookup(tools)) : listLookup(tools);
  const { names, present } = lookup;
  const timings = { parse_ms: performance.now() - started, store_ms: 0, query_embedding_ms: 0, ranking_ms: 0, total_ms: 0 };
  const keep = [...new Set(input.alwaysKeep)].filter((name) => present.has(name));
  const selection: Selection = {
    names: [],
    toolsIn: cachedList?.toolsIn ?? input.tools.length,
    newDocuments: 0,
    evidence: { always_keep: keep.length, exact: 0, regex: null },
    timings,
    stored: Promise.resolve(),
    tools,
    scores: new Map(),
    confidence: new Map(),
    knowsTerm: () => false,
  };
  const finish = (ordered: string[], fallback?: FallbackReason): Selection => {
    selection.names = firstDistinct([keep, ordered, names], input.topK);
    if (fallback) selection.fallback = fallback;
    timings.total_ms = performance.now() - started;
    return selection;
  };
  if (tools.length === 0) return finish([]);
  if (input.pattern.trim() === '') return finish([], 'blank_pattern');

  const exact = lookup.mentions.mentionedIn(input.pattern);
  selection.evidence.exact = exact.length;
  const regex = matchNamesByRegex(input.pattern, names, REGEX_BUDGET_MS, deps.regexSandbox);
  const regexNames = regex.kind === 'matched' && regex.names.length < names.length ? regex.names : [];
  selection.evidence.regex = regex.kind === 'matched' ? regexNames.length : regex.kind === 'timeout' || regex.kind === 'invalid' ? regex.kind : null;

  const indexStarted = performance.now();
  const list: CachedToolList = cachedList ?? { tools, toolsIn: input.tools.length, ...(await indexTools(tools, fresh)), lookup };
  selection.knowsTerm = (term) => list.bm25.has(term);
  timings.parse_ms += performance.now() - indexStarted;
  const byHash = lookup.nameOf;
  const ranking = input.tags?.length ? await taggedTools(list, fresh, input.tags) : list;
  let ranked: string[];
  let fallback: FallbackReason | undefined;
  const rankStarted = performance.now();
  try {
    // Not awaited here: the vectors load while BM25 runs and the model embeds the query. A failure
    // surfaces where rankCorpus awaits them (and is dropped if it never needs them).
    const corpusVectors =
      ranking === list
        ? listVectors(deps, list)
        : listVectors(deps, list).then(
            (all) =>
              all &&
              entriesFor(
                ranking.tools.map(({ hash }) => hash),
                all,
              ),
          );
    corpusVectors.catch(() => {});
    const tagsByHash = ranking === list ? undefined : new Map(ranking.tools.map(({ tool, hash }): [string, readonly string[]] => [hash, tool.tags]));
    const source = requestListSource(deps.db, {
      hashes: ranking === list ? lookup.hashes : ranking.tools.map(({ hash }) => hash),
      bm25: ranking.bm25,
      servers: ranking.servers,
      // A tag-filtered part keeps the whole list's words for typo matching, as a catalog's filter does.
      vocabulary: list.bm25.vocabulary(),
      vectors: corpusVectors,
      // Once every vector is in hand, the whole list's server means are computed once, not every
      // turn (500 toolbench_stable tools of 281 servers: ~8 ms of the main thread a turn).
      ...(ranking === list && list.servers.members.size > 0 && list.vectors && list.vectors.model === deps.embedder?.modelId
        ? { serverMeans: async () => listServerMeans(list, list.vectors!) }
        : {}),
      tieKeyOf: (hash) => byHash.get(hash)!,
      ...(tagsByHash ? { tagged: { tags: input.tags!, byId: tagsByHash } } : {}),
      // The rerank stage reads the tools in hand: a list's first turn may not have them stored yet.
      texts: (ids) => {
        const wanted = new Set(ids);
        return new Map(
          ranking.tools.filter(({ hash }) => wanted.has(hash)).map(({ hash, tool }) => [hash, { name: tool.name, description: tool.description }] as const),
        );
      },
    });
    const result = await withStoreDeadline(
      rankCorpus(
        deps,
        source,
        { query: input.pattern, topK: Math.min(ranking.tools.length, Math.max(input.topK + keep.length + exact.length, 50)), mode: 'hybrid' },
        {
          queryVector,
          queryText,
          ...(expandedQuery ? { expandedQuery } : {}),
          embedQuery: embedWithinBudget,
          onEmbedError: (error) => deps.logger.warn({ err: error }, 'selector: query embedding failed; BM25 only'),
        },
      ),
      storeDeadlineMs(deps),
    );
    timings.query_embedding_ms = result.timings.query_embedding_ms;
    ranked = namesOf(
      result.tools.map(({ id, score }) => [id, score] as const),
      byHash,
    );
    const sure = rankingConfidences(
      result.tools.map((tool, index) => ({ rank: index + 1, ...tool.explain })),
      result.bests,
      result.language,
    );
    result.tools.forEach(({ id, score }, index) => {
      const name = byHash.get(id);
      if (name !== undefined && !selection.scores.has(name)) {
        selection.scores.set(name, score);
        selection.confidence.set(name, sure[index]!);
      }
    });
    fallback = result.degraded;
    if (result.language) selection.language = result.language;
  } catch (error) {
    // Never fail closed: the store is down or slow, so rank by BM25 alone, which is in process.
    deps.logger.warn({ err: error }, 'selector: store unavailable; BM25 in process');
    const bm25 = ranking.bm25.search(queryTerms(input.pattern));
    ranked = namesOf(bm25, byHash);
    const sure = bm25Confidences(bm25);
    bm25.forEach(([id, score], index) => {
      if (!byHash.has(id)) return;
      selection.scores.set(byHash.get(id)!, score);
      selection.confidence.set(byHash.get(id)!, sure[index]!);
    });
    fallback = 'store_error';
  }
  timings.ranking_ms = performance.now() - rankStarted - timings.query_embedding_ms;
  if (ranked.length === 0 && exact.length === 0 && regexNames.length === 0) fallback ??= 'no_match';
  const rankedSet = new Set(ranked);
  const regexOrdered = [...ranked.filter((name) => regexNames.includes(name)), ...regexNames.filter((name) => !rankedSet.has(name))];
  const remember = !cachedList && input.toolsKey !== undefined ? { key: input.toolsKey, list } : undefined;
  if (fresh.length > 0 || remember) {
    // Backpressure: a client sending new tools faster than the store takes them waits for its own
    // write, as every request did before writes moved after the answer, so pending writes stay bounded.
    const waitForWrite = deps.background.size >= MAX_WRITES_IN_FLIGHT;
    selection.stored = deps.background.run(inBackground(() => storeNewTools(deps, selection, fresh, remember)));
    if (waitForWrite) await selection.stored;
  }
  return finish([...exact, ...regexOrdered, ...ranked], fallback);
}

/**
 * How long the ranking may wait on the store (the request's vectors, server statistics) before the
 * selector answers from BM25 in process instead: four budgets, at least 250 ms. A database that
 * stops answering (a network partition, not a refused connection) must not hold a gateway's turn
 * for DB_TIMEOUT_MS.
 */
export function storeDeadlineMs(deps: Pick<SelectorDeps, 'budgetMs'>): number | undefined {
  return deps.budgetMs === undefined ? undefined : Math.max(4 * deps.budgetMs, 250);
}

/** The store's part of the ranking, bounded by `ms` when a budget is set. */
function withStoreDeadline<T>(work: Promise<T>, ms: number | undefined): Promise<T> {
  return ms === undefined ? work : withDeadline(work, ms, () => new Error(`the store did not answer within ${ms} ms`));
}
