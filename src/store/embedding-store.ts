import { sql, type SQL } from 'drizzle-orm';
import { changesSince, changesTold } from './catalog-store.js';
import { queryRows, sendsBinaryParameters } from './database.js';
import { vectorBinary, vectorLiteral } from './vector-literal.js';
import { yieldToOtherRequests } from '../lib/time-slice.js';
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

/**
 * The text version of `hash`'s vector for the recipe's model, or null: one probe of the (hash, model)
 * primary key per row, which can return at most one row.
 *
 * Written as a scalar subquery on purpose. Postgres turns an EXISTS or a LEFT JOIN into a join that
 * it plans from table statistics, and right after a catalog's first ingestion those are missing
 * (autovacuum has not analyzed the new rows): it then guessed one row for tool_embeddings and chose
 * a nested loop over a full scan per catalog tool. The progress query took 200-470 ms for 4,076
 * tools while the embedding queue filled the table (each poll of GET /v1/catalogs/{name} and of
 * `npm run ingest`), against 5 ms as this probe; with fresh statistics the join took 2 ms.
 */
const vectorTextVersion = (hash: SQL, recipe: VectorRecipe) =>
  sql`(select e.text_version from tool_embeddings e where e.hash = ${hash} and e.model = ${recipe.model})`;

/** Has a current vector for `recipe`. */
const currentVector = (hash: SQL, recipe: VectorRecipe) => sql`${vectorTextVersion(hash, recipe)} = ${recipe.textVersion}::int`;

/** Lacks a current vector for `recipe`: none for the model, or one of an older text recipe. */
const noCurrentVector = (hash: SQL, recipe: VectorRecipe) => sql`${vectorTextVersion(hash, recipe)} is distinct from ${recipe.textVersion}::int`;

/**
 * The statements that ask which vectors exist, built apart from running them so a test can check
 * their plans (each must probe the primary key, whatever the statistics say).
 */
export const vectorStatusSql = {
  /** Of `hashes`, those with no current vector (every such stored document when omitted). */
  missing: (recipe: VectorRecipe, hashes: string[] | undefined, limit: number) =>
    sql`select d.hash from tool_documents d
        where ${hashes ? sql`d.hash = any(${sql.param(hashes)}::text[]) and` : sql``}
          ${noCurrentVector(sql`d.hash`, recipe)}
        order by d.hash
        limit ${limit}`,
  /** A catalog's tool count and how many of them have a current vector. */
  catalogProgress: (catalogId: number, recipe: VectorRecipe) =>
    sql`select count(*)::int as total,
               (count(*) filter (where ${currentVector(sql`ct.hash`, recipe)}))::int as done
        from catalog_tools ct
        where ct.catalog_id = ${catalogId}`,
  /**
   * The catalog's tool count now, and of the names its revisions after `from` changed (at most
   * `maxNames` + 1 of them), how many now lack a current vector; with what the log holds of those
   * revisions (`logged` rows, `unknown` of them logged as every tool: a replace of more than 20,000 names).
   */
  catalogProgressSince: (catalogId: number, from: number, recipe: VectorRecipe, maxNames: number) => {
    const log = changesSince(catalogId, from, maxNames);
    return sql`with ${log.ctes}
        select ${log.columns}, c.tool_count::int as total,
               (select count(*) from changed ch join catalog_tools ct on ct.catalog_id = c.id and ct.name = ch.name
                 where ${noCurrentVector(sql`ct.hash`, recipe)})::int as missing
        from c`;
  },
  /** A catalog's hashes with no current vector. */
  catalogMissing: (catalogId: number, recipe: VectorRecipe) =>
    sql`select ct.hash from catalog_tools ct
        where ct.catalog_id = ${catalogId} and ${noCurrentVector(sql`ct.hash`, recipe)}`,
};

/** Of `hashes`, those with no current vector yet (all such stored documents when `hashes` is omitted). */
export async function hashesWithoutVector(db: Executor, recipe: VectorRecipe, hashes?: string[], limit = 100_000): Promise<string[]> {
  const rows = await queryRows<{ hash: string }>(db, vectorStatusSql.missing(recipe, hashes, limit));
  return rows.map((row) => row.hash);
}

/** The fields the embedding text is built from (search-text.ts `embeddingText`), not the definition. */
export type DocumentToEmbed = Omit<StoredDocument, 'definition'>;

export async function documentsForEmbedding(db: Executor, hashes: string[]): Promise<DocumentToEmbed[]> {
  if (hashes.length === 0) return [];
  return queryRows<DocumentToEmbed>(
    db,
    sql`select hash, name, description, input_schema as "inputSchema", tags, server
        from tool_documents where hash = any(${sql.param(hashes)}::text[]) order by hash`,
  );
}

/**
 * Vectors a statement writes. PGlite inserts into the HNSW index ~5 ms a vector, one statement at a
 * time: a batch of 32 in one statement held every other request ~180 ms when PGlite ran on the event
 * loop's thread (`npm run bench -- --stalls`); on its own thread a request's statement still waits
 * for the one running. Smaller statements keep each wait short.
 */
const VECTORS_PER_STATEMENT = 8;

/**
 * Upserted by (hash, model), VECTORS_PER_STATEMENT at a time: a retried batch overwrites, never
 * duplicates (each vector stands alone, so a batch cut short is simply written again), and a
 * vector of an older text recipe is replaced in place. `textHash` identifies the text the vector
 * was computed from (see `relabelUnchangedVectors`).
 */
export async function writeVectors(db: Executor, recipe: VectorRecipe, vectors: { hash: string; vector: number[]; textHash?: string }[]): Promise<void> {
  for (let start = 0; start < vectors.length; start += VECTORS_PER_STATEMENT) {
    if (start > 0) await yieldToOtherRequests();
    await writeVectorStatement(db, recipe, vectors.slice(start, start + VECTORS_PER_STATEMENT));
  }
}

async function writeVectorStatement(db: Executor, recipe: VectorRecipe, vectors: { hash: string; vector: number[]; textHash?: string }[]): Promise<void> {
  // One row of parameters per vector: on PostgreSQL the vector goes as binary (vectorBinary), else
  // as its text literal. (A text[] of literals, as before, made node-postgres escape ~7 KB a vector.)
  const binary = sendsBinaryParameters(db);
  const rows = vectors.map(
    (item) =>
      sql`(${item.hash}::text, ${item.vector.length}::int, ${binary ? vectorBinary(item.vector) : vectorLiteral(item.vector)}::vector, ${item.textHash ?? null}::text)`,
  );
  await db.execute(
    sql`insert into tool_embeddings (hash, model, dimension, embedding, text_version, text_hash)
        select v.hash, ${recipe.model}, v.dimension, v.embedding, ${recipe.textVersion}::int, v.text_hash
        from (values ${sql.join(rows, sql`, `)}) as v(hash, dimension, embedding, text_hash)
        on conflict (hash, model) do update
          set embedding = excluded.embedding, dimension = excluded.dimension, text_version = excluded.text_version,
              text_hash = excluded.text_hash, created_at = now()`,
  );
}

/**
 * Vectors of an older text recipe whose text the current recipe leaves unchanged (same text hash)
 * are current as they are: stamps them with the recipe's version, in one statement, and returns
 * their hashes. The rest still need the model.
 */
export async function relabelUnchangedVectors(db: Executor, recipe: VectorRecipe, texts: { hash: string; textHash: string }[]): Promise<string[]> {
  if (texts.length === 0) return [];
  const rows = await queryRows<{ hash: string }>(
    db,
    sql`update tool_embeddings e set text_version = ${recipe.textVersion}::int
        from unnest(${sql.param(texts.map((item) => item.hash))}::text[], ${sql.param(texts.map((item) => item.textHash))}::text[]) as t(hash, text_hash)
        where e.hash = t.hash and e.model = ${recipe.model} and e.text_hash = t.text_hash and e.text_version <> ${recipe.textVersion}::int
        returning e.hash`,
  );
  return rows.map((row) => row.hash);
}

export interface EmbeddingProgress {
  total: number;
  done: number;
}

/** How many of a catalog's tools have a current vector. */
export async function catalogEmbeddingProgress(db: Executor, catalogId: number, recipe: VectorRecipe): Promise<EmbeddingProgress> {
  const rows = await queryRows<EmbeddingProgress>(db, vectorStatusSql.catalogProgress(catalogId, recipe));
  return rows[0] ?? { total: 0, done: 0 };
}

/**
 * How many of a catalog's tools have a current vector, told from revision `from`, at which every
 * tool had one: only the names changed since are probed, so the cost follows the change, not the
 * catalog (a tool left alone keeps its vector: a catalog's documents are never deleted, and a
 * vector is replaced only by a newer recipe's). Undefined when the log cannot tell (a revision no
 * longer logged, a replace of more than 20,000 names) or more than `maxNames` names changed; null when the
 * catalog is gone.
 */
export async function catalogEmbeddingProgressSince(
  db: Executor,
  catalogId: number,
  from: number,
  recipe: VectorRecipe,
  maxNames: number,
): Promise<EmbeddingProgress | null | undefined> {
  const rows = await queryRows<{ revision: number; total: number; logged: number; unknown: number; changed: number; missing: number }>(
    db,
    vectorStatusSql.catalogProgressSince(catalogId, from, recipe, maxNames),
  );
  const row = rows[0];
  if (!row) return null;
  if (!changesTold(row, from, maxNames)) return undefined;
  return { total: Number(row.total), done: Number(row.total) - Number(row.missing) };
}

/** A catalog's hashes with no current vector. */
export async function catalogHashesWithoutVector(db: Executor, catalogId: number, recipe: VectorRecipe): Promise<string[]> {
  const rows = await queryRows<{ hash: string }>(db, vectorStatusSql.catalogMissing(catalogId, recipe));
  return rows.map((row) => row.hash);
}
