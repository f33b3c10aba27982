/**
 * A stored catalog's BM25 statistics in process, one index per catalog revision: what makes a
 * search's cost follow the query's postings instead of the catalog's size.
 *
 * In SQL every search recomputed N, avgdl and every query term's df over the whole catalog (and
 * each server's document for server votes): 69 ms at 10,000 tools, 926 ms at 100,000 on
 * PostgreSQL. A catalog changes only with its revision, so its documents' terms are read once per
 * revision (one statement, which also reads the revision, so the index is exactly that revision's
 * content) and kept. Postgres stays the source of truth: every search reads the catalog's revision
 * first, and while the index of a newer revision is being read (seconds at 100,000 tools) that
 * search ranks in SQL, so a write on any replica is seen by the next search anywhere. Scores are
 * the BM25 of search/bm25.ts over the same corpus (tag filter first), tested equal to the SQL.
 * Memory is bounded in bytes across catalogs (CATALOG_INDEX_MEMORY), least recently used first.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import { LruCache } from '../lru-cache.js';
import { loadCatalogIndexRows, type CatalogIndexRow } from '../store/search-store.js';
import type { Executor } from '../store/tool-store.js';
import { Bm25Builder, Bm25Index } from './bm25-index.js';
import type { ServerIndex } from './server-stats.js';

/** Rows handled between two yields to the event loop while an index is built (~10 ms of work). */
const BUILD_SLICE = 2000;

export class CatalogIndex {
  /** A rough size in bytes (strings, postings, maps), for the cache's bound. */
  readonly bytes: number;
  private readonly byName: Map<string, number>;
  /** Lowercased tag -> indexes of the documents carrying it. */
  private readonly tagged = new Map<string, number[]>();

  private constructor(
    readonly catalogId: number,
    readonly revision: number,
    readonly bm25: Bm25Index,
    /** The catalog's servers as BM25 documents (all their tools' terms), with their members (server votes). */
    readonly servers: ServerIndex,
    private readonly tags: string[][],
    names: string[],
    stringBytes: number,
  ) {
    this.byName = new Map(names.map((name, index) => [name, index]));
    tags.forEach((list, index) => {
      for (const tag of new Set(list.map((tag) => tag.toLowerCase()))) {
        let members = this.tagged.get(tag);
        if (!members) this.tagged.set(tag, (members = []));
        members.push(index);
      }
    });
    // Per tool ~300 bytes of ids, lengths, map entries, member lists and its server; per posting 8; per distinct term ~100.
    const postings = bm25.postingCount + servers.bm25.postingCount;
    this.bytes = 300 * names.length + 2 * stringBytes + 8 * postings + 100 * (bm25.termCount + servers.bm25.termCount);
  }

  /** Builds the index from the catalog's rows, yielding to the event loop every BUILD_SLICE rows. */
  static async build(catalogId: number, revision: number, rows: readonly CatalogIndexRow[]): Promise<CatalogIndex> {
    const tools = new Bm25Builder();
    const serverTerms = new Map<string, { termFreqs: Map<string, number>; length: number }>();
    const members = new Map<string, string[]>();
    const serverOf = new Map<string, string>();
    const tags: string[][] = [];
    let stringBytes = 0;
    for (let at = 0; at < rows.length; at++) {
      if (at > 0 && at % BUILD_SLICE === 0) await nextTurn();
      const row = rows[at]!;
      const pairs = row.terms.map((term, i): [string, number] => [term, row.tfs[i]!]);
      tools.add(row.name, row.length, pairs);
      tags.push(row.tags);
      stringBytes += row.name.length;
      if (row.server === null) continue;
      // A server's document is its tools' terms added together (search/servers.ts serverDocuments).
      let server = serverTerms.get(row.server);
      if (!server) {
        serverTerms.set(row.server, (server = { termFreqs: new Map(), length: 0 }));
        members.set(row.server, []);
        stringBytes += row.server.length;
      }
      for (const [term, tf] of pairs) server.termFreqs.set(term, (server.termFreqs.get(term) ?? 0) + tf);
      server.length += row.length;
      members.get(row.server)!.push(row.name);
      serverOf.set(row.name, row.server);
    }
    await nextTurn();
    const servers = new Bm25Builder();
    for (const [id, { termFreqs, length }] of serverTerms) servers.add(id, length, termFreqs);
    const index = new CatalogIndex(catalogId, revision, new Bm25Index(tools), { bm25: new Bm25Index(servers), members, serverOf }, tags, tools.ids, stringBytes);
    return index;
  }

  get size(): number {
    return this.bm25.size;
  }

  /** BM25 over the catalog (query terms and their weights, as `Bm25Index.searchWeighted`), or over its tools carrying one of `tags` (case-insensitive) when given. */
  search(weights: ReadonlyMap<string, number>, limit: number, tags?: readonly string[]): [string, number][] {
    if (!tags?.length) return this.bm25.searchWeighted(weights, limit);
    const within = new Uint8Array(this.size);
    for (const tag of new Set(tags.map((tag) => tag.toLowerCase()))) for (const index of this.tagged.get(tag) ?? []) within[index] = 1;
    return this.bm25.searchWeighted(weights, limit, within);
  }

  /** Stored tags of the named tools (for the tag boost). */
  tagsOf(names: readonly string[]): Map<string, string[]> {
    const tags = new Map<string, string[]>();
    for (const name of names) {
      const index = this.byName.get(name);
      if (index !== undefined) tags.set(name, this.tags[index]!);
    }
    return tags;
  }
}

/** CATALOG_INDEX_MEMORY's default, in MiB. */
export const DEFAULT_CATALOG_INDEX_MEMORY_MB = 512;
/** After a failed load, the same catalog revision is not read again for this long. */
const RETRY_AFTER_MS = 5_000;

export class CatalogIndexCache {
  /** Keyed by catalog: a newer revision replaces the older one (no search asks for an older one). */
  private readonly entries: LruCache<number, CatalogIndex>;
  private readonly loading = new Map<number, { revision: number; done: Promise<CatalogIndex | undefined> }>();
  /** Catalog -> the revision that failed to load or did not fit, and when. */
  private readonly skipped = new Map<number, { revision: number; at: number; tooLarge: boolean }>();

  /**
   * `db` reads the rows: a connection without the request path's deadline (the read takes seconds
   * at 100,000 tools, in the background).
   */
  constructor(
    private readonly db: Executor,
    private readonly memoryBytes = DEFAULT_CATALOG_INDEX_MEMORY_MB * 2 ** 20,
  ) {
    this.entries = new LruCache(Number.MAX_SAFE_INTEGER, { max: memoryBytes, weigh: (index) => index.bytes });
  }

  /**
   * The catalog's index when one of this revision or later is in hand. Otherwise it starts reading
   * it (once, however many searches ask) and answers undefined: the caller ranks in SQL meanwhile.
   */
  current(catalog: { id: number; revision: number }): CatalogIndex | undefined {
    const kept = this.entries.get(catalog.id);
    if (kept && kept.revision >= catalog.revision) return kept;
    void this.load(catalog);
    return undefined;
  }

  /** The index of this revision or later, read now if need be; undefined when it cannot be kept (too large, or the read failed). */
  async get(catalog: { id: number; revision: number }): Promise<CatalogIndex | undefined> {
    return this.current(catalog) ?? (await this.load(catalog));
  }

  /** Bytes held (estimated). */
  get bytes(): number {
    return this.entries.heldWeight;
  }

  private load(catalog: { id: number; revision: number }): Promise<CatalogIndex | undefined> {
    const pending = this.loading.get(catalog.id);
    if (pending && pending.revision >= catalog.revision) return pending.done;
    const skipped = this.skipped.get(catalog.id);
    if (skipped && skipped.revision >= catalog.revision && (skipped.tooLarge || Date.now() - skipped.at < RETRY_AFTER_MS)) return Promise.resolve(undefined);
    const token = { revision: catalog.revision, done: undefined as unknown as Promise<CatalogIndex | undefined> };
    token.done = (async () => {
      await Promise.resolve(); // the token is in `loading` before any of this runs
      try {
        const loaded = await loadCatalogIndexRows(this.db, catalog.id);
        if (!loaded) return undefined; // deleted meanwhile
        const index = await CatalogIndex.build(catalog.id, loaded.revision, loaded.rows);
        if (index.bytes > this.memoryBytes) {
          this.skipped.set(catalog.id, { revision: index.revision, at: Date.now(), tooLarge: true });
          return undefined;
        }
        const current = this.entries.get(catalog.id);
        if (!current || current.revision < index.revision) this.entries.set(catalog.id, index);
        this.skipped.delete(catalog.id);
        return index;
      } catch {
        // The search that started the read ranks in SQL, which reports a database failure itself.
        this.skipped.set(catalog.id, { revision: catalog.revision, at: Date.now(), tooLarge: false });
        return undefined;
      } finally {
        if (this.loading.get(catalog.id) === token) this.loading.delete(catalog.id);
      }
    })();
    this.loading.set(catalog.id, token);
    return token.done;
  }
}
