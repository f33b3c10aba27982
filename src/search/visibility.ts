/**
 * Which tools of a catalog a key limited to some tools sees (trust/policy.ts), as the ranking takes
 * it: a predicate over the catalog's ids (tool names) and how many it hides, so `rankCorpus` reads
 * each list deep enough that the hidden tools cannot leave an answer short, and drops them from
 * each list before fusing them. Keys of a tenant share the catalog's index, vectors and learning: a
 * limited key's ranking is that of the tools it sees, with the whole catalog's statistics.
 */
import type { Access } from '../trust/policy.js';
import type { CatalogIndex } from './catalog-index.js';
import type { Bm25Index } from '../ranking/bm25-index.js';
import type { WireShape } from '../lib/tool.js';

export interface Visible {
  keep(id: string): boolean;
  /** Tools of the catalog the key does not see. */
  hidden: number;
}

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

/** `visibleIn` over a catalog's index as held (its names and servers), kept with the index. */
export function visibleInIndex(access: Access | undefined, catalog: string, index: CatalogIndex): Visible | undefined {
  if (!access?.limitsTools) return undefined;
  const listed = () =>
    visibleIn(
      access,
      catalog,
      [...indexNames(index.bm25)].map((name) => ({ name, server: index.servers.serverOf.get(name) ?? null })),
    )!;
  // A caller's own filter (Access.narrowed) varies by request: kept, every pattern asked would hold a set per index.
  if (access.isNarrowed) return listed();
  let perKey = byIndex.get(index);
  if (!perKey) byIndex.set(index, (perKey = new Map()));
  const known = perKey.get(access.policy.id);
  if (known) return known;
  const visible = listed();
  perKey.set(access.policy.id, visible);
  return visible;
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
