import { sql } from 'drizzle-orm';
import { LruCache } from '../lib/lru-cache.js';
import { queryRows, sendsBinaryParameters } from './database.js';
import type { VectorRecipe } from './embedding-store.js';
import type { Executor } from './tool-store.js';
import { vectorColumn, vectorRead } from './vector-literal.js';

export interface LoadedVectors {
  /** Every stored vector of the model among the hashes asked for, current or from an older text recipe. */
  vectors: Map<string, Float32Array>;
  /** Every hash asked for has a current vector: nothing about these hashes will change. */
  complete: boolean;
}

/**
 * Vectors of recently ranked request tools, read from pgvector once and then kept in process.
 * A current vector never changes for a (hash, model), so the cache needs no invalidation, not even
 * when the sweep removes its document (document-gc.ts): that content stored again is embedded to
 * the same vector, and meanwhile the one held here is the right one to rank it by. Tools
 * without a vector yet, or with one from an older embedding text recipe (about to be replaced),
 * are not cached: they are asked for again next time.
 */
export class VectorCache {
  private readonly vectors: LruCache<string, Float32Array>;

  constructor(capacity = 50_000) {
    this.vectors = new LruCache(capacity);
  }

  async load(db: Executor, recipe: VectorRecipe, hashes: string[]): Promise<LoadedVectors> {
    const vectors = new Map<string, Float32Array>();
    const missing: string[] = [];
    for (const hash of new Set(hashes)) {
      const vector = this.vectors.get(`${recipe.model}\u0000${hash}`);
      if (vector) vectors.set(hash, vector);
      else missing.push(hash);
    }
    let complete = true;
    if (missing.length > 0) {
      const rows = await queryRows<{ hash: string; embedding: Uint8Array | string; text_version: number }>(
        db,
        sql`select e.hash, ${vectorColumn(sql`e.embedding`, sendsBinaryParameters(db))} as embedding, e.text_version
            from unnest(${sql.param(missing)}::text[]) as h(hash) join tool_embeddings e on e.hash = h.hash and e.model = ${recipe.model}`,
      );
      complete = rows.length === missing.length;
      for (const row of rows) {
        const vector = vectorRead(row.embedding);
        if (Number(row.text_version) === recipe.textVersion) this.vectors.set(`${recipe.model}\u0000${row.hash}`, vector);
        else complete = false;
        vectors.set(row.hash, vector);
      }
    }
    return { vectors, complete };
  }
}
