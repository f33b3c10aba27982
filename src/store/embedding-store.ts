import { sql } from 'drizzle-orm';
import { queryRows } from './database.js';
import { vectorLiteral } from './vector-literal.js';
import type { Executor, StoredDocument } from './tool-store.js';

/** Of `hashes`, those with no vector for `model` yet (all missing ones when `hashes` is omitted). */
export async function hashesWithoutVector(db: Executor, model: string, hashes?: string[], limit = 100_000): Promise<string[]> {
  const rows = await queryRows<{ hash: string }>(
    db,
    sql`select d.hash from tool_documents d
        where ${hashes ? sql`d.hash = any(${sql.param(hashes)}::text[]) and` : sql``}
          not exists (select 1 from tool_embeddings e where e.hash = d.hash and e.model = ${model})
        order by d.hash
        limit ${limit}`,
  );
  return rows.map((row) => row.hash);
}

export async function documentsForEmbedding(db: Executor, hashes: string[]): Promise<StoredDocument[]> {
  if (hashes.length === 0) return [];
  return queryRows<StoredDocument>(
    db,
    sql`select hash, name, description, input_schema as "inputSchema", tags, server, definition
        from tool_documents where hash = any(${sql.param(hashes)}::text[]) order by hash`,
  );
}

/** One statement per batch, upserted by (hash, model): a retried batch overwrites, never duplicates. */
export async function writeVectors(db: Executor, model: string, vectors: { hash: string; vector: number[] }[]): Promise<void> {
  if (vectors.length === 0) return;
  await db.execute(
    sql`insert into tool_embeddings (hash, model, dimension, embedding)
        select v.hash, ${model}, v.dimension, v.embedding::vector
        from unnest(
          ${sql.param(vectors.map((item) => item.hash))}::text[],
          ${sql.param(vectors.map((item) => item.vector.length))}::int[],
          ${sql.param(vectors.map((item) => vectorLiteral(item.vector)))}::text[]
        ) as v(hash, dimension, embedding)
        on conflict (hash, model) do update set embedding = excluded.embedding, dimension = excluded.dimension, created_at = now()`,
  );
}

export interface EmbeddingProgress {
  total: number;
  done: number;
}

/** How many of a catalog's tools have a vector for `model`. */
export async function catalogEmbeddingProgress(db: Executor, catalogId: number, model: string): Promise<EmbeddingProgress> {
  const rows = await queryRows<EmbeddingProgress>(
    db,
    sql`select count(*)::int as total,
               count(e.hash)::int as done
        from catalog_tools ct
        left join tool_embeddings e on e.hash = ct.hash and e.model = ${model}
        where ct.catalog_id = ${catalogId}`,
  );
  return rows[0] ?? { total: 0, done: 0 };
}

/** A catalog's hashes with no vector for `model`. */
export async function catalogHashesWithoutVector(db: Executor, catalogId: number, model: string): Promise<string[]> {
  const rows = await queryRows<{ hash: string }>(
    db,
    sql`select ct.hash from catalog_tools ct
        where ct.catalog_id = ${catalogId}
          and not exists (select 1 from tool_embeddings e where e.hash = ct.hash and e.model = ${model})`,
  );
  return rows.map((row) => row.hash);
}
