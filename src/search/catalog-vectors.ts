/**
 * A catalog's vectors in process, one set per catalog revision, for an exact scan.
 *
 * Without them, catalogs up to EXACT_SCAN_MAX tools are scanned exactly in SQL, and larger ones go
 * through the model's HNSW graph, which every catalog of the database shares: a search walks the
 * graph and keeps its catalog's candidates. Beside a 100,000-tool catalog that costs a 4,076-tool catalog
 * p50 33 / p90 81 ms (6 / 10 ms in a database of its own), and the exact scan in SQL 35 / 39.
 * In process, the scan of 10,000 vectors costs a few ms and is exact, as the smaller catalogs'.
 * Vectors come through the VectorCache (keyed by content hash, so a new revision reads only its
 * new tools' vectors); a revision's set is kept only once every tool has a current vector (until
 * then the search ranks in SQL and says embeddings_pending), and the sets are bounded in bytes.
 * A mid-size catalog's search waits for its set; a small one's reads it after ranking in SQL
 * (search/catalog-search.ts). Held sets also let the gateway selector answer from memory with the
 * hybrid ranking while the store is down.
 */
import { LruCache } from '../lib/lru-cache.js';
import type { VectorRecipe } from '../store/embedding-store.js';
import { loadCatalogHashes, loadNamedHashes } from '../store/search-store.js';
import type { Executor } from '../store/tool-store.js';
import type { VectorCache } from '../store/vector-cache.js';
import { serverCentroids, type ServerMembers } from '../ranking/servers.js';

/** The largest catalog whose vectors are scanned in process (10,000 x 512 floats: 20 MB, ~5 ms a scan on a 2-core machine). */
export const VECTORS_IN_PROCESS_MAX = 10_000;
/** Bytes of vectors (and their names) the kept sets may hold together. */
export const CATALOG_VECTORS_MEMORY = 128 * 2 ** 20;

interface KeptVectors {
  revision: number;
  model: string;
  vectors: ReadonlyMap<string, Float32Array>;
  bytes: number;
  /** A tag filter's set: its servers' means, once a search asked for them. */
  means?: ReadonlyMap<string, Float32Array>;
}

/** A tag filter's tools of a larger catalog, kept for its revision like a catalog's set. */
export interface TaggedVectors {
  vectors: ReadonlyMap<string, Float32Array>;
  /**
   * The unit-length means of the tagged tools' servers (ranking/servers.ts `serverCentroids`),
   * computed at the first call and kept with the set. `members` are those servers' tagged tools
   * (CatalogIndex.serversCarrying), the same for every query of a revision and tag set.
   */
  means(members: ServerMembers): ReadonlyMap<string, Float32Array>;
}

export class CatalogVectorCache {
  /** A catalog's set by its id; a tag filter's by its id and tags (`taggedKey`). */
  private readonly entries: LruCache<string, KeptVectors>;
  private readonly loading = new Map<string, Promise<ReadonlyMap<string, Float32Array> | undefined>>();
  private readonly loadingTagged = new Map<string, Promise<TaggedVectors | undefined>>();

  constructor(
    private readonly vectorCache: VectorCache,
    /** The bytes the kept sets may hold together (CATALOG_VECTORS_MEMORY). */
    readonly budget = CATALOG_VECTORS_MEMORY,
    /** The most tools whose vectors a search scans in process: a catalog's, or a tag filter's of a larger one (VECTORS_IN_PROCESS_MAX). */
    readonly maxTools = VECTORS_IN_PROCESS_MAX,
  ) {
    this.entries = new LruCache(Number.MAX_SAFE_INTEGER, { max: budget, weigh: (kept) => kept.bytes });
  }

  /**
   * The catalog's tools' current vectors by name at this revision, when every tool has one;
   * undefined when one is missing or stale, or the catalog has moved past this revision.
   */
  get(db: Executor, catalog: { id: number; revision: number }, recipe: VectorRecipe): Promise<ReadonlyMap<string, Float32Array> | undefined> {
    const kept = this.held(catalog, recipe.model);
    if (kept) return Promise.resolve(kept);
    // One read per catalog revision and model, however many searches ask at once.
    const key = `${catalog.id}\u0000${catalog.revision}\u0000${recipe.model}`;
    let pending = this.loading.get(key);
    if (!pending) {
      pending = this.load(db, catalog, recipe).finally(() => this.loading.delete(key));
      this.loading.set(key, pending);
    }
    return pending;
  }

  /** Bytes the kept sets hold now. */
  get bytes(): number {
    return this.entries.heldWeight;
  }

  /** The vectors kept for exactly this revision and model, without reading anything (the selector's answer from memory). */
  held(catalog: { id: number; revision: number }, model: string): ReadonlyMap<string, Float32Array> | undefined {
    const kept = this.entries.get(String(catalog.id));
    return kept && kept.revision === catalog.revision && kept.model === model ? kept.vectors : undefined;
  }

  /**
   * The current vectors of the tools of a catalog carrying one of `tags` (`names`, as the catalog's
   * index at this revision names them), by name, read through the vectors kept by content hash and
   * then kept for this revision and model in the same budget as catalogs' sets: a search under the
   * same tags reads nothing, and its servers' means are computed once. Undefined when one of the
   * names is gone or lacks a current vector.
   */
  tagged(
    db: Executor,
    catalog: { id: number; revision: number },
    tags: readonly string[],
    names: ReadonlySet<string>,
    recipe: VectorRecipe,
  ): Promise<TaggedVectors | undefined> {
    const key = taggedKey(catalog.id, tags);
    const kept = this.heldTaggedAt(key, catalog.revision, recipe.model);
    if (kept) return Promise.resolve(kept);
    const loadingKey = `${key}\u0000${catalog.revision}\u0000${recipe.model}`;
    let pending = this.loadingTagged.get(loadingKey);
    if (!pending) {
      pending = this.loadTagged(db, key, catalog, names, recipe).finally(() => this.loadingTagged.delete(loadingKey));
      this.loadingTagged.set(loadingKey, pending);
    }
    return pending;
  }

  /** A tag filter's set kept for exactly this revision and model, without reading anything (an answer from memory). */
  heldTagged(catalog: { id: number; revision: number }, tags: readonly string[], model: string): TaggedVectors | undefined {
    return this.heldTaggedAt(taggedKey(catalog.id, tags), catalog.revision, model);
  }

  private heldTaggedAt(key: string, revision: number, model: string): TaggedVectors | undefined {
    const kept = this.entries.get(key);
    return kept && kept.revision === revision && kept.model === model ? this.taggedView(key, kept) : undefined;
  }

  private async loadTagged(
    db: Executor,
    key: string,
    catalog: { id: number; revision: number },
    names: ReadonlySet<string>,
    recipe: VectorRecipe,
  ): Promise<TaggedVectors | undefined> {
    const hashes = await loadNamedHashes(db, catalog.id, names);
    if (!hashes) return undefined;
    const { vectors, complete } = await this.vectorCache.load(db, recipe, [...hashes.values()]);
    if (!complete) return undefined;
    const byName = new Map<string, Float32Array>();
    let bytes = 0;
    for (const [name, hash] of hashes) {
      const vector = vectors.get(hash)!;
      byName.set(name, vector);
      bytes += vector.byteLength + 2 * name.length + 64;
    }
    const kept: KeptVectors = { revision: catalog.revision, model: recipe.model, vectors: byName, bytes };
    const current = this.entries.get(key);
    if (!current || current.revision <= catalog.revision) this.entries.set(key, kept);
    return this.taggedView(key, kept);
  }

  private taggedView(key: string, kept: KeptVectors): TaggedVectors {
    return {
      vectors: kept.vectors,
      means: (members) => {
        const now = this.entries.get(key);
        if (now?.means && now.vectors === kept.vectors) return now.means;
        const means = serverCentroids(members, kept.vectors);
        let bytes = 0;
        for (const [server, mean] of means) bytes += mean.byteLength + 2 * server.length + 64;
        // A new entry, not the old one changed: the cache weighs an entry again when it lets it go.
        if (now?.vectors === kept.vectors) this.entries.set(key, { ...now, means, bytes: now.bytes + bytes });
        return means;
      },
    };
  }

  private async load(db: Executor, catalog: { id: number; revision: number }, recipe: VectorRecipe): Promise<ReadonlyMap<string, Float32Array> | undefined> {
    const read = await loadCatalogHashes(db, catalog.id);
    if (!read || read.revision !== catalog.revision) return undefined;
    const { vectors, complete } = await this.vectorCache.load(
      db,
      recipe,
      read.tools.map((tool) => tool.hash),
    );
    if (!complete) return undefined;
    const byName = new Map<string, Float32Array>();
    let bytes = 0;
    for (const { name, hash } of read.tools) {
      const vector = vectors.get(hash)!;
      byName.set(name, vector);
      bytes += vector.byteLength + 2 * name.length + 64;
    }
    const current = this.entries.get(String(catalog.id));
    if (!current || current.revision <= catalog.revision)
      this.entries.set(String(catalog.id), { revision: catalog.revision, model: recipe.model, vectors: byName, bytes });
    return byName;
  }
}

/** A tag filter's key: its catalog and its tags as matched (lower-cased, each once, sorted). */
function taggedKey(catalogId: number, tags: readonly string[]): string {
  return `${catalogId}\u0001${[...new Set(tags.map((tag) => tag.toLowerCase()))].sort().join('\u0000')}`;
}
