import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { observing, uniqueName } from '../helpers/database.js';
import { testEmbedder } from '../helpers/embedder.js';

const tools = [
  {
    name: 'read_file',
    description: 'Read the complete contents of a file from disk.',
    inputSchema: { type: 'object', properties: { path: { type: 'string' } } },
    tags: ['files'],
  },
  {
    name: 'write_file',
    description: 'Write text to a file on disk, replacing it.',
    inputSchema: { type: 'object', properties: { path: { type: 'string' }, content: { type: 'string' } } },
    tags: ['files'],
  },
  {
    name: 'list_directory',
    description: 'List the files in a directory.',
    inputSchema: { type: 'object', properties: { path: { type: 'string' } } },
    tags: ['files'],
  },
  {
    name: 'web_search',
    description: 'Search the web for pages matching a query.',
    inputSchema: { type: 'object', properties: { query: { type: 'string' } } },
    tags: ['web'],
  },
  {
    name: 'fetch_url',
    description: 'Download a web page and return its text.',
    inputSchema: { type: 'object', properties: { url: { type: 'string' } } },
    tags: ['web'],
  },
  {
    name: 'send_email',
    description: 'Send an email message to a recipient.',
    inputSchema: { type: 'object', properties: { to: { type: 'string' } } },
    tags: ['mail'],
  },
  {
    name: 'get_weather',
    description: 'Current weather forecast for a city.',
    inputSchema: { type: 'object', properties: { city: { type: 'string' } } },
    tags: ['weather'],
  },
  {
    name: 'github__create_issue',
    description: 'Open an issue in a GitHub repository.',
    inputSchema: { type: 'object', properties: { title: { type: 'string' } } },
    server: 'github',
    tags: ['code'],
  },
  {
    name: 'github__list_commits',
    description: 'List the commits of a branch.',
    inputSchema: { type: 'object', properties: { branch: { type: 'string' } } },
    server: 'github',
    tags: ['code'],
  },
];

describe('POST /v1/catalogs/{catalog}/search with the real model', () => {
  let app: TestApp;
  const catalog = uniqueName('search');
  beforeAll(async () => {
    app = await startTestApp({ EMBED_MODEL: 'use-lite' });
    // The shared model is loaded by the app itself here; testEmbedder() warms the same package.
    await testEmbedder();
    const put = await app.request('PUT', `/v1/catalogs/${catalog}`, { tools });
    expect(put.status).toBe(200);
    await app.deps.queue?.whenIdle();
    const progress = await app.request('GET', `/v1/catalogs/${catalog}`);
    expect(progress.body.embedding).toMatchObject({ model: 'use-lite', total: tools.length, done: tools.length });
  });
  afterAll(() => app.close());

  const search = (body: unknown) => app.request('POST', `/v1/catalogs/${catalog}/search`, body);

  it('ranks the right tool first in every mode, with explain and brief detail by default', async () => {
    for (const mode of ['hybrid', 'bm25', 'vector']) {
      const response = await search({ query: 'read the contents of a file', mode, top_k: 3, explain: true });
      expect(response.status).toBe(200);
      expect(response.body.results[0].name, mode).toBe('read_file');
      // BM25 returns only tools sharing a word with the query; the dense side ranks every tool.
      if (mode === 'bm25') expect(response.body.results.length).toBeLessThanOrEqual(3);
      else expect(response.body.results).toHaveLength(3);
      expect(response.body.results[0].parameters).toEqual(['path']);
      expect(response.body.results[0].description).toBe('Read the complete contents of a file from disk.');
      expect(typeof response.body.took_ms).toBe('number');
    }
    const hybrid = await search({ query: 'read the contents of a file', explain: true });
    expect(hybrid.body.results[0].explain.bm25.rank).toBe(1);
    expect(hybrid.body.results[0].explain.vector.rank).toBeGreaterThanOrEqual(1);
    expect(hybrid.body.results).toHaveLength(5);
  });

  it('finds a tool by meaning when no word overlaps (the dense retriever at work)', async () => {
    const response = await search({ query: 'is it going to rain tomorrow in Paris', mode: 'vector', top_k: 1 });
    expect(response.body.results[0].name).toBe('get_weather');
  });

  it('finds a tool through misspelled words, in every mode that reads BM25', async () => {
    for (const mode of ['bm25', 'hybrid']) {
      const response = await search({ query: 'wether forcast', mode, top_k: 3, explain: true });
      expect(response.status).toBe(200);
      expect(response.body.results[0].name, mode).toBe('get_weather');
      expect(response.body.results[0].explain.bm25, mode).not.toBeNull();
    }
  });

  it('gives the dense list the words a query misspells, and leaves English words it lacks as written', async () => {
    const embedder = app.deps.search.embedder!;
    const seen: string[] = [];
    const embedQuery = embedder.embedQuery.bind(embedder);
    const spy = vi.spyOn(embedder, 'embedQuery').mockImplementation((text) => {
      seen.push(text);
      return embedQuery(text);
    });
    const { getCatalog } = await import('../../src/store/catalog-store.js');
    try {
      // Twice: the first search may rank in SQL, the second from the catalog's index in hand.
      for (let round = 0; round < 2; round++) {
        if (round === 1) await app.deps.search.catalogIndexes!.get((await getCatalog(app.deps.search.db, 'default', catalog))!);
        seen.length = 0;
        const typo = await search({ query: 'wether forcast', mode: 'vector', top_k: 1 });
        expect(typo.status).toBe(200);
        expect(seen).toContain('wether forcast weather forecast');
        // With the index in hand the model is asked once, for the corrected text, not first for the query as written.
        if (round === 1) expect(seen).toEqual(['wether forcast weather forecast']);
        expect(typo.body.results[0].name).toBe('get_weather');
        seen.length = 0;
        // "reed" is one edit from the catalog's "read", but an English word: embedded as written only.
        expect((await search({ query: 'reed the file', mode: 'hybrid', top_k: 1 })).status).toBe(200);
        expect(seen).toEqual(['reed the file']);
      }
    } finally {
      spy.mockRestore();
    }
  });

  it('returns the full definition with detail=full', async () => {
    const response = await search({ query: 'send an email', top_k: 1, detail: 'full' });
    expect(response.body.results[0]).toMatchObject({ name: 'send_email', definition: tools[5] });
  });

  it('filters by tags before cutting, so a filtered search still fills top_k', async () => {
    const response = await search({ query: 'search the web for a page', tags: ['files'], top_k: 3 });
    expect(response.body.results.map((r: { name: string }) => r.name).sort()).toEqual(['list_directory', 'read_file', 'write_file']);
    const boosted = await search({ query: 'file', tags: ['files', 'web'], top_k: 8, explain: true });
    expect(boosted.body.results.every((r: { tags: string[] }) => r.tags.some((tag) => tag === 'files' || tag === 'web'))).toBe(true);
    expect(boosted.body.results[0].explain.tag_boost).toBeGreaterThan(0);
  });

  it('puts a tool named exactly in the query first, whether the names come from the store or the index in hand', async () => {
    const { getCatalog } = await import('../../src/store/catalog-store.js');
    const indexes = app.deps.search.catalogIndexes!;
    // A catalog never searched: its first search reads the names from the store.
    const fresh = uniqueName('exact');
    expect((await app.request('PUT', `/v1/catalogs/${fresh}`, { tools })).status).toBe(200);
    const row = (await getCatalog(app.deps.search.db, 'default', fresh))!;
    for (const held of [false, true]) {
      if (held) await indexes.get(row);
      expect(indexes.held(row) !== undefined, `index held: ${held}`).toBe(held);
      const response = await app.request('POST', `/v1/catalogs/${fresh}/search`, {
        query: 'use fetch_url to get the weather page, not send_fax',
        top_k: 2,
        explain: true,
      });
      expect(response.body.results[0].name).toBe('fetch_url');
      expect(response.body.results[0].explain.exact_name).toBe(true);
      expect(response.body.results[1].explain.exact_name).toBe(false);
    }
  });

  it("keeps a small catalog's vectors after its first search, and ranks with them as the exact scan in SQL did", async () => {
    const { getCatalog } = await import('../../src/store/catalog-store.js');
    const kept = app.deps.search.catalogVectors!;
    const fresh = uniqueName('small-vectors');
    expect((await app.request('PUT', `/v1/catalogs/${fresh}`, { tools })).status).toBe(200);
    await app.deps.queue?.whenIdle();
    const row = (await getCatalog(app.deps.search.db, 'default', fresh))!;
    const queries = ['is it going to rain tomorrow in Paris', 'read the contents of a file', 'open an issue in a github repository'];
    type Result = { name: string; score: number; explain: { vector: { rank: number; score: number } | null } };
    const answer = async (query: string, mode: string) =>
      ((await app.request('POST', `/v1/catalogs/${fresh}/search`, { query, mode, top_k: 9, explain: true })).body.results as Result[]).map((result) => ({
        name: result.name,
        score: result.score,
        vector: result.explain.vector,
      }));
    // Never searched: not held, and the first searches scan in SQL.
    expect(kept.held(row, 'use-lite')).toBeUndefined();
    const inSql = new Map<string, Awaited<ReturnType<typeof answer>>>();
    for (const query of queries) for (const mode of ['hybrid', 'vector']) inSql.set(`${mode}:${query}`, await answer(query, mode));
    // Read after the search, in the background.
    for (let tries = 0; tries < 50 && !kept.held(row, 'use-lite'); tries++) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(kept.held(row, 'use-lite')?.size).toBe(tools.length);
    for (const query of queries) {
      for (const mode of ['hybrid', 'vector']) {
        const inProcess = await answer(query, mode);
        const before = inSql.get(`${mode}:${query}`)!;
        expect(
          inProcess.map((result) => result.name),
          `${mode}: ${query}`,
        ).toEqual(before.map((result) => result.name));
        inProcess.forEach((result, i) => {
          expect(result.vector?.rank).toBe(before[i]!.vector?.rank);
          // Cosines in process (float64 over the stored float32s) and in pgvector agree to ~1e-5.
          expect(result.vector!.score).toBeCloseTo(before[i]!.vector!.score, 4);
          expect(result.score).toBeCloseTo(before[i]!.score, 6);
        });
      }
    }
  });

  it("ranks a catalog from memory as the store does, under a tag filter too (its tools' servers voting), without asking the store", async () => {
    const { getCatalog } = await import('../../src/store/catalog-store.js');
    const { rankRemembered, searchCatalog } = await import('../../src/search/catalog-search.js');
    const served = [
      ...tools,
      { name: 'fs__move_file', description: 'Move or rename a file on disk.', server: 'fs', tags: ['files'] },
      { name: 'fs__search_files', description: 'Find the files whose names match a pattern.', server: 'fs', tags: ['files', 'code'] },
      { name: 'browser__screenshot', description: 'Take a screenshot of a web page.', server: 'browser', tags: ['web', 'code'] },
      { name: 'browser__click', description: 'Click an element of the open web page.', server: 'browser', tags: ['web'] },
      { name: 'github__search_code', description: 'Search code across the repositories of GitHub.', server: 'github', tags: ['code', 'web'] },
    ];
    const name = uniqueName('remembered');
    expect((await app.request('PUT', `/v1/catalogs/${name}`, { tools: served })).status).toBe(200);
    await app.deps.queue?.whenIdle();
    const deps = app.deps.search;
    const row = (await getCatalog(deps.db, 'default', name))!;
    // What the answer from memory reads, held after a first search: the index, the vectors, the servers' means.
    const held = () => deps.catalogIndexes!.held(row) && deps.catalogVectors!.held(row, 'use-lite') && deps.serverStats!.held(row, 'use-lite');
    for (let tries = 0; tries < 50 && !held(); tries++) {
      expect((await app.request('POST', `/v1/catalogs/${name}/search`, { query: 'search the code of a repository' })).status).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(held()).toBeTruthy();
    const index = deps.catalogIndexes!.held(row)!;
    // The store: SQL for everything (no index, vectors or means in process). Memory: a store that throws if asked.
    const inSql = { ...deps, catalogIndexes: undefined, catalogVectors: undefined, serverStats: undefined };
    const asked: string[] = [];
    const untouchable = new Proxy(
      {},
      {
        get: (_, key) => {
          asked.push(String(key));
          throw new Error('the store was asked');
        },
      },
    ) as typeof deps.db;
    let voted = 0;
    const statements: string[] = [];
    // And as a catalog too large to scan in process (the most it scans: one tool fewer than it
    // has): each tag filter's vectors read by name, kept with their servers' means.
    const { CatalogVectorCache, CATALOG_VECTORS_MEMORY } = await import('../../src/search/catalog-vectors.js');
    const { VectorCache } = await import('../../src/store/vector-cache.js');
    const large = new CatalogVectorCache(new VectorCache(), CATALOG_VECTORS_MEMORY, served.length - 1);
    const largeStatements: string[] = [];
    for (const embedder of [deps.embedder, null]) {
      for (const tags of [undefined, ['code'], ['web', 'files']]) {
        for (const query of ['search the code of a repository', 'take a picture of the web page', 'move a file']) {
          const label = `${embedder ? 'model' : 'no model'}, tags ${tags}: ${query}`;
          const store = await searchCatalog(
            { ...inSql, embedder },
            { tenant: 'default', name },
            { query, topK: 8, mode: 'hybrid', ...(tags ? { tags } : {}) },
            row,
          );
          const memory = await rankRemembered({ ...deps, db: untouchable, embedder }, index, { pattern: query, depth: 8, ...(tags ? { tags } : {}) });
          expect(
            memory.found.map(([found]) => found),
            label,
          ).toEqual(store.tools.map(({ tool }) => tool.name));
          memory.found.forEach(([, score], at) => expect(score, label).toBeCloseTo(store.tools[at]!.score, 6));
          if (tags) voted += store.tools.filter(({ explain }) => explain.server_vote > 0).length;
          // Healthy, with the index and vectors held: the same ranking, the server lists in process.
          const healthy = await searchCatalog(
            { ...deps, db: observing(deps.db, (text) => statements.push(text)), embedder },
            { tenant: 'default', name },
            { query, topK: 8, mode: 'hybrid', ...(tags ? { tags } : {}) },
            row,
          );
          expect(
            healthy.tools.map(({ tool }) => tool.name),
            label,
          ).toEqual(store.tools.map(({ tool }) => tool.name));
          healthy.tools.forEach(({ score }, at) => expect(score, label).toBeCloseTo(store.tools[at]!.score, 6));
          const asLarge = await searchCatalog(
            { ...deps, db: observing(deps.db, (text) => largeStatements.push(text)), embedder, catalogVectors: large },
            { tenant: 'default', name },
            { query, topK: 8, mode: 'hybrid', ...(tags ? { tags } : {}) },
            row,
          );
          expect(
            asLarge.tools.map(({ tool }) => tool.name),
            `as large, ${label}`,
          ).toEqual(store.tools.map(({ tool }) => tool.name));
          asLarge.tools.forEach(({ score }, at) => expect(score, `as large, ${label}`).toBeCloseTo(store.tools[at]!.score, 6));
          // And from memory as large: under a tag, the set that search kept (untagged, a catalog this
          // large has no vectors in process, so the model's ranking needs the store).
          if (tags || !embedder) {
            const remembered = await rankRemembered({ ...deps, db: untouchable, embedder, catalogVectors: large }, index, {
              pattern: query,
              depth: 8,
              ...(tags ? { tags } : {}),
            });
            expect(
              remembered.found.map(([found]) => found),
              `from memory as large, ${label}`,
            ).toEqual(store.tools.map(({ tool }) => tool.name));
            remembered.found.forEach(([, score], at) => expect(score, `from memory as large, ${label}`).toBeCloseTo(store.tools[at]!.score, 6));
          }
        }
      }
    }
    // The tag filter's server votes are there to compare (the store's, in SQL over the tagged tools).
    expect(voted).toBeGreaterThan(0);
    expect(asked).toEqual([]);
    // The store's server lists (search-store.ts) were read by no healthy search; the rows were.
    expect(statements.filter((text) => text.includes('server is not null'))).toEqual([]);
    expect(statements.some((text) => text.includes('catalog_tools'))).toBe(true);
    // As large: each tag filter's tools were read by name once (its first search with the model),
    // and kept: three queries each, one read.
    expect(largeStatements.filter((text) => text.includes('as n(name)'))).toHaveLength(2);
    expect(largeStatements.filter((text) => text.includes('server is not null') || text.includes('unnest(d.tags)'))).toEqual([]);
    expect(large.bytes).toBeGreaterThan(0);
  });

  it("adds the server's vote to every tool of the query's top servers, in hybrid mode only", async () => {
    const { SERVER_BM25_WEIGHT, SERVER_VECTOR_WEIGHT } = await import('../../src/ranking/servers.js');
    const { RRF_K } = await import('../../src/ranking/rrf.js');
    type Row = { name: string; explain: { server_vote: number } };
    const voteOf = (rows: Row[]) => new Map(rows.map((row) => [row.name, row.explain.server_vote]));
    const hybrid = voteOf((await search({ query: 'open an issue in a github repository', top_k: 20, explain: true })).body.results);
    // The catalog's one server tops both server lists: its vote is the two weights at rank 1.
    const vote = (SERVER_BM25_WEIGHT + SERVER_VECTOR_WEIGHT) / (RRF_K + 1);
    expect(hybrid.get('github__create_issue')).toBeCloseTo(vote, 12);
    expect(hybrid.get('github__list_commits')).toBeCloseTo(vote, 12);
    expect(hybrid.get('read_file')).toBe(0);
    const bm25 = voteOf((await search({ query: 'open an issue in a github repository', mode: 'bm25', explain: true })).body.results);
    expect([...bm25.values()].every((value) => value === 0)).toBe(true);
  });

  it('rejects bad input with 400 and details, and unknown catalogs with 404', async () => {
    for (const body of [
      {},
      { query: '' },
      { query: 'x', top_k: 0 },
      { query: 'x', top_k: 101 },
      { query: 'x', mode: 'magic' },
      { query: 'x', tags: 'files' },
      { query: 'x', extra: 1 },
    ]) {
      const response = await search(body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.body.error.code).toBe('validation_failed');
      expect(response.body.error.details.length).toBeGreaterThan(0);
    }
    const missing = await app.request('POST', `/v1/catalogs/${uniqueName('none')}/search`, { query: 'x' });
    expect(missing.status).toBe(404);
  });
});

describe('POST /v1/catalogs/{catalog}/search without a model', () => {
  let app: TestApp;
  const catalog = uniqueName('search-bm25');
  beforeAll(async () => {
    app = await startTestApp({ EMBED_MODEL: 'none' });
    await app.request('PUT', `/v1/catalogs/${catalog}`, { tools });
  });
  afterAll(() => app.close());

  it('ranks hybrid with BM25 and says it is degraded; vector mode is 503', async () => {
    const hybrid = await app.request('POST', `/v1/catalogs/${catalog}/search`, { query: 'send an email' });
    expect(hybrid.status).toBe(200);
    expect(hybrid.body.results[0].name).toBe('send_email');
    expect(hybrid.body.degraded).toBe('embedder_unavailable');
    const vector = await app.request('POST', `/v1/catalogs/${catalog}/search`, { query: 'send an email', mode: 'vector' });
    expect(vector.status).toBe(503);
    expect(vector.body.error.code).toBe('service_unavailable');
  });

  it("derives a searched catalog's new index as a write answers, and the next search ranks what was written", async () => {
    const { getCatalog } = await import('../../src/store/catalog-store.js');
    const indexes = app.deps.search.catalogIndexes!;
    expect((await app.request('POST', `/v1/catalogs/${catalog}/search`, { query: 'send an email', mode: 'bm25' })).status).toBe(200);
    const before = (await getCatalog(app.deps.search.db, 'default', catalog))!;
    await indexes.get(before);
    const post = await app.request('POST', `/v1/catalogs/${catalog}/tools`, {
      tools: [{ name: 'send_fax', description: 'Send a fax to a number.', inputSchema: {} }],
    });
    expect(post.status).toBe(200);
    const after = (await getCatalog(app.deps.search.db, 'default', catalog))!;
    expect(after.revision).toBe(before.revision + 1);
    // No search asked for it: the write's own hook derived it from the held one.
    for (let tries = 0; !indexes.current(after) && tries < 100; tries++) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(indexes.current(after)?.changedSince?.[0]?.revision).toBe(before.revision);
    const found = await app.request('POST', `/v1/catalogs/${catalog}/search`, { query: 'send a fax', mode: 'bm25' });
    expect(found.body.results[0].name).toBe('send_fax');
    // Its tools' definition tokens (what tool-search answers from memory with) are the store's: as
    // an index built from the new revision's rows has them, and summing to the catalog's own sums.
    const { CatalogIndex } = await import('../../src/search/catalog-index.js');
    const { loadCatalogIndexRows } = await import('../../src/store/search-store.js');
    const derived = indexes.current(after)!;
    const built = await CatalogIndex.build(after.id, after.revision, (await loadCatalogIndexRows(app.deps.search.db, after.id))!.rows);
    for (const shape of ['anthropic', 'openai', 'as_sent'] as const) {
      expect(derived.totalTokens(shape), shape).toBe(after.definitionTokens[shape]);
      expect(built.totalTokens(shape), shape).toBe(after.definitionTokens[shape]);
      expect(derived.tokensOf('send_fax', shape), shape).toBeGreaterThan(0);
      for (const tool of [...tools, { name: 'send_fax' }])
        expect(derived.tokensOf(tool.name, shape), `${tool.name} ${shape}`).toBe(built.tokensOf(tool.name, shape));
    }
  });
});

describe('POST /v1/catalogs/{catalog}/search while the catalog is being embedded', () => {
  let app: TestApp;
  const catalog = uniqueName('search-pending');
  // Content never stored before (vectors are shared by content across catalogs and tests).
  const fresh = tools.map((tool) => ({ ...tool, description: `${tool.description} ${catalog}` }));
  beforeAll(async () => {
    // The model loads but nothing embeds: no worker in this process, and a queue prefix no other one reads.
    app = await startTestApp({ EMBED_MODEL: 'use-lite', EMBED_WORKER: 'off', QUEUE_PREFIX: uniqueName('pending') });
    expect((await app.request('PUT', `/v1/catalogs/${catalog}`, { tools: fresh })).status).toBe(200);
  }, 120_000);
  afterAll(() => app.close());

  it('says embeddings_pending with the progress, in hybrid and vector mode, and stops once every tool has a vector', async () => {
    const search = (body: Record<string, unknown>) => app.request('POST', `/v1/catalogs/${catalog}/search`, { query: 'send an email', ...body });
    const hybrid = await search({});
    expect(hybrid.body.results[0].name).toBe('send_email');
    expect(hybrid.body).toMatchObject({ degraded: 'embeddings_pending', embedding: { done: 0, total: tools.length } });
    const vector = await search({ mode: 'vector' });
    expect(vector.body).toMatchObject({ results: [], degraded: 'embeddings_pending', embedding: { done: 0, total: tools.length } });
    const bm25 = await search({ mode: 'bm25' });
    expect(bm25.body.degraded).toBeUndefined();

    // Every tool gets a vector (written here as the queue would): the next count clears the flag.
    const { writeVectors } = await import('../../src/store/embedding-store.js');
    const { currentRecipe } = await import('../../src/embed/embed-documents.js');
    const { sql } = await import('drizzle-orm');
    const { queryRows } = await import('../../src/store/database.js');
    const embedder = app.deps.search.embedder!;
    const rows = await queryRows<{ hash: string; name: string }>(
      app.deps.search.db,
      sql`select ct.hash, ct.name from catalog_tools ct join catalogs c on c.id = ct.catalog_id where c.name = ${catalog}`,
    );
    const vectors = await Promise.all(rows.map(async (row) => ({ hash: row.hash, vector: await embedder.embedQuery(row.name.replace(/_/g, ' ')) })));
    await writeVectors(app.deps.search.db, currentRecipe(embedder.modelId), vectors);
    await new Promise((resolve) => setTimeout(resolve, 1100)); // a pending catalog is counted at most once a second
    const done = await search({});
    expect(done.body.degraded).toBeUndefined();
    expect(done.body.embedding).toBeUndefined();
    expect((await search({ mode: 'vector' })).body.results.length).toBeGreaterThan(0);
  });
});

describe('server votes in a catalog of more than SERVER_SCAN_MAX servers', () => {
  let app: TestApp;
  const catalog = uniqueName('search-servers');
  beforeAll(async () => {
    // Above SERVER_SCAN_MAX servers the dense server list scores only candidate servers (those of
    // the dense tool list and of the BM25 server list), not every server's mean.
    const { SERVER_SCAN_MAX } = await import('../../src/ranking/servers.js');
    app = await startTestApp({ EMBED_MODEL: 'use-lite' });
    await testEmbedder();
    const fillers = Array.from({ length: SERVER_SCAN_MAX + 50 }, (_, index) => ({
      name: `filler${index}__record_entry`,
      description: `Records bookkeeping entry ${index} in ledger ${index % 17}.`,
      inputSchema: { type: 'object', properties: {} },
      server: `filler${index}`,
    }));
    const put = await app.request('PUT', `/v1/catalogs/${catalog}`, { tools: [...tools, ...fillers] });
    expect(put.status).toBe(200);
    await app.deps.queue?.whenIdle();
    const progress = await app.request('GET', `/v1/catalogs/${catalog}`);
    expect(progress.body.embedding).toMatchObject({ total: tools.length + fillers.length, done: tools.length + fillers.length });
    // The catalog's index in process (where the server lists are computed) is derived on its
    // first search; until then votes come from SQL. Wait for it, as a searched catalog has it.
    const { getCatalog } = await import('../../src/store/catalog-store.js');
    await app.deps.search.catalogIndexes!.get((await getCatalog(app.deps.search.db, 'default', catalog))!);
  }, 300_000);
  afterAll(() => app.close());

  it("gives the query's top server its whole vote from both server lists, as below the threshold", async () => {
    const { SERVER_BM25_WEIGHT, SERVER_VECTOR_WEIGHT } = await import('../../src/ranking/servers.js');
    const { RRF_K } = await import('../../src/ranking/rrf.js');
    type Row = { name: string; explain: { server_vote: number } };
    const response = await app.request('POST', `/v1/catalogs/${catalog}/search`, { query: 'open an issue in a github repository', top_k: 10, explain: true });
    expect(response.status).toBe(200);
    const votes = new Map((response.body.results as Row[]).map((row) => [row.name, row.explain.server_vote]));
    expect(response.body.results[0].name).toBe('github__create_issue');
    // github is first in the BM25 server list and first among the dense list's candidates.
    expect(votes.get('github__create_issue')).toBeCloseTo((SERVER_BM25_WEIGHT + SERVER_VECTOR_WEIGHT) / (RRF_K + 1), 12);
  });
});

describe('a tag filter over a mid-size catalog (more than EXACT_SCAN_MAX tools), with the real model', () => {
  let app: TestApp;
  const big = uniqueName('tagged-big');
  const only = uniqueName('tagged-only');
  const WORDS = ['invoice', 'printer', 'calendar', 'network', 'weather', 'payroll', 'ticket', 'sensor', 'mailbox', 'ledger'];
  // 2,100 tools (above EXACT_SCAN_MAX, within VECTORS_IN_PROCESS_MAX), a third of them tagged "ops".
  const many = Array.from({ length: 2_100 }, (_, i) => ({
    name: `tool_${String(i).padStart(4, '0')}`,
    description: `${WORDS[i % 10]} ${WORDS[(i * 7) % 10]} ${WORDS[(i * 3 + 1) % 10]} item ${i}`,
    inputSchema: { type: 'object' },
    ...(i % 3 === 0 ? { tags: ['ops'] } : {}),
  }));
  const tagged = many.filter((tool) => tool.tags);
  beforeAll(async () => {
    app = await startTestApp({ EMBED_MODEL: 'use-lite' });
    expect((await app.request('PUT', `/v1/catalogs/${big}`, { tools: many })).status).toBe(200);
    // The tagged tools alone: under EXACT_SCAN_MAX, so their vector search is the exact scan.
    expect((await app.request('PUT', `/v1/catalogs/${only}`, { tools: tagged })).status).toBe(200);
    await app.deps.queue?.whenIdle();
    for (const catalog of [big, only]) expect((await app.request('GET', `/v1/catalogs/${catalog}`)).body.embedding.pending).toBe(0);
  }, 300_000);
  afterAll(() => app?.close());

  it('ranks the tagged tools by their exact cosines (not an approximate index), as the same tools sent inline', async () => {
    // The first search finds no index of the catalog in hand (the tagged tools' names are read from
    // the store; the index loads meanwhile), later ones do: the same answer either way.
    for (const query of ['printer out of paper', 'printer out of paper', 'who pays the salaries', 'storm warning']) {
      const [filtered, exact] = await Promise.all([
        app.request('POST', `/v1/catalogs/${big}/search`, { query, mode: 'vector', tags: ['ops'], top_k: 50, explain: true }),
        app.request('POST', `/v1/catalogs/${only}/search`, { query, mode: 'vector', top_k: 50, explain: true }),
      ]);
      type Answer = { body: { results: Array<{ name: string; explain: { vector: { score: number } } }> } };
      const names = (answer: Answer) => answer.body.results.map((result) => result.name);
      expect(names(filtered), query).toEqual(names(exact));
      // Cosines in process (float64 over the stored float32s) and in pgvector agree to ~1e-5.
      filtered.body.results.forEach((result: Answer['body']['results'][number], i: number) =>
        expect(result.explain.vector.score).toBeCloseTo(exact.body.results[i].explain.vector.score, 4),
      );
      const [stored, inline] = await Promise.all([
        app.request('POST', '/v1/tool-search', { query, catalog: big, tags: ['ops'], max_results: 50 }),
        app.request('POST', '/v1/tool-search', { query, tools: many, tags: ['ops'], max_results: 50 }),
      ]);
      expect(
        inline.body.results.map((result: { name: string }) => result.name),
        query,
      ).toEqual(stored.body.results.map((result: { name: string }) => result.name));
    }
  });

  it("ranks a catalog too large to scan in process as a smaller one under a tag filter, reading the tagged tools' vectors by name and no tag filter in SQL", async () => {
    const { getCatalog } = await import('../../src/store/catalog-store.js');
    const { searchCatalog } = await import('../../src/search/catalog-search.js');
    const { CatalogVectorCache, CATALOG_VECTORS_MEMORY } = await import('../../src/search/catalog-vectors.js');
    const { VectorCache } = await import('../../src/store/vector-cache.js');
    const deps = app.deps.search;
    const row = (await getCatalog(deps.db, 'default', big))!;
    await deps.catalogIndexes!.get(row);
    // The same service with 1,000 tools as the most it scans in process: the 2,100-tool catalog is
    // then "large", and its 700 tagged tools are few enough.
    const statements: string[] = [];
    const large = {
      ...deps,
      db: observing(deps.db, (text) => statements.push(text)),
      catalogVectors: new CatalogVectorCache(new VectorCache(), CATALOG_VECTORS_MEMORY, 1_000),
    };
    for (const mode of ['hybrid', 'vector'] as const) {
      for (const query of ['printer out of paper', 'who pays the salaries', 'ledger of invoices for the payroll']) {
        const request = { query, topK: 50, mode, tags: ['ops'] };
        const [asLarge, asSmall] = [
          await searchCatalog(large, { tenant: 'default', name: big }, request, row),
          await searchCatalog(deps, { tenant: 'default', name: big }, request, row),
        ];
        expect(asLarge.degraded, query).toBeUndefined();
        expect(
          asLarge.tools.map(({ tool }) => tool.name),
          `${mode}: ${query}`,
        ).toEqual(asSmall.tools.map(({ tool }) => tool.name));
        asLarge.tools.forEach(({ score }, at) => expect(score, `${mode}: ${query}`).toBeCloseTo(asSmall.tools[at]!.score, 9));
      }
    }
    // The tagged tools' hashes were read by name, once: the set is kept for the revision and tags.
    // No statement filtered the catalog by tag in SQL.
    const readByName = () => statements.filter((text) => text.includes('as n(name)')).length;
    expect(readByName()).toBe(1);
    expect(statements.filter((text) => text.includes('unnest(d.tags)'))).toEqual([]);
    // A write makes a new revision: its first search under the tag (in any case) reads the tagged
    // tools again, and finds the changed one.
    const changed = { ...tagged[0]!, description: 'storm siren for the weather office' };
    expect((await app.request('POST', `/v1/catalogs/${big}/tools`, { tools: [changed] })).status).toBe(200);
    await app.deps.queue?.whenIdle();
    const next = (await getCatalog(deps.db, 'default', big))!;
    expect(next.revision).toBeGreaterThan(row.revision);
    await deps.catalogIndexes!.get(next);
    const request = { query: 'storm siren for the weather office', topK: 50, mode: 'hybrid' as const, tags: ['OPS'] };
    const [asLarge, asSmall] = [
      await searchCatalog(large, { tenant: 'default', name: big }, request, next),
      await searchCatalog(deps, { tenant: 'default', name: big }, request, next),
    ];
    expect(asLarge.degraded).toBeUndefined();
    expect(asLarge.tools[0]!.tool.name).toBe(changed.name);
    expect(asLarge.tools.map(({ tool }) => tool.name)).toEqual(asSmall.tools.map(({ tool }) => tool.name));
    expect(readByName()).toBe(2);
  });
});
