import { sql } from 'drizzle-orm';
import type { DefinitionTokens, Tool } from '../lib/tool.js';
import { Slots } from '../lib/slots.js';
import { yieldToOtherRequests } from '../lib/time-slice.js';
import { queryRows, type Db } from './database.js';

export type Executor = Pick<Db, 'execute'>;

/** A normalized tool with what the store keeps for BM25: its content hash and exact term counts. */
export interface ToolDocument {
  hash: string;
  tool: Tool;
  termFreqs: Map<string, number>;
  length: number;
  /** The recipe version the terms were computed with (search-text.ts TERMS_VERSION). */
  termsVersion: number;
}

/** A document with its definition's estimated tokens (catalog/tokens.ts): what is stored. */
export interface CountedDocument extends ToolDocument {
  tokens: DefinitionTokens;
}

export interface DocumentTerms {
  termFreqs: Map<string, number>;
  length: number;
}

/** One document a hash (the last given): term rows are written once a document. */
function uniqueByHash<T extends { hash: string }>(documents: T[]): T[] {
  return [...new Map(documents.map((doc) => [doc.hash, doc])).values()];
}

/** Term rows for many documents as three parallel arrays, for one unnest-bound insert. */
function termColumns(documents: { hash: string; termFreqs: Map<string, number> }[]) {
  const hashes: string[] = [];
  const terms: string[] = [];
  const counts: number[] = [];
  for (const doc of documents) {
    for (const [term, tf] of doc.termFreqs) {
      hashes.push(doc.hash);
      terms.push(term);
      counts.push(tf);
    }
  }
  return { hashes, terms, counts };
}

async function insertTerms(db: Executor, documents: { hash: string; termFreqs: Map<string, number> }[]): Promise<void> {
  const { hashes, terms, counts } = termColumns(documents);
  if (hashes.length === 0) return;
  await db.execute(
    sql`insert into tool_terms (hash, term, tf)
        select * from unnest(${sql.param(hashes)}::text[], ${sql.param(terms)}::text[], ${sql.param(counts)}::int[])`,
  );
}

/**
 * `terms_version` of a document stored without its BM25 terms: a selector request's never-seen
 * tool, which the selector ranks in process from terms it computed itself. A catalog that first
 * includes such a document writes its terms (insertDocuments), so catalogs, whose BM25 reads
 * `tool_terms`, never see a document without them. Recipe versions are positive.
 */
export const NO_TERMS = -1;

/**
 * Writes documents that are not stored yet, in array-bound statements whatever the count, with
 * their BM25 terms unless `withTerms` is false (then stamped NO_TERMS). With terms, documents
 * stored earlier without them get theirs too. Returns the hashes that were new. A document is
 * immutable once written, so concurrent writers of the same hash are harmless: the loser's insert
 * does nothing, and of two writers completing the same terms-less document the second finds it done.
 */
export async function insertDocuments(db: Executor, documents: CountedDocument[], { withTerms = true }: { withTerms?: boolean } = {}): Promise<string[]> {
  // Hash order: concurrent writers of overlapping documents take their row locks in one order.
  const unique = uniqueByHash(documents).sort((a, b) => (a.hash < b.hash ? -1 : a.hash > b.hash ? 1 : 0));
  if (unique.length === 0) return [];
  const inserted = await queryRows<{ hash: string }>(
    db,
    sql`insert into tool_documents (hash, name, description, input_schema, tags, server, definition, doc_length, terms_version, tokens_anthropic, tokens_openai)
        select d.hash, d.name, d.description, d.input_schema::json, array(select jsonb_array_elements_text(d.tags::jsonb)), d.server, d.definition::json, d.doc_length, d.terms_version,
               d.tokens_anthropic, d.tokens_openai
        from unnest(
          ${sql.param(unique.map((doc) => doc.hash))}::text[],
          ${sql.param(unique.map((doc) => doc.tool.name))}::text[],
          ${sql.param(unique.map((doc) => doc.tool.description))}::text[],
          ${sql.param(unique.map((doc) => (doc.tool.inputSchema ? JSON.stringify(doc.tool.inputSchema) : null)))}::text[],
          ${sql.param(unique.map((doc) => JSON.stringify(doc.tool.tags)))}::text[],
          ${sql.param(unique.map((doc) => doc.tool.server))}::text[],
          ${sql.param(unique.map((doc) => JSON.stringify(doc.tool.definition)))}::text[],
          ${sql.param(unique.map((doc) => doc.length))}::int[],
          ${sql.param(unique.map((doc) => (withTerms ? doc.termsVersion : NO_TERMS)))}::int[],
          ${sql.param(unique.map((doc) => doc.tokens.anthropic))}::int[],
          ${sql.param(unique.map((doc) => doc.tokens.openai))}::int[]
        ) as d(hash, name, description, input_schema, tags, server, definition, doc_length, terms_version, tokens_anthropic, tokens_openai)
        on conflict (hash) do nothing
        returning hash`,
  );
  const fresh = new Set(inserted.map((row) => row.hash));
  if (!withTerms) return [...fresh];
  const stored = unique.filter((doc) => !fresh.has(doc.hash));
  const completed = stored.length === 0 ? [] : await completeTerms(db, stored);
  const needTerms = new Set([...fresh, ...completed]);
  await insertTerms(
    db,
    unique.filter((doc) => needTerms.has(doc.hash)),
  );
  return [...fresh];
}

/**
 * Of documents already stored, the ones stored without terms (NO_TERMS), stamped with the terms'
 * recipe version here; the caller then writes their terms in the same transaction. Locks them in
 * hash order, like the insert; a concurrent writer completing the same ones waits, then finds none.
 */
async function completeTerms(db: Executor, documents: CountedDocument[]): Promise<string[]> {
  const rows = await queryRows<{ hash: string }>(
    db,
    sql`with termless as (
          select hash from tool_documents
          where hash = any(${sql.param(documents.map((doc) => doc.hash))}::text[]) and terms_version = ${NO_TERMS}::int
          order by hash for update
        )
        update tool_documents d set terms_version = v.terms_version
        from termless join unnest(${sql.param(documents.map((doc) => doc.hash))}::text[], ${sql.param(documents.map((doc) => doc.termsVersion))}::int[]) as v(hash, terms_version)
          on v.hash = termless.hash
        where d.hash = termless.hash
        returning d.hash`,
  );
  return rows.map((row) => row.hash);
}

/**
 * Documents per transaction in storeDocuments, by store. PGlite runs one statement at a time: one
 * statement for 10,000 tools (~200,000 term rows) froze every other request for ~15 s when it ran on
 * the event loop's thread, and on its own thread every other statement waits for a transaction to
 * end; slices of 48 keep each wait near 100 ms or less (`npm run bench -- --stalls`). PostgreSQL runs
 * them side by side, so its slices are only bounded to keep statements and transactions modest.
 */
export const STORE_SLICE = { pglite: 48, postgres: 1_000 } as const;

/**
 * Documents per statement when the selector stores a request's never-seen tools, after its answer.
 * A statement's parameters are built in one piece on the HTTP thread (the documents' JSON and the
 * array literals): at PostgreSQL's 1,000 that is megabytes of strings, past V8's young generation,
 * and collecting them held other requests during a 10,000-tool call. Nothing but the list's next
 * turn waits for these writes, so they go in smaller statements.
 */
export const SELECTOR_STORE_SLICE = { pglite: STORE_SLICE.pglite, postgres: 200 } as const;

/**
 * Slices stored at once by a large write. PGlite has one connection; on PostgreSQL two backends
 * insert terms side by side (index maintenance on PostgreSQL's side was ~80% of a 5,000-tool
 * push: 2.7 of 3.3 s).
 */
export const STORE_CONCURRENCY = { pglite: 1, postgres: 2 } as const;

/**
 * insertDocuments in transactions of `sliceSize` documents (STORE_SLICE of the store), in hash order, yielding to other
 * requests between slices, `concurrency` transactions at a time (STORE_CONCURRENCY). Each slice is atomic (a document is
 * stored with its terms, or as NO_TERMS when `withTerms` is false);
 * documents are immutable and content-addressed, so a write that fails halfway leaves only whole,
 * correct documents, which a retry finds stored. Returns the hashes that were new.
 */
export async function storeDocuments(
  db: Db,
  documents: CountedDocument[],
  sliceSize: number = STORE_SLICE.postgres,
  concurrency = 1,
  options: { withTerms?: boolean } = {},
): Promise<string[]> {
  const ordered = [...documents].sort((a, b) => (a.hash < b.hash ? -1 : a.hash > b.hash ? 1 : 0));
  const slices: CountedDocument[][] = [];
  for (let start = 0; start < ordered.length; start += sliceSize) slices.push(ordered.slice(start, start + sliceSize));
  // Each transaction locks its own contiguous range of hashes in order, so concurrent slices (and
  // other writers, which lock in hash order too) cannot deadlock.
  const slots = new Slots(Math.max(1, concurrency));
  const fresh = await Promise.all(
    slices.map((slice, at) =>
      slots.run(async () => {
        if (at > 0) await yieldToOtherRequests();
        // Without terms a slice is one statement, atomic by itself; a transaction would only add
        // two round trips, and on PGlite's thread every other statement waits for all three.
        return options.withTerms === false ? insertDocuments(db, slice, options) : db.transaction((tx) => insertDocuments(tx, slice, options));
      }),
    ),
  );
  return fresh.flat();
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

/**
 * Up to `limit` documents whose terms were computed by an older recipe version, or that a catalog
 * includes but that were stored without terms (a catalog written by a release before NO_TERMS,
 * which does not complete them). Documents only selector requests sent keep having none. Terms of
 * a newer recipe (a later release sharing the store) are never rewritten to an older one.
 */
export async function documentsWithStaleTerms(db: Executor, termsVersion: number, limit: number, after?: string): Promise<StoredDocument[]> {
  // Past `after` (the last hash of the previous page): each page walks the key onward instead of
  // scanning the table from its start (100,000 documents refreshed at 855 a second that way, each
  // page slower than the last).
  return queryRows<StoredDocument>(
    db,
    sql`select hash, name, description, input_schema as "inputSchema", tags, server, definition
        from tool_documents d
        where ((d.terms_version < ${termsVersion} and d.terms_version <> ${NO_TERMS})
           or (d.terms_version = ${NO_TERMS} and exists (select 1 from catalog_tools ct where ct.hash = d.hash)))
          ${after === undefined ? sql`` : sql`and d.hash > ${after}`}
        order by hash limit ${limit}`,
  );
}

/**
 * Documents whose terms are of another recipe than `termsVersion`, stamped with an older one (or
 * held by a catalog without terms, as `documentsWithStaleTerms` finds them) or a newer one: what
 * the store's BM25 lists would mix (one pass over the documents).
 */
export async function termsRecipeCounts(db: Executor, termsVersion: number): Promise<{ older: number; newer: number }> {
  const [row] = await queryRows<{ older: number; newer: number }>(
    db,
    sql`select count(*) filter (where (d.terms_version < ${termsVersion} and d.terms_version <> ${NO_TERMS})
                                   or (d.terms_version = ${NO_TERMS} and exists (select 1 from catalog_tools ct where ct.hash = d.hash)))::int as older,
               count(*) filter (where d.terms_version > ${termsVersion})::int as newer
        from tool_documents d`,
  );
  return { older: Number(row?.older ?? 0), newer: Number(row?.newer ?? 0) };
}

/** Replaces the terms (and length) of documents of an older recipe in one transaction, stamped with the recipe version. */
export async function replaceTerms(db: Db, documents: (DocumentTerms & { hash: string })[], termsVersion: number): Promise<void> {
  if (documents.length === 0) return;
  await db.transaction(async (tx) => {
    // Row locks serialize replicas refreshing at once; the loser re-reads and finds nothing stale.
    const stale = await queryRows<{ hash: string }>(
      tx,
      sql`select hash from tool_documents
          where hash = any(${sql.param(documents.map((doc) => doc.hash))}::text[]) and terms_version < ${termsVersion}::int
          for update`,
    );
    const pending = new Set(stale.map((row) => row.hash));
    // One set of rows a document: tool_terms has no key that would refuse a second (migrations/0013).
    documents = uniqueByHash(documents).filter((doc) => pending.has(doc.hash));
    if (documents.length === 0) return;
    const hashes = documents.map((doc) => doc.hash);
    await tx.execute(sql`delete from tool_terms where hash = any(${sql.param(hashes)}::text[])`);
    await insertTerms(tx, documents);
    await tx.execute(
      sql`update tool_documents d set doc_length = v.doc_length, terms_version = ${termsVersion}::int
          from unnest(${sql.param(hashes)}::text[], ${sql.param(documents.map((doc) => doc.length))}::int[]) as v(hash, doc_length)
          where d.hash = v.hash`,
    );
  });
}

/** Documents stored before their definition tokens were counted (by an older release), in hash order. */
export async function documentsWithoutTokens(db: Executor, limit: number): Promise<StoredDocument[]> {
  return queryRows<StoredDocument>(
    db,
    sql`select hash, name, description, input_schema as "inputSchema", tags, server, definition
        from tool_documents where tokens_anthropic is null or tokens_openai is null order by hash limit ${limit}`,
  );
}

export async function setDocumentTokens(db: Executor, counts: { hash: string; anthropic: number; openai: number }[]): Promise<void> {
  if (counts.length === 0) return;
  await db.execute(
    sql`update tool_documents d set tokens_anthropic = v.anthropic, tokens_openai = v.openai
        from unnest(${sql.param(counts.map((row) => row.hash))}::text[], ${sql.param(counts.map((row) => row.anthropic))}::int[],
                    ${sql.param(counts.map((row) => row.openai))}::int[]) as v(hash, anthropic, openai)
        where d.hash = v.hash`,
  );
}
