/**
 * One ranking for every provider's and framework's tool-search hook: rank the candidates (tools
 * sent inline, through the selector's content-hash cache, or a stored catalog, through the catalog
 * search) for a query, cut by count and token budget, and report what it costs. The answer formats
 * live in http/tool-search.ts; this returns the one ranked list they are all made from.
 */
import { queryTerms } from '../ranking/search-text.js';
import type { TokenCounter, WireShape } from '../catalog/tokens.js';
import type { Tool } from '../lib/tool.js';
import { AppError } from '../errors.js';
import { catalogKnownTerms } from '../store/search-store.js';
import { rankCatalog, type CatalogRanking } from './catalog-search.js';
import type { RankDeps } from './hybrid-search.js';
import type { CatalogIndex } from './catalog-index.js';
import { toolsSeen, tokensOfTools } from '../catalog/catalog-service.js';
import type { CatalogSummary } from '../store/catalog-store.js';
import { visibleHas, visibleInIndex, visibleTokens } from './visibility.js';
import { carriesTag } from '../ranking/tags.js';
import type { Access } from '../trust/policy.js';
import { selectTools, storeDeadlineMs, type CachedToolList, type SelectorDeps } from './selector.js';

export interface ToolSearchDeps {
  selector: SelectorDeps;
  search: RankDeps;
  tokens: TokenCounter;
}

export interface ToolSearchInput {
  query: string;
  tenant: string;
  tools?: unknown[];
  /** A digest of the inline tools' bytes, and the list it names when remembered (`SelectorInput`). */
  toolsKey?: string;
  cached?: CachedToolList;
  catalog?: string;
  /** The key asking: a catalog it may use, only the tools it sees (trust/policy.ts). */
  access?: Access;
  maxResults: number;
  tags?: string[];
  budgetTokens?: number;
  /** Results below this confidence are left out, even if none is left. */
  minConfidence?: number;
  /** How definitions are counted: as the provider the answer is for receives them. */
  shape: WireShape;
  /** The answer carries the tools' definitions (`openai`, `openai_additional_tools`, `gemini`): from memory, only tools whose definitions a search here answered with. */
  definitions?: boolean;
}

export interface FoundTool {
  name: string;
  /** Its definition; in an answer from memory while the store is down, only a tool's a search here answered with before. */
  tool?: Pick<Tool, 'name' | 'description' | 'inputSchema' | 'definition' | 'server' | 'tags'>;
  score: number;
  /** Calibrated probability that the tool is relevant (ranking/confidence.ts); 1 for a tool named exactly. */
  confidence: number;
  estimatedTokens: number;
}

export interface ToolSearchResult {
  results: FoundTool[];
  /** The answer's confidence: its best result's, before any min_confidence cut (0 when nothing matched). */
  confidence: number;
  /** Query words no candidate tool contains (of a catalog, no tool the key sees): a typo, or a capability nobody offers. */
  unmatchedTerms: string[];
  /** Definition tokens of every candidate (for a catalog: all of its tools the key sees, summed by its writes) and of the answer. */
  tokens: { offered: number; selected: number };
  degraded?: string;
  /** A query in another language than English over a catalog: its tag and whether the model read it (ranking/language.ts). */
  language?: { tag: string; understood: boolean };
  /** ms per stage: an inline list's parse, query embedding and ranking; a catalog's query embedding, retrieval and fusion. */
  timings: Record<string, number>;
}

/** Best first until the next tool would pass the budget; always at least one. */
export function fillBudget<T extends { estimatedTokens: number }>(ranked: T[], budget: number | undefined): T[] {
  if (budget === undefined) return ranked;
  const kept: T[] = [];
  let used = 0;
  for (const item of ranked) {
    if (kept.length > 0 && used + item.estimatedTokens > budget) break;
    kept.push(item);
    used += item.estimatedTokens;
  }
  return kept;
}

/** Results at or above `min` (all of them without one); may be empty: the caller asked to abstain. */
function aboveConfidence<T extends { confidence: number }>(ranked: T[], min: number | undefined): T[] {
  return min === undefined ? ranked : ranked.filter((item) => item.confidence >= min);
}

/**
 * What an answer keeps of a ranked list (best first): its first max_results at or above
 * min_confidence, within the token budget; the answer's confidence (its best, before those cuts);
 * and the kept tools' tokens.
 */
function answerFrom(ranked: FoundTool[], input: ToolSearchInput): { results: FoundTool[]; confidence: number; selected: number } {
  const results = fillBudget(aboveConfidence(ranked.slice(0, input.maxResults), input.minConfidence), input.budgetTokens);
  return {
    results,
    confidence: ranked.reduce((best, item) => Math.max(best, item.confidence), 0),
    selected: results.reduce((sum, item) => sum + item.estimatedTokens, 0),
  };
}

export async function searchForTools(deps: ToolSearchDeps, input: ToolSearchInput): Promise<ToolSearchResult> {
  if ((input.tools === undefined) === (input.catalog === undefined)) {
    throw new AppError('validation_failed', 'send exactly one of "tools" (the candidates inline) and "catalog" (a stored catalog)');
  }
  const terms = [...new Set(queryTerms(input.query))];
  // With a budget, rank deeper than max_results so the budget, not the count, is what cuts.
  const depth = input.maxResults;
  if (input.tools !== undefined) {
    // Tags filter before the ranking, as a stored catalog's do (search/selector.ts `tags`).
    const selection = await selectTools(deps.selector, {
      pattern: input.query,
      topK: Math.max(depth, 1),
      tools: input.tools,
      ...(input.toolsKey === undefined ? {} : { toolsKey: input.toolsKey }),
      ...(input.cached ? { cached: input.cached } : {}),
      alwaysKeep: [],
      ...(input.tags?.length ? { tags: input.tags } : {}),
    });
    const byName = new Map(selection.tools.map((entry) => [entry.tool.name, entry]));
    const candidates = input.tags?.length ? selection.tools.filter((entry) => carriesTag(entry.tool.tags, input.tags!)) : selection.tools;
    const allowed = new Set(candidates.map((entry) => entry.tool.name));
    // Tools named in the query (exactly or by a regular expression) and tools the ranking found, in
    // the selector's order; not the request-order padding that keeps a gateway's answer non-empty.
    const named = new Set(selection.names.slice(0, selection.evidence.exact + (typeof selection.evidence.regex === 'number' ? selection.evidence.regex : 0)));
    // Inline tools are counted on the answer path (by the counting thread), once per content hash;
    // all of them: what the caller would send without a search (tags narrow the search, not that).
    const counts = new Map((await deps.tokens.counts(selection.tools)).map((tokens, index) => [selection.tools[index]!.tool.name, tokens[input.shape]]));
    const ranked = selection.names
      .filter((name) => allowed.has(name) && (selection.scores.has(name) || named.has(name)))
      .map((name) => {
        const entry = byName.get(name)!;
        // A tool named exactly (or by the caller's regular expression) is what was asked for.
        const confidence = named.has(name) ? 1 : (selection.confidence.get(name) ?? 0);
        return { name, tool: entry.tool, score: selection.scores.get(name) ?? 1, confidence, estimatedTokens: counts.get(name)! };
      });
    const { results, confidence, selected } = answerFrom(ranked, input);
    const offered = [...counts.values()].reduce((sum, tokens) => sum + tokens, 0);
    return {
      results,
      confidence,
      unmatchedTerms: terms.filter((term) => !selection.knowsTerm(term)),
      tokens: { offered, selected },
      ...(selection.fallback && selection.fallback !== 'no_match'
        ? { degraded: selection.fallback }
        : selection.language?.understood === false
          ? { degraded: 'query_language' as const }
          : {}),
      ...(selection.language ? { language: selection.language } : {}),
      // The store step of new tools settles after the answer; the selector's log line has it.
      timings: { parse_ms: selection.timings.parse_ms, query_embedding_ms: selection.timings.query_embedding_ms, ranking_ms: selection.timings.ranking_ms },
    };
  }
  const ref = { tenant: input.tenant, name: input.catalog! };
  // Within the selector's store deadline when an answer from memory is at hand, as inline tools' store reads are.
  const canRemember = (index: CatalogIndex) => rememberedIndex(deps, input, index);
  const held = deps.search.catalogIndexes?.lastSeen(ref.tenant, ref.name)?.index;
  const ranking = await rankCatalog(
    deps.search,
    ref,
    { query: input.query, topK: depth, mode: 'hybrid', tags: input.tags, ...(input.access ? { access: input.access } : {}) },
    { canRemember, ...(held && canRemember(held) ? { deadlineMs: storeDeadlineMs(deps.selector) } : {}) },
  );
  return ranking.from === 'store' ? storedAnswer(deps, input, ranking, terms) : rememberedAnswer(deps, input, ranking, terms);
}

/** The answer from the store's ranking: tokens as the catalog's writes counted them. */
async function storedAnswer(
  deps: ToolSearchDeps,
  input: ToolSearchInput,
  ranking: Extract<CatalogRanking, { from: 'store' }>,
  terms: string[],
): Promise<ToolSearchResult> {
  const { catalog, result } = ranking;
  // Counted when the catalog was written; a row of an older release not counted yet is counted now.
  const uncounted = ranking.tools.filter(({ row }) => row.tokens[input.shape] === null);
  const late = new Map(
    (uncounted.length > 0 ? await deps.tokens.counts(uncounted.map(({ row }) => ({ hash: row.hash, tool: row }))) : []).map((tokens, index) => [
      uncounted[index]!.name,
      tokens[input.shape],
    ]),
  );
  const ranked = ranking.tools.map(({ name, row, score, confidence }) => ({
    name,
    tool: { ...row, definition: row.definition },
    score,
    confidence,
    estimatedTokens: row.tokens[input.shape] ?? late.get(name)!,
  }));
  const { results, confidence, selected } = answerFrom(ranked, input);
  const { offered, known } = await offeredAndKnown(deps, input, catalog, terms);
  return {
    results,
    confidence,
    unmatchedTerms: terms.filter((term) => !known.has(term)),
    tokens: { offered, selected },
    ...(result.degraded ? { degraded: result.degraded } : {}),
    ...(result.language ? { language: result.language } : {}),
    timings: result.timings,
  };
}

/**
 * What a stored catalog offers the caller (its definition tokens in `input.shape`) and which of
 * `terms` its tools hold: the whole catalog is what the caller would send without a search (tags
 * narrow the search, not that). For a key that sees only some tools, those tools alone: the
 * catalog's would tell how large the others are and which words they hold.
 */
async function offeredAndKnown(
  deps: ToolSearchDeps,
  input: ToolSearchInput,
  catalog: CatalogSummary,
  terms: string[],
): Promise<{ offered: number; known: Set<string> }> {
  // The catalog's index for this revision knows its words (as an inline list's, selector.ts knowsTerm); without it in hand, the store does.
  const index = deps.search.catalogIndexes?.held(catalog);
  const { access } = input;
  if (!access?.limitsTools) {
    const known = index ? new Set(terms.filter((term) => index.bm25.has(term))) : await catalogKnownTerms(deps.search.db, catalog.id, terms);
    return { offered: catalog.definitionTokens[input.shape], known };
  }
  if (index) {
    const visible = visibleInIndex(access, catalog.name, index)!;
    const offered = visibleTokens(index, visible, input.shape);
    if (offered !== undefined) return { offered, known: new Set(terms.filter((term) => visibleHas(index, visible, term))) };
  }
  // Without the index (or with a row it has not counted yet): the tools' rows, and the words of those the key sees.
  const { seen, hidden } = (await toolsSeen(deps.search, [catalog], access)).get(catalog.id)!;
  return { offered: tokensOfTools(seen, input.shape), known: await catalogKnownTerms(deps.search.db, catalog.id, terms, hidden) };
}

/** Whether the catalog's index as last seen here can answer `input` (`rememberedAnswer`): definitions need the seen rows, every answer the tokens. */
function rememberedIndex(deps: ToolSearchDeps, input: ToolSearchInput, index: CatalogIndex): boolean {
  if (input.definitions && !deps.search.seenTools) return false;
  return index.totalTokens(input.shape) !== undefined;
}

/**
 * The answer while the store does not give one, from the catalog as last seen by this process
 * (`rankRemembered`: its index, and its vectors when held), with `degraded: "store_error"`.
 * An answer that carries definitions (`openai`, `openai_additional_tools`, `gemini`) keeps the ranked tools whose definitions a search
 * here answered with before (search/seen-tools.ts), in their order: a tool the model cannot be given
 * is no use to it. `rankCatalog` answers from memory only when the index can (`rememberedIndex`):
 * else the store's 503, as when this process holds no index of the catalog, or when some row of
 * the catalog has no count yet (an older release's, counted at the next start).
 */
function rememberedAnswer(
  deps: ToolSearchDeps,
  input: ToolSearchInput,
  ranking: Extract<CatalogRanking, { from: 'memory' }>,
  terms: string[],
): ToolSearchResult {
  const { ranked } = ranking;
  const index = ranking.index!;
  // A key that sees only some tools: the totals of those (`offeredAndKnown`); counted whenever the catalog's are (`rememberedIndex`).
  const visible = input.access?.limitsTools ? visibleInIndex(input.access, input.catalog!, index) : undefined;
  const offered = (visible ? visibleTokens(index, visible, input.shape) : index.totalTokens(input.shape))!;
  const all = ranking.tools.flatMap((tool): FoundTool[] => {
    const estimatedTokens = index.tokensOf(tool.name, input.shape)!;
    if (!input.definitions) return [{ ...tool, estimatedTokens }];
    // Only an answer that carries definitions reads them (and touches their place in the cache).
    const seen = deps.search.seenTools?.get(index.catalogId, tool.name);
    return seen ? [{ ...tool, tool: seen, estimatedTokens }] : [];
  });
  const { results, confidence, selected } = answerFrom(all, input);
  return {
    results,
    confidence,
    unmatchedTerms: terms.filter((term) => !(visible ? visibleHas(index, visible, term) : index.bm25.has(term))),
    tokens: { offered, selected },
    degraded: 'store_error',
    ...(ranked.language ? { language: ranked.language } : {}),
    timings: { query_embedding_ms: 0, retrieval_ms: 0, fusion_ms: 0, ...ranked.timings },
  };
}
