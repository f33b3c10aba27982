/**
 * A replica's start: the stored catalogs read into process before it answers ready, as their first
 * searches would read them, so those searches rank as later ones do. Without it a 100,000-tool
 * catalog's first searches after a start rank in SQL while its index is read in the background:
 * seconds each on PostgreSQL (`npm run bench:scale`, "after a start").
 */
import { currentRecipe } from '../embed/embed-documents.js';
import { recentCatalogs, type CatalogSummary } from '../store/catalog-store.js';
import { EXACT_SCAN_MAX } from '../store/search-store.js';
import type { Executor } from '../store/tool-store.js';
import { LAST_SEEN_CATALOGS } from './catalog-index.js';
import type { RankDeps } from './hybrid-search.js';

/** What the start's reading has done so far (for /readyz and the log). */
export interface WarmUpProgress {
  state: 'reading' | 'done' | 'failed';
  /** Catalogs listed (most recently written first, at most LAST_SEEN_CATALOGS). */
  of: number;
  /** Catalogs whose index is now in hand. */
  read: number;
  /** Catalogs left to their first search: their index would not fit in what CATALOG_INDEX_MEMORY leaves, or its read failed. */
  skipped: number;
  ms: number;
  reason?: string;
}

/**
 * /readyz waits this long at most for the reading: past it the replica says ready and serves (a
 * catalog not yet read ranks in SQL, as on its first search without the reading).
 */
export const WARM_UP_READY_MAX_MS = 60_000;

export const newWarmUp = (): WarmUpProgress => ({ state: 'reading', of: 0, read: 0, skipped: 0, ms: 0 });

/**
 * Reads every tenant's catalogs, the most recently written first: each one's BM25 index (while
 * CATALOG_INDEX_MEMORY has room for it, judged by the bytes per tool of those read so far) and,
 * with the model, what its first hybrid search reads besides (its servers' mean vectors; a complete
 * mid-size catalog's vectors). Then it says `done` (the replica is ready) and reads the small
 * catalogs' vectors, which their searches scan in SQL until then, as exactly: held, they let the
 * gateway selector answer from memory with the hybrid ranking (search/catalog-vectors.ts). Each
 * catalog's row is noted as last seen, so the gateway selector can answer from memory for it while
 * the store is down. `db` reads without the request path's deadline. Never throws: a failure ends
 * the reading (`failed`, with the reason; after `done`, it only leaves the rest to their searches).
 */
export async function warmCatalogs(deps: RankDeps, db: Executor, progress: WarmUpProgress, stopped: () => boolean = () => false): Promise<void> {
  const started = performance.now();
  const indexes = deps.catalogIndexes;
  const vectorsRead: ReadSoFar = { bytes: 0, tools: 0 };
  const small: CatalogSummary[] = [];
  try {
    // CATALOG_INDEX_MEMORY 0 holds no index: nothing to read.
    const catalogs = indexes && indexes.budget > 0 ? await recentCatalogs(db, LAST_SEEN_CATALOGS) : [];
    progress.of = catalogs.length;
    const indexesRead: ReadSoFar = { bytes: 0, tools: 0 };
    for (const { tenant, catalog } of catalogs) {
      if (stopped()) break;
      indexes!.seen(tenant, catalog);
      if (!fits(catalog, indexesRead, indexes!.bytes, indexes!.budget)) {
        progress.skipped++;
        continue;
      }
      const index = await indexes!.get(catalog);
      if (!index) {
        progress.skipped++;
        continue;
      }
      progress.read++;
      indexesRead.bytes += index.bytes;
      indexesRead.tools += catalog.toolCount;
      if (!deps.embedder) continue;
      await deps.serverStats?.means(db, catalog, deps.embedder.modelId, index.changedSince);
      if (catalog.toolCount > EXACT_SCAN_MAX) await warmVectors(deps, db, catalog, vectorsRead);
      else small.push(catalog);
    }
    progress.state = 'done';
  } catch (error) {
    progress.state = 'failed';
    progress.reason = (error as Error)?.message ?? String(error);
  } finally {
    progress.ms = performance.now() - started;
  }
  try {
    for (const catalog of small) {
      if (stopped()) break;
      await warmVectors(deps, db, catalog, vectorsRead);
    }
  } catch {
    // The rest are read after their first search (catalog-search.ts).
  }
}

/** Bytes read into a cache at start so far, and the tools they are for. */
interface ReadSoFar {
  bytes: number;
  tools: number;
}

/** Whether the catalog's share would fit beside what a cache holds, at the bytes per tool of those read so far (the first always tries). */
function fits(catalog: CatalogSummary, read: ReadSoFar, held: number, budget: number): boolean {
  return read.tools === 0 || held + (read.bytes / read.tools) * catalog.toolCount <= budget;
}

/**
 * A complete catalog's vectors up to `maxTools` (VECTORS_IN_PROCESS_MAX) tools, with the model (what
 * catalog-search.ts keeps), while they fit beside those read so far (`read`): the least recently
 * used set goes first, and that would be a more recently written catalog's.
 */
async function warmVectors(deps: RankDeps, db: Executor, catalog: CatalogSummary, read: ReadSoFar): Promise<void> {
  const kept = deps.catalogVectors;
  if (!deps.embedder || !kept || !deps.embeddingStatus || catalog.toolCount > kept.maxTools) return;
  if (!fits(catalog, read, kept.bytes, kept.budget)) return;
  const model = deps.embedder.modelId;
  if ((await deps.embeddingStatus.pending(db, catalog, model)) !== undefined) return;
  const before = kept.bytes;
  await kept.get(db, catalog, currentRecipe(model));
  if (kept.bytes > before) {
    read.bytes += kept.bytes - before;
    read.tools += catalog.toolCount;
  }
}
