/**
 * How far a catalog revision's tools are embedded, for `GET /v1/catalogs/{catalog}` (and `npm run
 * ingest`'s progress bar, which polls it) and for searches that use the dense list (a search over a
 * catalog still being embedded says so: `degraded: "embeddings_pending"` with the progress).
 *
 * Counting costs a pass over the catalog (1.1-1.5 s at 100,000 tools while the queue writes), so a
 * complete revision is remembered (its tools never change), callers asking at once share one count,
 * and a pending revision is recounted no sooner than 20 times its last count took: however often
 * clients poll, counting takes at most ~5% of a core per catalog per process. A small catalog's
 * count (milliseconds) is thus current within tens of milliseconds; a 100,000-tool one within
 * seconds, while its embedding takes minutes. A count slower than its size explains (a stalled
 * machine) is not held against the catalog: the wait is capped by the size (countCostCapMs).
 *
 * A revision written after one seen complete is told from that one: only the names changed since
 * are probed (catalogEmbeddingProgressSince), so a one-tool write to a 100,000-tool catalog does
 * not cost its next hybrid search a pass over the catalog.
 */
import { currentRecipe } from '../embed/embed-documents.js';
import { LruCache } from '../lib/lru-cache.js';
import { catalogEmbeddingProgress, catalogEmbeddingProgressSince } from '../store/embedding-store.js';
import type { Executor } from '../store/tool-store.js';

export interface PendingEmbeddings {
  done: number;
  total: number;
}

/** How often a search's count of a pending revision is renewed at most (`pending`), ms. */
export const SEARCH_RECOUNT_MS = 1_000;

/** A pending revision is recounted after this many times its last count's duration. */
const RECOUNT_COST_FACTOR = 20;
/**
 * The longest a count of `total` tools is taken to cost (~5x a quiet machine's: 1.1-1.5 s at
 * 100,000 tools): a count slower than that was the machine stalling, not the catalog, and must not
 * leave a small catalog's progress stale for a minute (4 tools counted in 3 s on a loaded CI run).
 */
const countCostCapMs = (total: number): number => 5 + 0.05 * total;
const recountAfterMs = (count: Count): number => RECOUNT_COST_FACTOR * Math.min(count.tookMs, countCostCapMs(count.progress.total));

/** At most this many changed names are probed to tell a revision from a complete one; more, and it is counted whole. */
export const CHANGED_NAMES_MAX = 10_000;

/**
 * A key that sees only some tools of the catalog: its progress is counted over those tools, by
 * `count`, and kept apart under `id` (the key's), with the same recounting rules.
 */
export interface ProgressScope {
  id: string;
  count: () => Promise<PendingEmbeddings>;
}

interface Count {
  at: number;
  tookMs: number;
  progress: PendingEmbeddings;
}

export class CatalogEmbeddingStatus {
  private readonly complete = new LruCache<string, number>(4096);
  private readonly counted = new LruCache<string, Count>(1024);
  private readonly counting = new Map<string, Promise<Count>>();
  /** `catalog:model:textVersion` -> the newest revision seen complete. */
  private readonly newestComplete = new LruCache<string, number>(4096);

  /** `now`: milliseconds, for both a count's age and its duration (a test's clock). */
  constructor(private readonly now: () => number = () => performance.now()) {}

  /**
   * The revision's tool count and how many have a current vector of `model`, recounted when the
   * last count is older than `minRecountMs` and than 20 times its duration (capped by its size).
   * With `scope`, the count over the tools a key sees.
   */
  async progress(db: Executor, catalog: { id: number; revision: number }, model: string, minRecountMs = 0, scope?: ProgressScope): Promise<PendingEmbeddings> {
    const recipe = currentRecipe(model);
    const key = `${catalog.id}:${catalog.revision}:${model}:${recipe.textVersion}${scope ? `:${scope.id}` : ''}`;
    const catalogKey = `${catalog.id}:${model}:${recipe.textVersion}`;
    const total = this.complete.get(key);
    if (total !== undefined) return { done: total, total };
    const recent = this.counted.get(key);
    if (recent && this.now() - recent.at < Math.max(minRecountMs, recountAfterMs(recent))) return recent.progress;
    let counting = this.counting.get(key);
    if (!counting) {
      counting = (async () => {
        const started = this.now();
        if (scope) {
          const progress = await scope.count();
          const at = this.now();
          return { at, tookMs: at - started, progress };
        }
        const from = this.newestComplete.get(catalogKey);
        const since =
          from !== undefined && from < catalog.revision ? await catalogEmbeddingProgressSince(db, catalog.id, from, recipe, CHANGED_NAMES_MAX) : undefined;
        const { done, total } = since ?? (await catalogEmbeddingProgress(db, catalog.id, recipe));
        const at = this.now();
        return { at, tookMs: at - started, progress: { done: Number(done), total: Number(total) } };
      })().finally(() => this.counting.delete(key));
      this.counting.set(key, counting);
    }
    const count = await counting;
    if (count.progress.done >= count.progress.total) {
      this.complete.set(key, count.progress.total);
      this.counted.delete(key);
      if (!scope && catalog.revision > (this.newestComplete.get(catalogKey) ?? 0)) this.newestComplete.set(catalogKey, catalog.revision);
    } else {
      this.counted.set(key, count);
    }
    return count.progress;
  }

  /** The catalog's progress while some tool lacks a current vector of `model`; undefined once all have one. */
  async pending(db: Executor, catalog: { id: number; revision: number }, model: string): Promise<PendingEmbeddings | undefined> {
    const progress = await this.progress(db, catalog, model, SEARCH_RECOUNT_MS);
    return progress.done >= progress.total ? undefined : progress;
  }
}
