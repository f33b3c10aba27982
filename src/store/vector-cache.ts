import { sql } from 'drizzle-orm';
import { LruCache } from '../lru-cache.js';
import { queryRows } from './database.js';
import type { Executor } from './tool-store.js';

/**
 * Vectors of recently ranked request tools, read from pgvector once and then kept in process.
 * A vector never changes for a (hash, model), so the cache needs no invalidation; tools without a
 * vector yet are asked for again next time (their embedding may have landed).
 */
export class VectorCache {
  private readonly vectors: LruCache<string, Float32Array>;

  constructor(capacity = 50_000) {
    this.vectors = new LruCache(capacity);
  }

  async load(db: Executor, model: string, hashes: string[]): Promise<Map<string, Float32Array>> {
    const found = new Map<string, Float32Array>();
    const missing: string[] = [];
    for (const hash of hashes) {
      const vector = this.vectors.get(`${model}\u0000${hash}`);
      if (vector) found.set(hash, vector);
      else missing.push(hash);
    }
    if (missing.length > 0) {
      const rows = await queryRows<{ hash: string; embedding: string }>(
        db,
        sql`select e.hash, e.embedding::text as embedding
            from unnest(${sql.param(missing)}::text[]) as h(hash) join tool_embeddings e on e.hash = h.hash and e.model = ${model}`,
      );
      for (const row of rows) {
        const vector = Float32Array.from(JSON.parse(row.embedding) as number[]);
        this.vectors.set(`${model}\u0000${row.hash}`, vector);
        found.set(row.hash, vector);
      }
    }
    return found;
  }
}
