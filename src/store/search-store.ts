import { sql, type SQL } from 'drizzle-orm';
import { BM25_B, BM25_K1, BM25_TERM_UNIT } from '../ranking/bm25.js';
import { queryRows, sendsBinaryParameters, type Db } from './database.js';
import { vectorColumn, vectorLiteral, vectorRead } from './vector-literal.js';
import { changesSince, changesTold, type CatalogToolRow } from './catalog-store.js';
import type { VectorRecipe } from './embedding-store.js';
import { NO_TERMS, type CountedDocument, type Executor } from './tool-store.js';
import { documentTerms, TERMS_VERSION } from '../ranking/search-text.js';
import { TimeSlice } from '../lib/time-slice.js';

/**
 * What a search ranks: a stored catalog (ids are tool names), or an arbitrary set of content
 * hashes such as the tools of one selector request (ids are hashes). BM25 statistics (N, avgdl,
 * df) are computed over exactly this corpus, after the tag filter. The SQL BM25 of a set of hashes
 * counts only documents stored with their terms: a selector request's own tools are stored without
 * them (tool-store.ts NO_TERMS), so the selector ranks its lists by BM25 in process.
 */
export type Corpus = { kind: 'catalog'; catalogId: number; tags?: string[]; names?: CorpusNames } | { kind: 'hashes'; hashes: string[]; tags?: string[] };

/**
 * A catalog's tools a corpus holds when not all (a key that sees only some): these only, or all but
 * these (whichever list is shorter). The statistics are of those tools, as if the others were not there.
 */
export type CorpusNames = { only: readonly string[] } | { except: readonly string[] };

/**
 * The catalog's rows of `ct` a corpus of `names` holds, as a join on unnest and its where clause
 * (the first form, `not (ct.name = any(list))`, left typo matching's document frequencies over
 * 100,000 tools with 10,000 names excepted unanswered within the store's read timeout). Not on the
 * HNSW walk (`searchVector`): a cosine has no statistics, the lists are cut to what the key sees
 * after, and a join there could cost the walk its index.
 */
function namesJoin(names: CorpusNames | undefined): { join: SQL; where: SQL } {
  if (!names) return { join: sql``, where: sql`` };
  if ('only' in names) return { join: sql`join unnest(${sql.param([...names.only])}::text[]) as named(name) on named.name = ct.name`, where: sql`` };
  return { join: sql`left join unnest(${sql.param([...names.except])}::text[]) as named(name) on named.name = ct.name`, where: sql`and named.name is null` };
}

export type Ranked = [id: string, score: number][];

/** Above this many tools a catalog's vector search uses the HNSW index instead of an exact scan. */
export const EXACT_SCAN_MAX = 2000;
/** HNSW candidate list per query: well above the 50-100 candidates fusion reads, for recall. */
const HNSW_EF_SEARCH = 200;

/** Tags match case-insensitively ("discovery" finds "Discovery"); the stored spelling is kept. */
function tagFilter(tags: string[] | undefined): SQL {
  return tags && tags.length > 0
    ? sql`and exists (select 1 from unnest(d.tags) as t(tag) where lower(t.tag) = any(${sql.param(tags.map((tag) => tag.toLowerCase()))}::text[]))`
    : sql``;
}

/** `(id, hash, doc_length, server, terms_version)` rows of the corpus, tag filter applied (filter before rank). */
function corpusRows(corpus: Corpus): SQL {
  if (corpus.kind === 'catalog') {
    const named = namesJoin(corpus.names);
    return sql`select ct.name as id, d.hash, d.doc_length, d.server, d.terms_version
               from catalog_tools ct join tool_documents d on d.hash = ct.hash ${named.join}
               where ct.catalog_id = ${corpus.catalogId} ${tagFilter(corpus.tags)} ${named.where}`;
  }
  // A join on unnest, not `hash = any(array)`: the planner would test the whole array at every
  // index probe (quadratic: 40 ms for 258 tools on PGlite instead of under 1 ms).
  return sql`select d.hash as id, d.hash, d.doc_length, d.server, d.terms_version
             from unnest(${sql.param(corpus.hashes)}::text[]) as h(hash) join tool_documents d on d.hash = h.hash
             where true ${tagFilter(corpus.tags)}`;
}

/**
 * The store's BM25 list met documents whose terms are of another recipe than the one asked for (a
 * release of another recipe sharing the store wrote them): their counts would mix with this
 * recipe's in one score, so nothing was ranked.
 */
export class MixedRecipes extends Error {
  constructor(readonly termsVersion: number) {
    super(`the corpus holds BM25 terms of another recipe than ${termsVersion}`);
  }
}

/**
 * Okapi BM25 in SQL, the same maths as ranking/bm25.ts: idf = ln(1 + (N - df + 0.5)/(df + 0.5)),
 * tf saturation with k1 and length normalisation with b against the corpus's average length.
 * `weights` multiply each query term's contribution (its count in the query). With `termsVersion`,
 * a corpus holding a document with terms of another recipe ranks nothing and throws `MixedRecipes`
 * (told by the pass over the corpus the statistics make anyway).
 */
export async function searchBm25(
  db: Executor,
  corpus: Corpus,
  query: { terms: string[]; weights: number[] },
  limit: number,
  termsVersion?: number,
): Promise<Ranked> {
  if (query.terms.length === 0) return [];
  // A request's own documents are stored without terms (NO_TERMS): a list of hashes counts only the others.
  const other =
    corpus.kind === 'catalog' ? sql`terms_version <> ${termsVersion}::int` : sql`terms_version <> ${termsVersion}::int and terms_version <> ${NO_TERMS}::int`;
  const mixed = termsVersion === undefined ? sql`false` : sql`coalesce(bool_or(${other}), false)`;
  const rows = await queryRows<{ id: string | null; score: number | null; mixed: boolean }>(
    db,
    sql`with corpus as (${corpusRows(corpus)}),
        stats as (select count(*)::float8 as n, avg(doc_length)::float8 as avgdl, ${mixed} as mixed from corpus),
        q as (select * from unnest(${sql.param(query.terms)}::text[], ${sql.param(query.weights)}::float8[]) as q(term, weight)),
        matches as (
          select c.id, c.doc_length, t.term, t.tf, q.weight
          from corpus c join tool_terms t on t.hash = c.hash join q on q.term = t.term
        ),
        df as (select term, count(*)::float8 as df from matches group by term)
        select r.id, r.score, s.mixed
        from stats s left join lateral (
          select m.id,
                 sum(m.weight * ln(1 + (s.n - df.df + 0.5) / (df.df + 0.5))
                     * (m.tf * (${BM25_K1}::float8 + 1))
                     / (m.tf + ${BM25_K1 * BM25_TERM_UNIT}::float8 * (1 - ${BM25_B}::float8 + ${BM25_B}::float8 * m.doc_length / s.avgdl)))::float8 as score
          from matches m join df on df.term = m.term
          where not s.mixed
          group by m.id
          order by score desc, m.id collate "C"
          limit ${limit}
        ) r on true
        order by r.score desc, r.id collate "C"`,
  );
  if (rows[0]?.mixed) throw new MixedRecipes(termsVersion!);
  return rows.flatMap((row) => (row.id === null ? [] : [[row.id, Number(row.score)] as [string, number]]));
}

/**
 * Document frequencies of `terms` over the whole corpus (tag filter aside): typo matching's
 * vocabulary lookups (ranking/fuzzy-terms.ts). Driven from the terms through `tool_terms`' term
 * index, so it reads their postings, not the corpus. Words no document holds are absent.
 */
export async function loadTermFrequencies(db: Executor, corpus: Corpus, terms: readonly string[]): Promise<Map<string, number>> {
  if (terms.length === 0) return new Map();
  // The terms' postings (tool_terms' term index) hash-joined with the corpus: 23 ms for 4,076 tools
  // on PGlite, where plans that probe per corpus row or per term took 270-370 ms.
  const named = namesJoin(corpus.kind === 'catalog' ? corpus.names : undefined);
  const corpusHashes =
    corpus.kind === 'catalog'
      ? sql`(select ct.hash from catalog_tools ct ${named.join} where ct.catalog_id = ${corpus.catalogId} ${named.where})`
      : sql`(select unnest(${sql.param(corpus.hashes)}::text[]) as hash)`;
  const rows = await queryRows<{ term: string; df: number }>(
    db,
    sql`select t.term, count(*)::int as df
        from tool_terms t join ${corpusHashes} c on c.hash = t.hash
        where t.term = any(${sql.param([...new Set(terms)])}::text[])
        group by t.term`,
  );
  return new Map(rows.map((row) => [row.term, Number(row.df)]));
}

/**
 * The exact scan of a small corpus's vectors, built apart so a test can check its plan: each
 * corpus tool's vector is probed through the (hash, model) primary key (a lateral subquery with a
 * limit, which the planner cannot turn into a join), whatever the statistics say. As a join it was
 * planned from statistics, and on tables never analyzed (PGlite never analyzes; PostgreSQL's
 * autovacuum lags a large write) the planner took `model = ...` to keep a few rows and scanned
 * every vector of every catalog: 230 ms for a 1,460-tool catalog beside a 100,000-tool one, 27 ms
 * as this probe (EXPLAIN ANALYZE).
 */
export const exactScanSql = (corpus: Corpus, model: string, literal: string, limit: number): SQL =>
  sql`with corpus as (${corpusRows(corpus)})
      select c.id, (1 - (v.embedding <=> ${literal}::vector))::float8 as score
      from corpus c cross join lateral (select e.embedding from tool_embeddings e where e.hash = c.hash and e.model = ${model} limit 1) v
      order by v.embedding <=> ${literal}::vector, c.id collate "C"
      limit ${limit}`;

/**
 * Cosine similarity (1 - cosine distance) of the corpus's vectors for `model` to the query.
 * Small corpora are scanned exactly; a large catalog goes through the model's HNSW index, with
 * pgvector 0.8's iterative scan so a catalog or tag filter still yields `limit` rows.
 */
export async function searchVector(db: Db, corpus: Corpus, query: { model: string; vector: number[]; useIndex: boolean }, limit: number): Promise<Ranked> {
  const literal = vectorLiteral(query.vector);
  if (!query.useIndex) {
    const rows = await queryRows<{ id: string; score: number }>(db, exactScanSql(corpus, query.model, literal, limit));
    return rows.map((row) => [row.id, Number(row.score)]);
  }
  if (corpus.kind !== 'catalog') throw new Error('the HNSW path serves stored catalogs');
  const dimension = sql.raw(String(Math.trunc(query.vector.length)));
  return db.transaction(async (tx) => {
    await tx.execute(sql.raw(`set local hnsw.ef_search = ${HNSW_EF_SEARCH}`));
    await tx.execute(sql.raw(`set local hnsw.iterative_scan = relaxed_order`));
    const rows = await queryRows<{ id: string; score: number }>(
      tx,
      sql`select ct.name as id, (1 - (e.embedding::vector(${dimension}) <=> ${literal}::vector(${dimension})))::float8 as score
          from tool_embeddings e
          join catalog_tools ct on ct.hash = e.hash and ct.catalog_id = ${corpus.catalogId}
          -- Also without a tag filter: with this join the planner probes catalog_tools by hash for
          -- each HNSW candidate (8 ms at 100,000 tools); without it, it scanned the catalog's rows
          -- once per candidate (1.1 s, EXPLAIN ANALYZE before a table's first ANALYZE).
          join tool_documents d on d.hash = e.hash
          where e.model = ${query.model} ${tagFilter(corpus.tags)}
          order by e.embedding::vector(${dimension}) <=> ${literal}::vector(${dimension})
          limit ${limit}`,
    );
    // relaxed_order may return near-ties slightly out of order.
    return rows.map((row): [string, number] => [row.id, Number(row.score)]).sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  });
}

/** Servers ranked best first, with each one's tools in the corpus (ids, in C order). */
export type RankedServers = { ranked: Ranked; members: Map<string, string[]> };

/**
 * The first `limit` servers of `ctes`, which end in `scored(id, score)` and may read the `corpus`
 * CTE; each with its tools in the corpus (looked up for the servers returned only).
 */
async function topServers(db: Executor, corpus: Corpus, ctes: SQL, limit: number): Promise<RankedServers> {
  const rows = await queryRows<{ id: string; score: number; ids: string[] }>(
    db,
    sql`with corpus as (${corpusRows(corpus)}), ${ctes}
        select scored.id, scored.score, array(select c.id from corpus c where c.server = scored.id order by c.id collate "C") as ids
        from scored
        order by scored.score desc, scored.id collate "C"
        limit ${limit}`,
  );
  return { ranked: rows.map((row) => [row.id, Number(row.score)]), members: new Map(rows.map((row) => [row.id, row.ids])) };
}

/**
 * Okapi BM25 over the corpus's servers, each server one document holding all its tools' terms
 * (ranking/servers.ts `serverDocuments`): tf and length are sums over its tools, and N, avgdl and df
 * count servers. The same maths as `searchBm25`.
 */
export async function searchServersBm25(db: Executor, corpus: Corpus, query: { terms: string[]; weights: number[] }, limit: number): Promise<RankedServers> {
  const { terms } = query;
  if (terms.length === 0) return { ranked: [], members: new Map() };
  return topServers(
    db,
    corpus,
    sql`servers as (select server, sum(doc_length)::float8 as len from corpus where server is not null group by server),
        stats as (select count(*)::float8 as n, avg(len)::float8 as avgdl from servers),
        -- = any, not a join on unnest: the planner then knows how few terms there are and reads
        -- them through tool_terms' term index instead of scanning the table.
        matches as (
          select c.server, t.term, sum(t.tf)::float8 as tf
          from corpus c join tool_terms t on t.hash = c.hash
          where c.server is not null and t.term = any(${sql.param(terms)}::text[])
          group by c.server, t.term
        ),
        df as (select term, count(*)::float8 as df from matches group by term),
        q as (select * from unnest(${sql.param(terms)}::text[], ${sql.param(query.weights)}::float8[]) as q(term, weight)),
        scored as (
          select m.server as id,
                 sum(q.weight * ln(1 + (s.n - df.df + 0.5) / (df.df + 0.5))
                     * (m.tf * (${BM25_K1}::float8 + 1))
                     / (m.tf + ${BM25_K1 * BM25_TERM_UNIT}::float8 * (1 - ${BM25_B}::float8 + ${BM25_B}::float8 * v.len / s.avgdl)))::float8 as score
          from matches m join df on df.term = m.term join q on q.term = m.term join servers v on v.server = m.server cross join stats s
          group by m.server
        )`,
    limit,
  );
}

/**
 * The corpus's servers by cosine similarity to the query of the mean of their tools' vectors
 * (cosine ignores the mean's length, so it equals ranking/servers.ts `serverCentroids`).
 */
export async function searchServersVector(db: Executor, corpus: Corpus, query: { model: string; vector: number[] }, limit: number): Promise<RankedServers> {
  const literal = vectorLiteral(query.vector);
  return topServers(
    db,
    corpus,
    sql`scored as (
          select c.server as id, (1 - (avg(e.embedding) <=> ${literal}::vector))::float8 as score
          from corpus c join tool_embeddings e on e.hash = c.hash and e.model = ${query.model}
          where c.server is not null
          group by c.server
        )`,
    limit,
  );
}

/** One tool of a catalog as its in-process index reads it (search/catalog-index.ts). */
export interface CatalogIndexRow {
  name: string;
  length: number;
  server: string | null;
  tags: string[];
  /** Its BM25 terms as read: "term tf term tf ..." (terms hold no spaces), parsed by `forEachTerm`. */
  terms: string;
  /** Its definition's estimated tokens as stored (`CatalogToolRow.tokens`). */
  tokens: CatalogToolRow['tokens'];
}

/**
 * A document as the catalog's index reads its row (`loadCatalogIndexRows`): what a writer hands
 * the index of the revision it made, instead of the index reading the rows it just wrote.
 */
export function documentIndexRow(doc: CountedDocument): CatalogIndexRow {
  return {
    name: doc.tool.name,
    length: doc.length,
    server: doc.tool.server ?? null,
    tags: doc.tool.tags,
    terms: termsText(doc.termFreqs),
    tokens: { anthropic: doc.tokens.anthropic, openai: doc.tokens.openai, as_sent: doc.tokens.as_sent },
  };
}

/** Terms as a row's terms text ("term tf term tf", what `forEachTerm` reads). */
function termsText(termFreqs: ReadonlyMap<string, number>): string {
  let terms = '';
  for (const [term, tf] of termFreqs) terms += terms === '' ? `${term} ${tf}` : ` ${term} ${tf}`;
  return terms;
}

/**
 * Calls `each` with each (term, tf) of a row's terms text. Parsed where it is used, not into arrays
 * per row: a 100,000-tool catalog's ~2 million term strings and their arrays, held until the
 * index was built, were the largest part of the build's garbage.
 */
export function forEachTerm(terms: string, each: (term: string, tf: number) => void): void {
  let at = 0;
  while (at < terms.length) {
    const space = terms.indexOf(' ', at);
    if (space === -1) return;
    let end = space + 1;
    let tf = 0;
    for (let code = terms.charCodeAt(end); code >= 48 && code <= 57; code = terms.charCodeAt(++end)) tf = 10 * tf + code - 48;
    each(terms.slice(at, space), tf);
    at = end + 1;
  }
}

/**
 * Every tool of a catalog with its BM25 terms of recipe `termsVersion`, and the catalog's revision,
 * read in one statement (one snapshot: the rows are exactly that revision's), in name order; null
 * when the catalog is gone. A document whose stored terms are of another recipe (a refresh not
 * done yet, or a release of another recipe sharing the store) has its terms computed from its text
 * instead (`documentTerms`), so an index never mixes two ways of counting.
 */
export async function loadCatalogIndexRows(
  db: Executor,
  catalogId: number,
  termsVersion: number = TERMS_VERSION,
): Promise<{ revision: number; rows: CatalogIndexRow[] } | null> {
  // Each tool's terms as one string ("term tf term tf ..."; terms hold no spaces): half the time of
  // two arrays per row to read and parse at 100,000 tools.
  const rows = await queryRows<IndexRowText>(
    db,
    sql`select c.revision::int as revision, ct.name, d.doc_length::int as length, d.server, d.tags, t.terms, ${indexTokenColumns}, ${staleText(termsVersion)}
        from catalogs c
          left join catalog_tools ct on ct.catalog_id = c.id
          left join tool_documents d on d.hash = ct.hash
          left join lateral (${storedTerms(termsVersion)}) t on true
        where c.id = ${catalogId}
        order by ct.name collate "C"`,
  );
  if (rows.length === 0) return null; // deleted meanwhile
  return { revision: Number(rows[0]!.revision), rows: await indexRows(rows.flatMap((row) => (row.name === null ? [] : [{ row, name: row.name }]))) };
}

/** Each tool of a catalog by name with its content hash, and the catalog's revision, in one statement (one snapshot); null when the catalog is gone. */
export async function loadCatalogHashes(db: Executor, catalogId: number): Promise<{ revision: number; tools: { name: string; hash: string }[] } | null> {
  const rows = await queryRows<{ revision: number; name: string | null; hash: string | null }>(
    db,
    sql`select c.revision::int as revision, ct.name, ct.hash
        from catalogs c left join catalog_tools ct on ct.catalog_id = c.id
        where c.id = ${catalogId}`,
  );
  if (rows.length === 0) return null;
  return {
    revision: Number(rows[0]!.revision),
    tools: rows.flatMap((row) => (row.name === null || row.hash === null ? [] : [{ name: row.name, hash: row.hash }])),
  };
}

/**
 * The content hashes of a catalog's tools named in `names` (a tag filter's, as the catalog's index
 * names them), by name; undefined when one of them is gone. Each name is probed through the primary
 * key, whatever the statistics say: the tag filter in SQL reads every tool of the catalog to test
 * its tags (~600 ms a statement at 100,000 tools), this reads the tagged ones (~20 ms for 3,740).
 */
export async function loadNamedHashes(db: Executor, catalogId: number, names: ReadonlySet<string>): Promise<Map<string, string> | undefined> {
  if (names.size === 0) return new Map();
  const rows = await queryRows<{ name: string; hash: string }>(
    db,
    sql`select n.name, t.hash
        from unnest(${sql.param([...names])}::text[]) as n(name)
        cross join lateral (select ct.hash from catalog_tools ct where ct.catalog_id = ${catalogId} and ct.name = n.name limit 1) t`,
  );
  return rows.length === names.size ? new Map(rows.map((row) => [row.name, row.hash])) : undefined;
}

/** A tool's three token counts as plain columns (not `toolColumns`' JSON object: 100,000 of them per read). */
const indexTokenColumns = sql`d.tokens_anthropic as anthropic, d.tokens_openai as openai, ct.tokens_as_sent as as_sent`;

/** A document's stored terms as one string, when they are of recipe `termsVersion` (no read of them otherwise). */
const storedTerms = (termsVersion: number) =>
  sql`select string_agg(tt.term || ' ' || tt.tf, ' ') as terms from tool_terms tt where tt.hash = d.hash and d.terms_version = ${termsVersion}::int`;

/** The text a document's terms are computed from, only when its stored terms are of another recipe than `termsVersion`. */
const staleText = (termsVersion: number) =>
  sql`d.terms_version <> ${termsVersion}::int as stale,
      case when d.terms_version <> ${termsVersion}::int then d.name end as doc_name,
      case when d.terms_version <> ${termsVersion}::int then d.description end as description,
      case when d.terms_version <> ${termsVersion}::int then d.input_schema end as input_schema`;

interface IndexRowText {
  revision: number;
  name: string | null;
  length: number;
  server: string | null;
  tags: string[] | null;
  terms: string | null;
  anthropic: number | null;
  openai: number | null;
  as_sent: number | null;
  stale: boolean | null;
  doc_name: string | null;
  description: string | null;
  input_schema: Record<string, unknown> | null;
}

function indexRow(row: IndexRowText, name: string): CatalogIndexRow {
  return {
    name,
    length: Number(row.length),
    server: row.server,
    tags: row.tags ?? [],
    terms: row.terms ?? '',
    tokens: { anthropic: row.anthropic, openai: row.openai, as_sent: row.as_sent },
  };
}

/**
 * The index's rows, those stored with another recipe's terms given this one's from their text, in
 * time slices (~20-50 us a document: seconds for a 100,000-tool catalog of a release that changed
 * the recipe, until the background refresh has stored them).
 */
async function indexRows(read: { row: IndexRowText; name: string }[]): Promise<CatalogIndexRow[]> {
  const slice = new TimeSlice();
  const rows: CatalogIndexRow[] = [];
  for (const { row, name } of read) {
    const indexed = indexRow(row, name);
    if (row.stale) {
      if (slice.due()) await slice.yield();
      const { termFreqs, length } = documentTerms({
        name: row.doc_name ?? '',
        description: row.description ?? '',
        inputSchema: row.input_schema,
        tags: row.tags ?? [],
        server: row.server,
      });
      indexed.terms = termsText(termFreqs);
      indexed.length = length;
    }
    rows.push(indexed);
  }
  return rows;
}

/** What a catalog's revisions after `from` changed: the changed names' rows now, and the names now gone. */
export interface CatalogChanges {
  revision: number;
  rows: CatalogIndexRow[];
  removed: string[];
}

/**
 * The catalog's changes since revision `from`, read in one statement (one snapshot, like
 * loadCatalogIndexRows): undefined when they cannot be told from the log (a revision not logged
 * any more, a replace of more than 20,000 names) or touch more than `maxNames` names; null when the catalog is gone.
 */
export async function loadCatalogChanges(
  db: Executor,
  catalogId: number,
  from: number,
  maxNames: number,
  termsVersion: number = TERMS_VERSION,
): Promise<CatalogChanges | null | undefined> {
  const log = changesSince(catalogId, from, maxNames);
  const rows = await queryRows<IndexRowText & { logged: number; unknown: number; changed: number; present: boolean }>(
    db,
    sql`with ${log.ctes}
        select ${log.columns}, ch.name, ct.name is not null as present, d.doc_length::int as length, d.server, d.tags, t.terms, ${indexTokenColumns},
               ${staleText(termsVersion)}
        from c
          left join changed ch on (select count(*) from changed) <= ${maxNames}
          left join catalog_tools ct on ct.catalog_id = c.id and ct.name = ch.name
          left join tool_documents d on d.hash = ct.hash
          left join lateral (${storedTerms(termsVersion)}) t on true
        order by ch.name collate "C"`,
  );
  const first = rows[0];
  if (!first) return null;
  const revision = Number(first.revision);
  if (!changesTold(first, from, maxNames)) return undefined;
  const changes: CatalogChanges = { revision, rows: [], removed: [] };
  const present: { row: IndexRowText; name: string }[] = [];
  for (const row of rows) {
    if (row.name === null) continue;
    if (row.present) present.push({ row, name: row.name });
    else changes.removed.push(row.name);
  }
  changes.rows = await indexRows(present);
  return changes;
}

/**
 * The mean vector of each server's tools in a catalog (the vectors `searchServersVector` averages),
 * of every server or of `servers` only, and the servers with a tool that has no vector of the
 * current recipe yet (their means will change).
 */
export async function loadCatalogServerMeans(
  db: Executor,
  catalogId: number,
  recipe: VectorRecipe,
  servers?: readonly string[],
): Promise<{ means: Map<string, Float32Array>; incomplete: Set<string> }> {
  const rows = await queryRows<{ server: string; mean: Uint8Array | string | null; tools: number; current: number }>(
    db,
    sql`select d.server, ${vectorColumn(sql`avg(e.embedding)`, sendsBinaryParameters(db))} as mean, count(*)::int as tools,
               count(*) filter (where e.text_version = ${recipe.textVersion})::int as current
        from catalog_tools ct join tool_documents d on d.hash = ct.hash
          left join tool_embeddings e on e.hash = d.hash and e.model = ${recipe.model}
        where ct.catalog_id = ${catalogId} and ${servers ? sql`d.server = any(${sql.param([...servers])}::text[])` : sql`d.server is not null`}
        group by d.server`,
  );
  const means = new Map<string, Float32Array>();
  const incomplete = new Set<string>();
  for (const row of rows) {
    if (Number(row.current) !== Number(row.tools)) incomplete.add(row.server);
    if (row.mean !== null) means.set(row.server, vectorRead(row.mean));
  }
  return { means, incomplete };
}

export interface CorpusInfo {
  size: number;
  /** Corpus members that have a vector for the model. */
  embedded: number;
}

export async function corpusInfo(db: Executor, corpus: Corpus, model: string): Promise<CorpusInfo> {
  const rows = await queryRows<{ size: number; embedded: number }>(
    db,
    sql`with corpus as (${corpusRows(corpus)})
        select count(*)::int as size,
               count(*) filter (where exists (select 1 from tool_embeddings e where e.hash = corpus.hash and e.model = ${model}))::int as embedded
        from corpus`,
  );
  return rows[0] ?? { size: 0, embedded: 0 };
}

/** Which of `names` are tools of the catalog (exact, case-sensitive). */
export async function existingNames(db: Executor, catalogId: number, names: string[]): Promise<string[]> {
  if (names.length === 0) return [];
  const rows = await queryRows<{ name: string }>(
    db,
    sql`select name from catalog_tools where catalog_id = ${catalogId} and name = any(${sql.param(names)}::text[])`,
  );
  return rows.map((row) => row.name);
}

/**
 * Which of `terms` occur in at least one tool of the catalog (through tool_terms' term index), or
 * with `hidden`, in one not named there (the tools a key does not see).
 */
export async function catalogKnownTerms(db: Executor, catalogId: number, terms: string[], hidden: readonly string[] = []): Promise<Set<string>> {
  if (terms.length === 0) return new Set();
  const rows = await queryRows<{ term: string }>(
    db,
    sql`select q.term from unnest(${sql.param(terms)}::text[]) as q(term)
        where exists (select 1 from tool_terms t join catalog_tools ct on ct.hash = t.hash
                      where t.term = q.term and ct.catalog_id = ${catalogId}
                        ${hidden.length > 0 ? sql`and not (ct.name = any(${sql.param([...hidden])}::text[]))` : sql``})`,
  );
  return new Set(rows.map((row) => row.term));
}

/** The ids of the corpus's tools that pass its tag filter (all of them without one). */
export async function corpusIds(db: Executor, corpus: Corpus): Promise<Set<string>> {
  const rows = await queryRows<{ id: string }>(db, sql`select c.id from (${corpusRows(corpus)}) c`);
  return new Set(rows.map((row) => row.id));
}

/** Tags of the given corpus ids (names for a catalog, hashes otherwise). */
export async function tagsOf(db: Executor, corpus: Corpus, ids: string[]): Promise<Map<string, string[]>> {
  if (ids.length === 0) return new Map();
  const rows = await queryRows<{ id: string; tags: string[] }>(
    db,
    corpus.kind === 'catalog'
      ? sql`select ct.name as id, d.tags from catalog_tools ct join tool_documents d on d.hash = ct.hash
            where ct.catalog_id = ${corpus.catalogId} and ct.name = any(${sql.param(ids)}::text[])`
      : sql`select d.hash as id, d.tags from tool_documents d where d.hash = any(${sql.param(ids)}::text[])`,
  );
  return new Map(rows.map((row) => [row.id, row.tags]));
}

/** Names and descriptions of the given corpus ids (names for a catalog, hashes otherwise): what a reranker reads. */
export async function textsOf(db: Executor, corpus: Corpus, ids: string[]): Promise<Map<string, { name: string; description: string }>> {
  if (ids.length === 0) return new Map();
  const rows = await queryRows<{ id: string; name: string; description: string }>(
    db,
    corpus.kind === 'catalog'
      ? sql`select ct.name as id, d.name, d.description from catalog_tools ct join tool_documents d on d.hash = ct.hash
            where ct.catalog_id = ${corpus.catalogId} and ct.name = any(${sql.param(ids)}::text[])`
      : sql`select d.hash as id, d.name, d.description from tool_documents d where d.hash = any(${sql.param(ids)}::text[])`,
  );
  return new Map(rows.map((row) => [row.id, { name: row.name, description: row.description }]));
}

/** The model's partial HNSW index (the default model's comes with the migrations). */
export async function ensureVectorIndex(db: Executor, model: string, dimension: number): Promise<void> {
  if (!/^[A-Za-z0-9._\/:@-]{1,160}$/.test(model) || !Number.isInteger(dimension) || dimension < 1 || dimension > 16000) {
    throw new Error(`cannot index model "${model}" with dimension ${dimension}`);
  }
  const indexName = `tool_embeddings_hnsw_${model.replace(/[^A-Za-z0-9]+/g, '_').toLowerCase()}`.slice(0, 63);
  await db.execute(
    sql.raw(
      `create index if not exists "${indexName}" on tool_embeddings using hnsw ((embedding::vector(${dimension})) vector_cosine_ops) where model = '${model}'`,
    ),
  );
}
