/**
 * Which tools of a catalog a key limited to some tools sees (trust/policy.ts), as the ranking takes
 * it: a predicate over the catalog's ids (tool names) and how many it hides, so `rankCorpus` reads
 * each list deep enough that the hidden tools cannot leave an answer short, and drops them from
 * each list before fusing them. Keys of a tenant share the catalog's index, vectors and learning;
 * where the index is in hand, a limited key is ranked with that index less the tools it does not
 * see (`visibleIndex`): the statistics, servers and words of the tools it sees.
 */
import { canSeeTool, limitsTools, type Access } from '../trust/policy.js';
import { CatalogIndex } from './catalog-index.js';
import { serverCentroids } from '../ranking/servers.js';
import type { Bm25Index } from '../ranking/bm25-index.js';
import type { WireShape } from '../lib/tool.js';
import type { CorpusNames } from '../store/search-store.js';

export interface Visible {
  keep(id: string): boolean;
  /** Tools of the catalog the key does not see. */
  hidden: number;
  /**
   * Under a caller's own filter (Access.narrowed), what the key itself sees: the ranking's
   * statistics are of those tools (the filter narrows the lists, as a key's limits do, but hides
   * nothing the key may not know). Absent: this view's.
   */
  statistics?: Visible;
}

/** A view hiding nothing. */
const EVERY: Visible = { keep: () => true, hidden: 0 };

/** Per index (one catalog revision) and key: computed once, over every name of the index. */
const byIndex = new WeakMap<CatalogIndex, Map<string, Visible>>();

/** The visibility of a catalog's tools for `access`, or undefined when it sees them all. */
export function visibleIn(
  access: Access | undefined,
  catalog: string,
  tools: Iterable<{ name: string; server: string | null | undefined }>,
): Visible | undefined {
  if (!access?.limitsTools) return undefined;
  const hiddenNames = new Set<string>();
  for (const tool of tools) if (!access.seesTool({ catalog, name: tool.name, server: tool.server })) hiddenNames.add(tool.name);
  return { keep: (id) => !hiddenNames.has(id), hidden: hiddenNames.size };
}

/**
 * Without the catalog's index (the store's path), from one pass of the key's policy over the
 * catalog's tools: what it sees (`visible`, as `visibleIn`), and the tools the key itself sees as
 * the corpus the store ranks (`names`, the shorter list of the two), so that BM25's statistics, typo
 * matching's words and the servers' votes in SQL are of those tools, as from the index less the
 * others. A caller's own filter (Access.narrowed) cuts `visible` only, as it changes no statistics
 * there.
 */
export function visibleInStore(
  access: Access | undefined,
  catalog: string,
  tools: readonly { name: string; server: string | null | undefined }[],
): { visible?: Visible; names?: CorpusNames } {
  if (!access?.limitsTools) return {};
  const only: string[] = [];
  const except: string[] = [];
  if (limitsTools(access.policy))
    for (const tool of tools) (canSeeTool(access.policy, { catalog, name: tool.name, server: tool.server }) ? only : except).push(tool.name);
  const hidden = new Set(except);
  // Not narrowed, what the key sees is what its policy lets it see: the pass above is the view.
  const visible = access.isNarrowed ? visibleIn(access, catalog, tools)! : { keep: (id: string) => !hidden.has(id), hidden: hidden.size };
  if (except.length === 0) return { visible };
  return { visible, names: only.length <= except.length ? { only } : { except } };
}

/** `visibleIn` over a catalog's index as held (its names and servers), kept with the index. */
export function visibleInIndex(access: Access | undefined, catalog: string, index: CatalogIndex): Visible | undefined {
  if (!access?.limitsTools) return undefined;
  const tools = () => [...indexNames(index.bm25)].map((name) => ({ name, server: index.servers.serverOf.get(name) ?? null }));
  let perKey = byIndex.get(index);
  if (!perKey) byIndex.set(index, (perKey = new Map()));
  // What the key itself sees, kept per index and key.
  let own = perKey.get(access.policy.id);
  if (!own && limitsTools(access.policy)) {
    const hiddenNames = new Set<string>();
    for (const tool of tools()) if (!canSeeTool(access.policy, { catalog, ...tool })) hiddenNames.add(tool.name);
    own = { keep: (id) => !hiddenNames.has(id), hidden: hiddenNames.size };
    perKey.set(access.policy.id, own);
  }
  // A caller's own filter (Access.narrowed) varies by request: kept, every pattern asked would hold a set per index.
  if (access.isNarrowed) return { ...visibleIn(access, catalog, tools())!, statistics: own ?? EVERY };
  return own!;
}

/**
 * What one key's view of a catalog's index holds besides the index (its hidden names and the
 * overlay less them), as a share of that index's own bytes: `npx tsx bench/probes/limited-key.ts`
 * measured 6.8-11.7 MB beside a 60.6 MB index at 100,000 tools (11-19%).
 */
const VIEW_SHARE = 0.2;

/** Per `Visible` of an index: that index less the tools it hides, and the servers those were of. */
const rankedByVisible = new WeakMap<Visible, { index: CatalogIndex; touched: ReadonlySet<string> }>();

function visibleRanking(index: CatalogIndex, visible: Visible): { index: CatalogIndex; touched: ReadonlySet<string> } {
  let held = rankedByVisible.get(visible);
  if (!held) {
    const removed = [...indexNames(index.bm25)].filter((name) => !visible.keep(name));
    const touched = new Set<string>();
    for (const name of removed) {
      const server = index.servers.serverOf.get(name);
      if (server !== undefined) touched.add(server);
    }
    held = { index: CatalogIndex.overlay(index, { revision: index.revision, rows: [], removed }), touched };
    rankedByVisible.set(visible, held);
    // Held as long as the catalog's index is: counted with it in CATALOG_INDEX_MEMORY.
    index.attach(Math.round(VIEW_SHARE * index.ownBytes));
  }
  return held;
}

/**
 * The index a key that sees only some tools is ranked with: the catalog's less the tools it does
 * not see (`CatalogIndex.overlay` removing them), so BM25's N, average length and document
 * frequencies, the servers' documents and members, and the words typo matching reads are those of
 * the tools it sees, as for a catalog holding only them. With the whole catalog's, a score told how
 * many hidden tools hold a word, a server's vote carried a hidden tool's words, and a typo could be
 * corrected to a word only a hidden tool holds. Kept per `Visible` (per revision and key): copies
 * of the per-tool arrays, not of the postings.
 */
export function visibleIndex(index: CatalogIndex, visible: Visible | undefined): CatalogIndex {
  const own = visible?.statistics ?? visible;
  return own && own.hidden > 0 ? visibleRanking(index, own).index : index;
}

/** `visibleMeans`'s answer per `Visible`, for the catalog's means and vectors it was computed from. */
const meansByVisible = new WeakMap<Visible, { from: ReadonlyMap<string, Float32Array>; vectors: unknown; means: ReadonlyMap<string, Float32Array> }>();

/**
 * The servers' unit means a key that sees only some tools is ranked with: the catalog's `means`
 * without the servers it sees no tool of, and those holding a tool it does not see computed again
 * from its tools' `vectors` (left out when the vectors are not in hand).
 */
export function visibleMeans(
  index: CatalogIndex,
  visible: Visible | undefined,
  means: ReadonlyMap<string, Float32Array>,
  vectors: ReadonlyMap<string, Float32Array> | undefined,
): ReadonlyMap<string, Float32Array> {
  visible = visible?.statistics ?? visible;
  if (!visible || visible.hidden === 0) return means;
  const known = meansByVisible.get(visible);
  if (known && known.from === means && known.vectors === vectors) return known.means;
  const { index: ranked, touched } = visibleRanking(index, visible);
  const members = ranked.servers.members;
  const kept = new Map<string, Float32Array>();
  for (const [server, mean] of means) if (members.has(server) && !touched.has(server)) kept.set(server, mean);
  if (vectors) {
    const again = new Map([...touched].filter((server) => members.has(server)).map((server) => [server, members.get(server)!]));
    for (const [server, mean] of serverCentroids(again, vectors)) kept.set(server, mean);
  }
  meansByVisible.set(visible, { from: means, vectors, means: kept });
  return kept;
}

/** `visibleTokens`, once asked, per `Visible` of an index (itself kept per index and key). */
const tokensByVisible = new WeakMap<Visible, Map<WireShape, number | undefined>>();

/**
 * The definition tokens in `shape` of the index's tools `visible` keeps: what a key that sees only
 * some tools is offered (the catalog's total would tell how large the others are). Undefined when
 * one of them was not counted yet (an older release's row).
 */
export function visibleTokens(index: CatalogIndex, visible: Visible, shape: WireShape): number | undefined {
  let totals = tokensByVisible.get(visible);
  if (!totals) tokensByVisible.set(visible, (totals = new Map()));
  if (totals.has(shape)) return totals.get(shape);
  let total: number | undefined = 0;
  for (const name of indexNames(index.bm25)) {
    if (!visible.keep(name)) continue;
    const tokens = index.tokensOf(name, shape);
    if (tokens === undefined) {
      total = undefined;
      break;
    }
    total += tokens;
  }
  totals.set(shape, total);
  return total;
}

/** Whether a tool of the index that `visible` keeps holds `term` (a query word no such tool holds is unmatched, whatever the others hold). */
export function visibleHas(index: CatalogIndex, visible: Visible, term: string): boolean {
  return index.bm25.hasIn(term, (at) => visible.keep(index.bm25.idAt(at)));
}

/** The index's names (a derived index's place of a removed tool may hold a name it no longer knows there). */
function* indexNames(bm25: Bm25Index): Generator<string> {
  for (let at = 0; at < bm25.size; at++) {
    const name = bm25.idAt(at);
    if (name !== undefined && bm25.indexOf(name) === at) yield name;
  }
}
