import { sql, type SQL } from 'drizzle-orm';
import { queryRows } from './database.js';
import { vectorLiteral } from './vector-literal.js';
import type { Executor, StoredDocument } from './tool-store.js';

/**
 * Which vectors are current: the active model's, computed from the current embedding text recipe
 * (search-text.ts EMBED_TEXT_VERSION). A vector of an older recipe still serves search, but counts
 * as missing here, so it is embedded again and replaced.
 */
export interface VectorRecipe {
  model: string;
  textVersion: number;
}

/** Has a current vector for `recipe` (SQL over `tool_embeddings e` joined on the document's hash). */
const currentVector = (hash: SQL, recipe: VectorRecipe) =>
  sql`exists (select 1 from tool_embeddings e where e.hash = ${hash} and e.model = ${recipe.model} and e.text_version = ${recipe.textVersion})`;

/** Of `hashes`, those with no current vector yet (all such stored documents when `hashes` is omitted). */
export async function hashesWithoutVector(db: Executor, recipe: VectorRecipe, hashes?: string[], limit = 100_000): Promise<string[]> {
  const rows = await queryRows<{ hash: string }>(
    db,
    sql`select d.hash from tool_documents d
        where ${hashes ? sql`d.hash = any(${sql.param(hashes)}::text[]) and` : sql``}
          not ${currentVector(sql`d.hash`, recipe)}
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

/**
 * One statement per batch, upserted by (hash, model): a retried batch overwrites, never duplicates,
 * and a vector of an older text recipe is replaced in place.
 */
export async function writeVectors(db: Executor, recipe: VectorRecipe, vectors: { hash: string; vector: number[] }[]): Promise<void> {
  if (vectors.length === 0) return;
  await db.execute(
    sql`insert into tool_embeddings (hash, model, dimension, embedding, text_version)
        select v.hash, ${recipe.model}, v.dimension, v.embedding::vector, ${recipe.textVersion}::int
        from unnest(
          ${sql.param(vectors.map((item) => item.hash))}::text[],
          ${sql.param(vectors.map((item) => item.vector.length))}::int[],
          ${sql.param(vectors.map((item) => vectorLiteral(item.vector)))}::text[]
        ) as v(hash, dimension, embedding)
        on conflict (hash, model) do update
          set embedding = excluded.embedding, dimension = excluded.dimension, text_version = excluded.text_version, created_at = now()`,
  );
}

export interface EmbeddingProgress {
  total: number;
  done: number;
}

/** How many of a catalog's tools have a current vector. */
export async function catalogEmbeddingProgress(db: Executor, catalogId: number, recipe: VectorRecipe): Promise<EmbeddingProgress> {
  const rows = await queryRows<EmbeddingProgress>(
    db,
    sql`select count(*)::int as total,
               count(e.hash)::int as done
        from catalog_tools ct
        left join tool_embeddings e on e.hash = ct.hash and e.model = ${recipe.model} and e.text_version = ${recipe.textVersion}
        where ct.catalog_id = ${catalogId}`,
  );
  return rows[0] ?? { total: 0, done: 0 };
}

/** A catalog's hashes with no current vector. */
export async function catalogHashesWithoutVector(db: Executor, catalogId: number, recipe: VectorRecipe): Promise<string[]> {
  const rows = await queryRows<{ hash: string }>(
    db,
    sql`select ct.hash from catalog_tools ct
        where ct.catalog_id = ${catalogId} and not ${currentVector(sql`ct.hash`, recipe)}`,
  );
  return rows.map((row) => row.hash);
}
