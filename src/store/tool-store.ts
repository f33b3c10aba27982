import { sql } from 'drizzle-orm';
import type { Tool } from '../catalog/tool.js';
import { queryRows, type Db } from './database.js';

export type Executor = Pick<Db, 'execute'>;

/** A normalized tool with what the store keeps for BM25: its content hash and exact term counts. */
export interface ToolDocument {
  hash: string;
  tool: Tool;
  termFreqs: Map<string, number>;
  length: number;
}

/**
 * Writes documents (and their BM25 terms) that are not stored yet, in two array-bound statements
 * whatever the count. Returns the hashes that were new. A document is immutable once written, so
 * concurrent writers of the same hash are harmless: the loser's insert does nothing.
 */
export async function insertDocuments(db: Executor, documents: ToolDocument[]): Promise<string[]> {
  const unique = [...new Map(documents.map((doc) => [doc.hash, doc])).values()];
  if (unique.length === 0) return [];
  const inserted = await queryRows<{ hash: string }>(
    db,
    sql`insert into tool_documents (hash, name, description, input_schema, tags, server, definition, doc_length)
        select d.hash, d.name, d.description, d.input_schema::json, array(select jsonb_array_elements_text(d.tags::jsonb)), d.server, d.definition::json, d.doc_length
        from unnest(
          ${sql.param(unique.map((doc) => doc.hash))}::text[],
          ${sql.param(unique.map((doc) => doc.tool.name))}::text[],
          ${sql.param(unique.map((doc) => doc.tool.description))}::text[],
          ${sql.param(unique.map((doc) => (doc.tool.inputSchema ? JSON.stringify(doc.tool.inputSchema) : null)))}::text[],
          ${sql.param(unique.map((doc) => JSON.stringify(doc.tool.tags)))}::text[],
          ${sql.param(unique.map((doc) => doc.tool.server))}::text[],
          ${sql.param(unique.map((doc) => JSON.stringify(doc.tool.definition)))}::text[],
          ${sql.param(unique.map((doc) => doc.length))}::int[]
        ) as d(hash, name, description, input_schema, tags, server, definition, doc_length)
        on conflict (hash) do nothing
        returning hash`,
  );
  const fresh = new Set(inserted.map((row) => row.hash));
  const hashes: string[] = [];
  const terms: string[] = [];
  const counts: number[] = [];
  for (const doc of unique) {
    if (!fresh.has(doc.hash)) continue;
    for (const [term, tf] of doc.termFreqs) {
      hashes.push(doc.hash);
      terms.push(term);
      counts.push(tf);
    }
  }
  if (hashes.length > 0) {
    await db.execute(
      sql`insert into tool_terms (hash, term, tf)
          select * from unnest(${sql.param(hashes)}::text[], ${sql.param(terms)}::text[], ${sql.param(counts)}::int[])`,
    );
  }
  return [...fresh];
}

export interface StoredDocument {
  hash: string;
  name: string;
  description: string;
  inputSchema: Record<string, unknown> | null;
  tags: string[];
  server: string | null;
  definition: unknown;
}

export async function loadDocuments(db: Executor, hashes: string[]): Promise<Map<string, StoredDocument>> {
  if (hashes.length === 0) return new Map();
  const rows = await queryRows<StoredDocument>(
    db,
    sql`select hash, name, description, input_schema as "inputSchema", tags, server, definition
        from tool_documents where hash = any(${sql.param(hashes)}::text[])`,
  );
  return new Map(rows.map((row) => [row.hash, row]));
}
