/**
 * A catalog's server mean vectors, kept in process between searches. The dense server list
 * averages each server's vectors over the whole catalog, which in SQL means reading every vector
 * on every search. A catalog's tools change only with its revision; their means are kept once
 * every tool has a current vector (until then they are read each time, as the embedding queue
 * fills them in). The servers' BM25 documents live in the catalog's index (catalog-index.ts).
 * The rankings equal the SQL path's (tested).
 */
import { currentRecipe } from '../embed/embed-documents.js';
import { l2Normalize } from '../embed/embedder.js';
import { LruCache } from '../lru-cache.js';
import { loadCatalogServerMeans } from '../store/search-store.js';
import type { Executor } from '../store/tool-store.js';
import type { Bm25Index } from './bm25-index.js';
import type { ServerMembers } from './servers.js';

/** What server votes read for one corpus: its servers as BM25 documents, and each one's tools. */
export interface ServerIndex {
  bm25: Bm25Index;
  members: ServerMembers;
  /** Tool -> its server (a catalog's index has it; the dense server list's candidates above SERVER_SCAN_MAX). */
  serverOf?: ReadonlyMap<string, string>;
}

/** Catalog revisions whose server means stay in memory (each ~2 KB per server for the default model). */
export const SERVER_STATS_CATALOGS = 64;

export class ServerStatsCache {
  /** `catalog:revision:model` -> unit-length mean vectors by server, once complete. */
  private readonly entries: LruCache<string, ReadonlyMap<string, Float32Array>>;

  constructor(capacity = SERVER_STATS_CATALOGS) {
    this.entries = new LruCache(capacity);
  }

  /** The catalog's unit-length server mean vectors for `model`: kept once every tool has a current vector. */
  async means(db: Executor, catalog: { id: number; revision: number }, model: string): Promise<ReadonlyMap<string, Float32Array>> {
    const key = `${catalog.id}:${catalog.revision}:${model}`;
    const kept = this.entries.get(key);
    if (kept) return kept;
    const { means, complete } = await loadCatalogServerMeans(db, catalog.id, currentRecipe(model));
    for (const [server, mean] of means) means.set(server, Float32Array.from(l2Normalize(mean)));
    if (complete) this.entries.set(key, means);
    return means;
  }
}
