/**
 * A catalog's server mean vectors, kept in process between searches. The dense server list
 * averages each server's vectors over the whole catalog, which in SQL means reading every vector
 * on every search. A catalog's tools change only with its revision; a server's mean is kept once
 * each of its tools has a current vector (until then it is read each time, as the embedding queue
 * fills them in), and a new revision reads only the servers it changed. The servers' BM25 documents live in the catalog's index (catalog-index.ts).
 * The rankings equal the SQL path's (tested).
 */
import { currentRecipe } from '../embed/embed-documents.js';
import { l2Normalize } from '../embed/embedder.js';
import { LruCache } from '../lib/lru-cache.js';
import { loadCatalogServerMeans } from '../store/search-store.js';
import type { Executor } from '../store/tool-store.js';
import type { Bm25Index } from '../ranking/bm25-index.js';
import type { ServerMembers } from '../ranking/servers.js';

/** What server votes read for one corpus: its servers as BM25 documents, and each one's tools. */
export interface ServerIndex {
  bm25: Bm25Index;
  members: ServerMembers;
  /** Tool -> its server (a catalog's index has it; the dense server list's candidates above SERVER_SCAN_MAX). */
  serverOf?: ToolServers;
}

/** A tool's server by the tool's id. */
export interface ToolServers {
  get(id: string): string | undefined;
}

/** Catalog revisions whose server means stay in memory (each ~2 KB per server for the default model). */
export const SERVER_STATS_CATALOGS = 64;
/** At most this many servers' means are read again to bring kept ones up to date; more, and all are read. */
export const REREAD_MAX = 2000;

/** A catalog revision, and the servers whose tools changed since it (CatalogIndex.changedSince). */
export interface ChangedServers {
  revision: number;
  servers: ReadonlySet<string>;
}

interface KeptMeans {
  means: ReadonlyMap<string, Float32Array>;
  /** Servers with a tool still lacking a current vector: their means are read again next time. */
  incomplete: ReadonlySet<string>;
}

export class ServerStatsCache {
  /** `catalog:revision:model` -> unit-length mean vectors by server. */
  private readonly entries: LruCache<string, KeptMeans>;

  constructor(capacity = SERVER_STATS_CATALOGS) {
    this.entries = new LruCache(capacity);
  }

  /** Every server's mean kept for exactly this revision and model, without reading anything (the selector's answer from memory). */
  held(catalog: { id: number; revision: number }, model: string): ReadonlyMap<string, Float32Array> | undefined {
    const kept = this.entries.get(`${catalog.id}:${catalog.revision}:${model}`);
    return kept && kept.incomplete.size === 0 ? kept.means : undefined;
  }

  /**
   * The catalog's unit-length server mean vectors for `model`. A server's mean is kept once each
   * of its tools has a current vector; the others are read again on each call. `changedSince`:
   * older revisions, newest first, with the servers whose tools changed since each
   * (CatalogIndex.changedSince): the means kept for one of them serve every other server, so only
   * those servers are read.
   */
  async means(
    db: Executor,
    catalog: { id: number; revision: number },
    model: string,
    changedSince: readonly ChangedServers[] = [],
  ): Promise<ReadonlyMap<string, Float32Array>> {
    const key = (revision: number) => `${catalog.id}:${revision}:${model}`;
    const kept = this.entries.get(key(catalog.revision));
    if (kept && kept.incomplete.size === 0) return kept.means;
    let base = kept;
    let reread = kept && new Set(kept.incomplete);
    for (const since of kept ? [] : changedSince) {
      base = this.entries.get(key(since.revision));
      if (!base) continue;
      reread = new Set([...base.incomplete, ...since.servers]);
      break;
    }
    let entry: KeptMeans;
    if (base && reread!.size <= REREAD_MAX) {
      const read = await loadCatalogServerMeans(db, catalog.id, currentRecipe(model), [...reread!]);
      const means = new Map(base.means);
      for (const server of reread!) means.delete(server);
      for (const [server, mean] of read.means) means.set(server, Float32Array.from(l2Normalize(mean)));
      entry = { means, incomplete: read.incomplete };
    } else {
      const read = await loadCatalogServerMeans(db, catalog.id, currentRecipe(model));
      for (const [server, mean] of read.means) read.means.set(server, Float32Array.from(l2Normalize(mean)));
      entry = read;
    }
    this.entries.set(key(catalog.revision), entry);
    return entry.means;
  }
}
