/**
 * A catalog's server statistics, kept in process between searches. Server votes need every
 * server of the catalog (BM25's N, avgdl and df count servers; the dense list averages each
 * server's vectors), which in SQL means reading the whole catalog on every search: on a 2,490-tool
 * catalog the two server queries cost PostgreSQL more than the rest of the search. A catalog's
 * tools change only with its revision, so its server documents are read once per revision; their
 * mean vectors are kept once every tool has a current vector (until then they are read each time,
 * as the embedding queue fills them in). The rankings equal the SQL path's (tested).
 */
import { currentRecipe } from '../embed/embed-documents.js';
import { l2Normalize } from '../embed/embedder.js';
import { LruCache } from '../lru-cache.js';
import { loadCatalogServerMeans, loadCatalogServerTerms } from '../store/search-store.js';
import type { Executor } from '../store/tool-store.js';
import { Bm25Index } from './bm25-index.js';
import type { ServerMembers } from './servers.js';

/** What server votes read for one corpus: its servers as BM25 documents, and each one's tools. */
export interface ServerIndex {
  bm25: Bm25Index;
  members: ServerMembers;
}

/** Catalogs whose server statistics stay in memory (each ~2 KB per server for the default model). */
export const SERVER_STATS_CATALOGS = 64;

interface Entry {
  index: ServerIndex;
  /** Unit-length mean vectors by server, per model, once complete. */
  means: Map<string, ReadonlyMap<string, Float32Array>>;
}

export class ServerStatsCache {
  private readonly entries: LruCache<string, Entry>;

  constructor(capacity = SERVER_STATS_CATALOGS) {
    this.entries = new LruCache(capacity);
  }

  /** The catalog's server documents at this revision (read from the store on first use). */
  async index(db: Executor, catalog: { id: number; revision: number }): Promise<ServerIndex> {
    return (await this.entry(db, catalog)).index;
  }

  /** The catalog's unit-length server mean vectors for `model`: kept once every tool has a current vector. */
  async means(db: Executor, catalog: { id: number; revision: number }, model: string): Promise<ReadonlyMap<string, Float32Array>> {
    const entry = await this.entry(db, catalog);
    const kept = entry.means.get(model);
    if (kept) return kept;
    const { means, complete } = await loadCatalogServerMeans(db, catalog.id, currentRecipe(model));
    for (const [server, mean] of means) means.set(server, Float32Array.from(l2Normalize(mean)));
    if (complete) entry.means.set(model, means);
    return means;
  }

  private async entry(db: Executor, catalog: { id: number; revision: number }): Promise<Entry> {
    const key = `${catalog.id}:${catalog.revision}`;
    const kept = this.entries.get(key);
    if (kept) return kept;
    // Summed per server in SQL: reading each tool's terms and adding them here (serverDocuments)
    // made the first search of a catalog revision ~70 ms slower on PGlite for 527 tools.
    const { tools, terms } = await loadCatalogServerTerms(db, catalog.id);
    const documents = new Map<string, { id: string; termFreqs: Map<string, number>; length: number }>();
    const members = new Map<string, string[]>();
    for (const tool of tools) {
      let document = documents.get(tool.server);
      if (!document) {
        documents.set(tool.server, (document = { id: tool.server, termFreqs: new Map(), length: 0 }));
        members.set(tool.server, []);
      }
      document.length += tool.length;
      members.get(tool.server)!.push(tool.id);
    }
    for (const { server, term, tf } of terms) documents.get(server)?.termFreqs.set(term, tf);
    const entry: Entry = { index: { bm25: new Bm25Index([...documents.values()]), members }, means: new Map() };
    this.entries.set(key, entry);
    return entry;
  }
}
