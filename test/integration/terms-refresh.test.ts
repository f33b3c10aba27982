/**
 * A release that changes the BM25 recipe (search-text.ts TERMS_VERSION) serves at once: the stored
 * terms of the older recipe are recomputed in the background (/readyz `terms` shows the progress),
 * and meanwhile every search ranks with this release's recipe alone, from the catalog's in-process
 * index whose stale rows take their terms from their text: the same answers, to the last digit,
 * as once the refresh is done. A store a later release (a newer recipe) has refreshed is ranked the
 * same way and never rewritten back (a rolling upgrade, docs/deploy.md).
 */
import { readFileSync } from 'node:fs';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { TERMS_VERSION } from '../../src/ranking/search-text.js';
import { refreshStaleTerms } from '../../src/catalog/refresh-terms.js';
import { getCatalog } from '../../src/store/catalog-store.js';
import { queryRows } from '../../src/store/database.js';
import { searchBm25 } from '../../src/store/search-store.js';
import { queryTerms } from '../../src/ranking/search-text.js';
import { until } from '../helpers/assertions.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { scratchDatabase, storeKind, type ScratchDatabase } from '../helpers/database.js';

const EVAL = new URL('../../../shared/eval/livemcpbench/', import.meta.url).pathname;
const TOOLS = readFileSync(`${EVAL}catalog.jsonl`, 'utf8')
  .trim()
  .split('\n')
  .map((line) => JSON.parse(line) as Record<string, unknown>);
const QUERIES = readFileSync(`${EVAL}queries.dev.jsonl`, 'utf8')
  .trim()
  .split('\n')
  .slice(0, 6)
  .map((line) => (JSON.parse(line) as { query: string }).query);
/** Each query in BM25 and in the default mode (hybrid without a model: BM25 with the servers' votes), one under a tag filter, one with typos. */
const SEARCHES = [
  ...QUERIES.flatMap((query) => [{ query, mode: 'bm25' }, { query }]),
  { query: QUERIES[0]!, tags: ['Discovery'] },
  { query: 'serch the web for nwes' },
];
const CATALOG = 'recipe';

type Answer = [name: string, score: number][];

const answersOf = async (app: TestApp): Promise<Answer[]> =>
  Promise.all(
    SEARCHES.map(async (body) => {
      const response = await app.request('POST', `/v1/catalogs/${CATALOG}/search`, { top_k: 10, ...body });
      expect(response.status, response.text).toBe(200);
      return response.body.results.map((result: { name: string; score: number }) => [result.name, result.score] as [string, number]);
    }),
  );

/** Same tools in the same order, scores equal within float noise. */
function expectSameAnswers(actual: Answer[], expected: Answer[]): void {
  expect(actual.map((answer) => answer.map(([name]) => name))).toEqual(expected.map((answer) => answer.map(([name]) => name)));
  actual.forEach((answer, i) => answer.forEach(([, score], j) => expect(score).toBeCloseTo(expected[i]![j]![1], 9)));
}

/** The catalog's documents as another recipe stored them: stamped `version`, every count tripled. */
async function restamp(scratch: ScratchDatabase, version: number): Promise<void> {
  const hashes = sql`(select ct.hash from catalog_tools ct join catalogs c on c.id = ct.catalog_id where c.name = ${CATALOG})`;
  await scratch.database.db.execute(sql`update tool_terms set tf = tf * 3 where hash in ${hashes}`);
  await scratch.database.db.execute(sql`update tool_documents set terms_version = ${version}::int, doc_length = doc_length * 3 where hash in ${hashes}`);
}

const versions = async (scratch: ScratchDatabase) =>
  (
    await queryRows<{ version: number; n: number }>(
      scratch.database.db,
      sql`select terms_version as version, count(*)::int as n from tool_documents group by 1 order by 1`,
    )
  ).map((row) => [Number(row.version), Number(row.n)]);

describe('a start with stored terms of another BM25 recipe', () => {
  let scratch: ScratchDatabase;
  /** The answers of a service whose store holds this recipe's terms only. */
  let expected: Answer[];

  beforeAll(async () => {
    scratch = await scratchDatabase(storeKind(), 'terms');
    const writer = await startTestApp({}, { database: scratch.database });
    try {
      expect((await writer.request('PUT', `/v1/catalogs/${CATALOG}`, { tools: TOOLS })).status).toBe(200);
      // In SQL (no index held yet), then from the index: the same answers (search-store.test.ts).
      expected = await answersOf(writer);
      await writer.deps.search.catalogIndexes!.get((await getCatalog(scratch.database.db, 'default', CATALOG))!);
      expectSameAnswers(await answersOf(writer), expected);
    } finally {
      await writer.close();
    }
  }, 120_000);
  afterAll(() => scratch?.drop());

  it('answers before the refresh is done exactly as after it, /readyz showing the progress, then refreshes them in the background', async () => {
    await restamp(scratch, TERMS_VERSION - 1);
    // Ranked in SQL now, the old counts would answer otherwise: what this test would catch.
    const catalog = (await getCatalog(scratch.database.db, 'default', CATALOG))!;
    const terms = queryTerms(QUERIES[0]!);
    const mixed = await searchBm25(scratch.database.db, { kind: 'catalog', catalogId: catalog.id }, { terms, weights: terms.map(() => 1) }, 10);
    expect(mixed.map(([, score]) => score)).not.toEqual(expected[0]!.map(([, score]) => score));

    let release!: () => void;
    const app = await startTestApp({}, { database: scratch.database, holdTermsRefresh: new Promise<void>((resolve) => (release = resolve)) });
    try {
      const ready = await app.request('GET', '/readyz');
      expect(ready.status).toBe(200);
      expect(ready.body.components.terms).toEqual({ status: 'ok', recipe: TERMS_VERSION, state: 'refreshing', refreshed: 0, of: TOOLS.length });
      // The first searches (no index held: read whole for them) and the next (from the index).
      expectSameAnswers(await answersOf(app), expected);
      expectSameAnswers(await answersOf(app), expected);
      expect(await versions(scratch)).toEqual([[TERMS_VERSION - 1, TOOLS.length]]);

      release();
      await until('terms refreshed', async () => (await app.request('GET', '/readyz')).body.components.terms.state === 'current');
      expect((await app.request('GET', '/readyz')).body.components.terms).toEqual({ status: 'ok', recipe: TERMS_VERSION, state: 'current' });
      expect(await versions(scratch)).toEqual([[TERMS_VERSION, TOOLS.length]]);
      expectSameAnswers(await answersOf(app), expected);
    } finally {
      await app.close();
    }
    // A service started now ranks its first searches in SQL again, over the refreshed terms.
    const after = await startTestApp({}, { database: scratch.database });
    try {
      expect(after.deps.search.storedTerms!.current).toBe(true);
      expectSameAnswers(await answersOf(after), expected);
    } finally {
      await after.close();
    }
  }, 120_000);

  it('terms of an older recipe written after the start (a release of it sharing the store) are caught by the store list, never ranked, then refreshed', async () => {
    const app = await startTestApp({}, { database: scratch.database });
    try {
      expect(app.deps.search.storedTerms!.current).toBe(true);
      await restamp(scratch, TERMS_VERSION - 1);
      // No index held: the first searches go to the store's list, which finds the older terms.
      expectSameAnswers(await answersOf(app), expected);
      await until('terms refreshed', async () => (await app.request('GET', '/readyz')).body.components.terms.state === 'current');
      expect(await versions(scratch)).toEqual([[TERMS_VERSION, TOOLS.length]]);
      expectSameAnswers(await answersOf(app), expected);
    } finally {
      await app.close();
    }
  }, 120_000);

  it('a store a later release (a newer recipe) refreshed is ranked with this release recipe and left as it is', async () => {
    await restamp(scratch, TERMS_VERSION + 1);
    const app = await startTestApp({}, { database: scratch.database });
    try {
      const ready = await app.request('GET', '/readyz');
      // Not required: the service stays ready, and says why it ranks in process.
      expect(ready.status).toBe(200);
      expect(ready.body.components.terms.status).toBe('degraded');
      expect(ready.body.components.terms.reason).toMatch(
        new RegExp(`${TOOLS.length} documents have BM25 terms of a newer recipe than this release's \\(${TERMS_VERSION}\\)`),
      );
      expectSameAnswers(await answersOf(app), expected);
      expect(app.deps.search.storedTerms!.current).toBe(false);
      // Nothing is rewritten back to the older recipe, by the background refresh or by another start.
      expect(await refreshStaleTerms(scratch.database.db, pino({ level: 'silent' }))).toBe(0);
      expect(await versions(scratch)).toEqual([[TERMS_VERSION + 1, TOOLS.length]]);
    } finally {
      await app.close();
    }
  }, 120_000);
});

describe('a catalog whose index cannot be held while its stored terms are refreshed', () => {
  let scratch: ScratchDatabase;

  beforeAll(async () => {
    scratch = await scratchDatabase(storeKind(), 'terms-dense');
    const writer = await startTestApp({ EMBED_MODEL: 'use-lite' }, { database: scratch.database });
    try {
      expect((await writer.request('PUT', `/v1/catalogs/${CATALOG}`, { tools: TOOLS })).status).toBe(200);
      await writer.deps.queue?.whenIdle();
    } finally {
      await writer.close();
    }
    await restamp(scratch, TERMS_VERSION - 1);
  }, 180_000);
  afterAll(() => scratch?.drop());

  it('ranks by meaning alone meanwhile, exact names first, and says so; BM25 alone is a 503 naming the refresh', async () => {
    let release!: () => void;
    const app = await startTestApp(
      { EMBED_MODEL: 'use-lite', CATALOG_INDEX_MEMORY: '0' },
      { database: scratch.database, holdTermsRefresh: new Promise<void>((resolve) => (release = resolve)) },
    );
    try {
      expect((await app.request('GET', '/readyz')).body.components.terms.state).toBe('refreshing');
      const search = (body: Record<string, unknown>) => app.request('POST', `/v1/catalogs/${CATALOG}/search`, { top_k: 5, explain: true, ...body });
      const named = String(TOOLS[3]!.name);
      const byMeaning: string[][] = [];
      for (const query of [QUERIES[0]!, QUERIES[1]!, `use ${named} to ${QUERIES[2]!}`]) {
        const hybrid = await search({ query });
        expect(hybrid.status, hybrid.text).toBe(200);
        expect(hybrid.body.degraded).toBe('terms_refreshing');
        // No BM25 rank: the store's terms are of two recipes and none of them is read.
        for (const result of hybrid.body.results) expect(result.explain.bm25).toBeNull();
        byMeaning.push(hybrid.body.results.map((result: { name: string }) => result.name));
      }
      expect(byMeaning[2]![0]).toBe(named);
      const bm25 = await search({ query: QUERIES[0]!, mode: 'bm25' });
      expect(bm25.status).toBe(503);
      expect(bm25.body.error.message).toMatch(/BM25 terms are being recomputed.*mode "bm25" needs them/);
      // Once the terms are this recipe's, the store's BM25 ranks again, and the dense list is the same.
      release();
      await until('terms refreshed', async () => (await app.request('GET', '/readyz')).body.components.terms.state === 'current');
      const after = await search({ query: QUERIES[0]! });
      expect(after.status).toBe(200);
      expect(after.body.degraded).toBeUndefined();
      expect(after.body.results.some((result: { explain: { bm25: number | null } }) => result.explain.bm25 !== null)).toBe(true);
      const vector = await search({ query: QUERIES[0]!, mode: 'vector' });
      expect(vector.body.results.map((result: { name: string }) => result.name)).toEqual(byMeaning[0]);
      expect((await search({ query: QUERIES[0]!, mode: 'bm25' })).status).toBe(200);
    } finally {
      await app.close();
    }
  }, 180_000);

  it('without the model there is nothing to rank it by: a 503 naming the refresh, not an empty answer', async () => {
    await restamp(scratch, TERMS_VERSION - 1);
    let release!: () => void;
    const app = await startTestApp(
      { CATALOG_INDEX_MEMORY: '0' },
      { database: scratch.database, holdTermsRefresh: new Promise<void>((resolve) => (release = resolve)) },
    );
    try {
      const answer = await app.request('POST', `/v1/catalogs/${CATALOG}/search`, { query: QUERIES[0]! });
      expect(answer.status).toBe(503);
      expect(answer.body.error.message).toMatch(/without the embedding model nothing else ranks it/);
    } finally {
      release();
      await app.close();
    }
  }, 120_000);
});
