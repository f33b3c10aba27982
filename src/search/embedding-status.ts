/**
 * Whether a catalog's tools all have a current vector, for searches that use the dense list: a
 * search over a catalog still being embedded says so (`degraded: "embeddings_pending"` with the
 * progress) instead of silently ranking some tools by BM25 alone. Counting costs a pass over the
 * catalog, so a complete revision is remembered (it stays complete: its tools never change), and
 * a pending one is counted at most once a second.
 */
import { currentRecipe } from '../embed/embed-documents.js';
import { LruCache } from '../lru-cache.js';
import { catalogEmbeddingProgress } from '../store/embedding-store.js';
import type { Executor } from '../store/tool-store.js';

export interface PendingEmbeddings {
  done: number;
  total: number;
}

const RECOUNT_MS = 1_000;

export class CatalogEmbeddingStatus {
  private readonly complete = new LruCache<string, true>(4096);
  private readonly counted = new LruCache<string, { at: number; progress: PendingEmbeddings }>(1024);

  /** The catalog's progress while some tool lacks a current vector of `model`; undefined once all have one. */
  async pending(db: Executor, catalog: { id: number; revision: number }, model: string): Promise<PendingEmbeddings | undefined> {
    const recipe = currentRecipe(model);
    const key = `${catalog.id}:${catalog.revision}:${model}:${recipe.textVersion}`;
    if (this.complete.get(key)) return undefined;
    const recent = this.counted.get(key);
    if (recent && Date.now() - recent.at < RECOUNT_MS) return recent.progress;
    const { done, total } = await catalogEmbeddingProgress(db, catalog.id, recipe);
    if (done >= total) {
      this.complete.set(key, true);
      this.counted.delete(key);
      return undefined;
    }
    const progress = { done: Number(done), total: Number(total) };
    this.counted.set(key, { at: Date.now(), progress });
    return progress;
  }
}
