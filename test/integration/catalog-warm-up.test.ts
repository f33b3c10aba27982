/**
 * CATALOG_WARMUP: a service started over stored catalogs reads them into process before /readyz
 * answers ready, the most recently written first, within CATALOG_INDEX_MEMORY; its first searches
 * then rank from the index in hand and answer as a service that had searched them before.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../src/store/database.js';
import { getCatalog } from '../../src/store/catalog-store.js';
import { CatalogIndexCache } from '../../src/search/catalog-index.js';
import { newWarmUp, warmCatalogs } from '../../src/search/warm-up.js';
import { CatalogVectorCache } from '../../src/search/catalog-vectors.js';
import { CatalogEmbeddingStatus } from '../../src/catalog/embedding-status.js';
import { VectorCache } from '../../src/store/vector-cache.js';
import { testEmbedder } from '../helpers/embedder.js';
import { until } from '../helpers/assertions.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { scratchDatabase, storeKind, type ScratchDatabase } from '../helpers/database.js';

const WORDS = [
  'read',
  'write',
  'file',
  'issue',
  'branch',
  'weather',
  'city',
  'email',
  'calendar',
  'event',
  'search',
  'page',
  'table',
  'query',
  'image',
  'audio',
];
const toolsOf = (count: number, prefix: string) =>
  Array.from({ length: count }, (_, i) => ({
    name: `${prefix}_${i}`,
    description: `${WORDS[i % WORDS.length]} ${WORDS[(i * 7 + 3) % WORDS.length]} ${WORDS[(i * 5 + 1) % WORDS.length]} for ${prefix} number ${i}.`,
    server: `${prefix}${i % 9}`,
    tags: [WORDS[i % 4]!],
  }));

/** Written oldest first: `new` is the most recently written. */
const CATALOGS = [
  { name: 'old', tools: toolsOf(400, 'old') },
  { name: 'mid', tools: toolsOf(100, 'mid') },
  { name: 'new', tools: toolsOf(100, 'new') },
];
const QUERIES = ['write a file', 'weather in a city', 'find an email about the calendar event'];

describe('catalogs read into process at start (CATALOG_WARMUP)', () => {
  let scratch: ScratchDatabase;
  let writer: TestApp;
  /** Each catalog's answers from the service that wrote and searched them. */
  const answers = new Map<string, unknown[]>();
  const search = (app: TestApp, catalog: string, query: string) => app.request('POST', `/v1/catalogs/${catalog}/search`, { query, mode: 'bm25', top_k: 10 });

  beforeAll(async () => {
    scratch = await scratchDatabase(storeKind(), 'warmup');
    writer = await startTestApp({}, { database: scratch.database });
    for (const { name, tools } of CATALOGS) {
      expect((await writer.request('PUT', `/v1/catalogs/${name}`, { tools })).status).toBe(200);
      // updated_at orders them: a tick between writes.
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    for (const { name } of CATALOGS) {
      const summary = (await getCatalog(scratch.database.db, 'default', name))!;
      await writer.deps.search.catalogIndexes!.get(summary);
      answers.set(
        name,
        await Promise.all(
          QUERIES.map(async (query) =>
            (await search(writer, name, query)).body.results.map((result: { name: string; score: number }) => [result.name, result.score]),
          ),
        ),
      );
    }
    await writer.close();
  });
  afterAll(() => scratch.drop());

  it('reads every catalog before /readyz says ready; the first searches rank from the index in hand and answer as before', async () => {
    const app = await startTestApp({ CATALOG_WARMUP: 'true' }, { database: scratch.database });
    try {
      let ready = await app.request('GET', '/readyz');
      for (const deadline = Date.now() + 30_000; ready.status !== 200 && Date.now() < deadline; ) ready = await app.request('GET', '/readyz');
      expect(ready.status).toBe(200);
      expect(ready.body.components.catalogs).toEqual({ status: 'ok', read_at_start: 3, of: 3, skipped: 0 });
      for (const { name } of CATALOGS) {
        const summary = (await getCatalog(scratch.database.db, 'default', name))!;
        // In hand before any search, and remembered for the selector's answer from memory.
        expect(app.deps.search.catalogIndexes!.held(summary), name).toBeDefined();
        expect(app.deps.search.catalogIndexes!.lastSeen('default', name)?.catalog.revision).toBe(summary.revision);
        const now = await Promise.all(
          QUERIES.map(async (query) =>
            (await search(app, name, query)).body.results.map((result: { name: string; score: number }) => [result.name, result.score]),
          ),
        );
        expect(now, name).toEqual(answers.get(name));
      }
    } finally {
      await app.close();
    }
  });

  it('says not ready while it reads, with how far it got, and ready once done', async () => {
    // The reading goes through the database's unbounded connection; hold its statements until let go.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const adminDb = new Proxy(scratch.database.adminDb, {
      get: (target, key, receiver) =>
        key === 'execute'
          ? async (...args: unknown[]) => (await held, (target.execute as (...a: unknown[]) => unknown).apply(target, args))
          : Reflect.get(target, key, receiver),
    }) as Db;
    const database = new Proxy(scratch.database, { get: (target, key, receiver) => (key === 'adminDb' ? adminDb : Reflect.get(target, key, receiver)) });
    const app = await startTestApp({ CATALOG_WARMUP: 'true' }, { database });
    try {
      const waiting = await app.request('GET', '/readyz');
      expect(waiting.status).toBe(503);
      expect(waiting.body.components.database.status).toBe('ok');
      expect(waiting.body.components.catalogs).toEqual({ status: 'down', reason: 'reading the stored catalogs into process: 0 of ? (CATALOG_WARMUP)' });
      // Searches are answered meanwhile (in SQL): not ready is for load balancers, not a refusal.
      expect(
        (await search(app, 'new', 'weather in a city')).body.results.map((result: { name: string; score: number }) => [result.name, result.score]),
      ).toEqual(answers.get('new')![1]);
      release();
      let ready = await app.request('GET', '/readyz');
      for (const deadline = Date.now() + 30_000; ready.status !== 200 && Date.now() < deadline; ) ready = await app.request('GET', '/readyz');
      expect(ready.status).toBe(200);
      expect(ready.body.components.catalogs).toMatchObject({ status: 'ok', read_at_start: 3, of: 3 });
    } finally {
      release();
      await app.close();
    }
  });

  it('reads the most recently written first and leaves what would not fit in CATALOG_INDEX_MEMORY to its first search', async () => {
    const bytes = new Map<string, number>();
    const full = new CatalogIndexCache(scratch.database.adminDb);
    for (const { name } of CATALOGS) bytes.set(name, (await full.get((await getCatalog(scratch.database.db, 'default', name))!))!.bytes);
    for (const [budget, read] of [
      [bytes.get('new')! + bytes.get('mid')! + bytes.get('old')! / 2, ['new', 'mid']],
      [bytes.get('new')! + bytes.get('mid')! / 2, ['new']],
    ] as const) {
      const catalogIndexes = new CatalogIndexCache(scratch.database.adminDb, budget);
      const progress = newWarmUp();
      await warmCatalogs({ db: scratch.database.db, embedder: null, catalogIndexes }, scratch.database.adminDb, progress);
      expect(progress).toMatchObject({ state: 'done', of: 3, read: read.length, skipped: 3 - read.length });
      for (const { name } of CATALOGS) {
        const summary = (await getCatalog(scratch.database.db, 'default', name))!;
        expect(catalogIndexes.held(summary) !== undefined, `${name} with a budget of ${Math.round(budget)} bytes`).toBe(read.includes(name as never));
      }
    }
  });
});

describe("catalogs' vectors read into process at start, with the model", () => {
  let scratch: ScratchDatabase;
  const names = ['old', 'mid', 'new'];

  beforeAll(async () => {
    scratch = await scratchDatabase(storeKind(), 'warmup-vectors');
    const writer = await startTestApp({ EMBED_MODEL: 'use-lite' }, { database: scratch.database });
    try {
      for (const name of names) {
        expect((await writer.request('PUT', `/v1/catalogs/${name}`, { tools: toolsOf(60, name) })).status).toBe(200);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      await writer.deps.queue?.whenIdle();
    } finally {
      await writer.close();
    }
  }, 120_000);
  afterAll(() => scratch.drop());

  it("holds each small catalog's vectors once ready, the most recently written first, while the 128 MiB for them has room", async () => {
    const embedder = await testEmbedder();
    const warm = async (budget?: number) => {
      const deps = {
        db: scratch.database.db,
        embedder,
        catalogIndexes: new CatalogIndexCache(scratch.database.adminDb),
        embeddingStatus: new CatalogEmbeddingStatus(),
        catalogVectors: new CatalogVectorCache(new VectorCache(), budget),
      };
      const progress = newWarmUp();
      await warmCatalogs(deps, scratch.database.adminDb, progress);
      expect(progress).toMatchObject({ state: 'done', of: 3, read: 3 });
      const held = [];
      for (const name of names) {
        const summary = (await getCatalog(scratch.database.db, 'default', name))!;
        if (deps.catalogVectors.held(summary, embedder.modelId)?.size === 60) held.push(name);
      }
      return { held, bytes: deps.catalogVectors.bytes };
    };
    const all = await warm();
    expect(all.held).toEqual(names);
    // Read after the replica says ready: their searches scan in SQL meanwhile, as exactly.
    const catalogVectors = new CatalogVectorCache(new VectorCache());
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const get = catalogVectors.get.bind(catalogVectors);
    catalogVectors.get = async (...args) => (await released, get(...args));
    const progress = newWarmUp();
    const warming = warmCatalogs(
      {
        db: scratch.database.db,
        embedder,
        catalogIndexes: new CatalogIndexCache(scratch.database.adminDb),
        embeddingStatus: new CatalogEmbeddingStatus(),
        catalogVectors,
      },
      scratch.database.adminDb,
      progress,
    );
    await until('the indexes read', () => progress.state !== 'reading');
    expect(progress).toMatchObject({ state: 'done', of: 3, read: 3 });
    expect(catalogVectors.bytes).toBe(0);
    release();
    await warming;
    expect(catalogVectors.bytes).toBe(all.bytes);
    // Room for two catalogs' vectors and half of a third: the two most recently written are held,
    // and the oldest is not read (reading it would have pushed the newest out).
    expect(await warm((all.bytes * 5) / 6)).toMatchObject({ held: ['mid', 'new'] });
  });
});
