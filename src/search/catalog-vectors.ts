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
import { LruCache } from '../lru-cache.js';
import type { VectorRecipe } from '../store/embedding-store.js';
import { loadCatalogHashes, loadNamedHashes } from '../store/search-store.js';
import type { Executor } from '../store/tool-store.js';
import type { VectorCache } from '../store/vector-cache.js';

/** The largest catalog whose vectors are scanned in process (10,000 x 512 floats: 20 MB, ~5 ms a scan on a 2-core machine). */
export const VECTORS_IN_PROCESS_MAX = 10_000;
/** Bytes of vectors (and their names) the kept sets may hold together. */
export const CATALOG_VECTORS_MEMORY = 128 * 2 ** 20;

interface KeptVectors {
  revision: number;
  model: string;
  vectors: ReadonlyMap<string, Float32Array>;
  bytes: number;
}

export class CatalogVectorCache {
  private readonly entries: LruCache<number, KeptVectors>;
  private readonly loading = new Map<string, Promise<ReadonlyMap<string, Float32Array> | undefined>>();

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
    const kept = this.entries.get(catalog.id);
    return kept && kept.revision === catalog.revision && kept.model === model ? kept.vectors : undefined;
  }

  /**
   * The current vectors of some of a catalog's tools (a tag filter's, named by the catalog's index),
   * by name, read through the vectors kept by content hash (not kept as a set); undefined when one
   * of them is gone or lacks a current vector.
   */
  async named(db: Executor, catalogId: number, names: ReadonlySet<string>, recipe: VectorRecipe): Promise<ReadonlyMap<string, Float32Array> | undefined> {
    const hashes = await loadNamedHashes(db, catalogId, names);
    if (!hashes) return undefined;
    const { vectors, complete } = await this.vectorCache.load(db, recipe, [...hashes.values()]);
    return complete ? new Map([...hashes].map(([name, hash]) => [name, vectors.get(hash)!])) : undefined;
  }

  private async load(db: Executor, catalog: { id: number; revision: number }, recipe: VectorRecipe): Promise<ReadonlyMap<string, Float32Array> | undefined> {
    const read = await loadCatalogHashes(db, catalog.id);
    if (!read || read.revision !== catalog.revision) return undefined;
    const { vectors, complete } = await this.vectorCache.load(db, recipe, read.tools.map((tool) => tool.hash));
    if (!complete) return undefined;
    const byName = new Map<string, Float32Array>();
    let bytes = 0;
    for (const { name, hash } of read.tools) {
      const vector = vectors.get(hash)!;
      byName.set(name, vector);
      bytes += vector.byteLength + 2 * name.length + 64;
    }
    const current = this.entries.get(catalog.id);
    if (!current || current.revision <= catalog.revision) this.entries.set(catalog.id, { revision: catalog.revision, model: recipe.model, vectors: byName, bytes });
    return byName;
  }
}
