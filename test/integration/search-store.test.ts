import { randomBytes } from 'node:crypto';
import { sql, type SQL } from 'drizzle-orm';
import { beforeAll, describe, expect, it } from 'vitest';
import { scoreBm25 } from '../../src/ranking/bm25.js';
import { replaceCatalog, type CatalogToolRow } from '../../src/store/catalog-store.js';
import type { Database } from '../../src/store/database.js';
import { EMBED_TEXT_VERSION, TERMS_VERSION } from '../../src/ranking/search-text.js';
import { writeVectors } from '../../src/store/embedding-store.js';
import { searchBm25, searchServersBm25, searchServersVector, searchVector, type Corpus } from '../../src/store/search-store.js';
import { queryRows } from '../../src/store/database.js';
import type { CountedDocument, Executor } from '../../src/store/tool-store.js';
import { writtenChanges } from '../../src/catalog/catalog-service.js';
import { observing, storeKind, testDatabase, uniqueName } from '../helpers/database.js';

/** A document with hand-set term counts (the SQL must use exactly these, not re-tokenize). */
function toyDocument(name: string, termFreqs: Record<string, number>): CountedDocument {
  const map = new Map(Object.entries(termFreqs));
  const hash = randomBytes(32).toString('hex');
  return {
    hash,
    tool: { name, description: '', inputSchema: null, tags: [name === 'd3' ? 'aquatic' : 'pets'], server: null, format: 'mcp', definition: { name } },
    termFreqs: map,
    length: [...map.values()].reduce((sum, tf) => sum + tf, 0),
    // Stamped with this release's recipe: the store's lists and the index rank these terms as given.
    termsVersion: TERMS_VERSION,
    tokens: { anthropic: 10, openai: 13, as_sent: 7 },
  };
}

// The toy corpus of test/unit/bm25.test.ts, with the values worked out by hand there, counted as
// there in BM25_TERM_UNIT (2) units per occurrence: N = 3, avgdl = 2 occurrences, k1 = 1.2, b = 0.75.
const CAT_D1 = 1.182369;
const DOG_D1 = 0.390192;
const DOG_D2 = 0.590862;

describe('BM25 and vector search in SQL', () => {
  let database: Database;
  let docs: CountedDocument[];
  let catalog: Corpus;
  beforeAll(async () => {
    database = await testDatabase();
    docs = [toyDocument('d1', { cat: 4, dog: 2 }), toyDocument('d2', { dog: 2 }), toyDocument('d3', { fish: 4 })];
    const write = await replaceCatalog(database.db, uniqueName('toy'), 'toy', docs);
    catalog = { kind: 'catalog', catalogId: write.catalog.id };
  });

  it('scores a stored catalog exactly as the hand-computed Okapi BM25', async () => {
    const dog = await searchBm25(database.db, catalog, { terms: ['dog'], weights: [1] }, 10);
    expect(dog.map(([id]) => id)).toEqual(['d2', 'd1']);
    expect(dog[0]![1]).toBeCloseTo(DOG_D2, 5);
    expect(dog[1]![1]).toBeCloseTo(DOG_D1, 5);
    const both = await searchBm25(database.db, catalog, { terms: ['cat', 'dog'], weights: [1, 1] }, 10);
    expect(both.map(([id]) => id)).toEqual(['d1', 'd2']);
    expect(both[0]![1]).toBeCloseTo(CAT_D1 + DOG_D1, 5);
  });

  it('computes N, avgdl and df over an arbitrary set of hashes, as the pure function does', async () => {
    const subset: Corpus = { kind: 'hashes', hashes: [docs[0]!.hash, docs[1]!.hash] };
    const sqlRanked = await searchBm25(database.db, subset, { terms: ['cat', 'dog'], weights: [1, 1] }, 10);
    const pure = scoreBm25(
      docs.slice(0, 2).map((doc) => ({ id: doc.hash, termFreqs: doc.termFreqs, length: doc.length })),
      ['cat', 'dog'],
    );
    expect(sqlRanked.map(([id]) => id)).toEqual(pure.map(([id]) => id));
    sqlRanked.forEach(([, score], index) => expect(score).toBeCloseTo(pure[index]![1], 9));
  });

  it('filters by tag before ranking, so statistics cover only the tools that pass', async () => {
    const pets = await searchBm25(database.db, { ...catalog, tags: ['pets'] } as Corpus, { terms: ['fish', 'dog'], weights: [1, 1] }, 10);
    expect(pets.map(([id]) => id)).toEqual(['d2', 'd1']);
    const pure = scoreBm25(
      docs.slice(0, 2).map((doc) => ({ id: doc.tool.name, termFreqs: doc.termFreqs, length: doc.length })),
      ['dog'],
    );
    pets.forEach(([, score], index) => expect(score).toBeCloseTo(pure[index]![1], 9));
  });

  it('ranks a catalog in process (its index per revision) as the SQL does, with and without a tag filter', async () => {
    const { CatalogIndexCache } = await import('../../src/search/catalog-index.js');
    let state = 5;
    const random = () => (state = (state * 1103515245 + 12345) % 2147483648) / 2147483648;
    const words = Array.from({ length: 30 }, (_, i) => `w${i}`);
    const corpus = Array.from({ length: 300 }, (_, i) => {
      const termFreqs: Record<string, number> = {};
      for (let j = 0; j < 1 + Math.floor(random() * 8); j++) termFreqs[words[Math.floor(random() * words.length)]!] = 1 + Math.floor(random() * 4);
      const doc = toyDocument(`tool_${i}`, termFreqs);
      return { ...doc, tool: { ...doc.tool, tags: [['Files', 'web', 'mail'][i % 3]!, ...(i % 7 === 0 ? ['extra'] : [])] } };
    });
    const write = await replaceCatalog(database.db, uniqueName('index'), 'index', corpus);
    const index = (await new CatalogIndexCache(database.db).get(write.catalog))!;
    expect(index.size).toBe(300);
    // Postgres groups the sums differently: compare scores to 1e-9 and order by (score, id) rounded.
    const canonical = (ranked: [string, number][]) =>
      ranked
        .map(([id, score]) => `${score.toFixed(9)} ${id}`)
        .sort()
        .reverse();
    for (let q = 0; q < 20; q++) {
      const terms = [...new Set(Array.from({ length: 1 + (q % 4) }, () => words[Math.floor(random() * words.length)]!))];
      for (const tags of [undefined, ['files'], ['WEB', 'extra']]) {
        // Weights below 1 are typo matching's corrected words (ranking/fuzzy-terms.ts).
        const weights = terms.map((_, i) => (i % 2 === 1 ? 0.6 : 1));
        const inSql = await searchBm25(database.db, { kind: 'catalog', catalogId: write.catalog.id, ...(tags ? { tags } : {}) }, { terms, weights }, 25);
        const inProcess = index.search(new Map(terms.map((term, i) => [term, weights[i]!])), 25, tags);
        expect(canonical(inProcess)).toEqual(canonical(inSql));
      }
    }
    expect(index.tagsOf(['tool_0', 'tool_1', 'missing'])).toEqual(
      new Map([
        ['tool_0', ['Files', 'extra']],
        ['tool_1', ['web']],
      ]),
    );
  });

  it('gives typo matching the same vocabulary from the store as from the in-process index, tag filter aside', async () => {
    const { CatalogIndexCache } = await import('../../src/search/catalog-index.js');
    const { expandTerms, expandTermsLoaded } = await import('../../src/ranking/fuzzy-terms.js');
    const { loadTermFrequencies } = await import('../../src/store/search-store.js');
    const { Bm25Index } = await import('../../src/ranking/bm25-index.js');
    const docs = [
      toyDocument('get_weather', { weather: 2, forecast: 1, city: 1 }),
      toyDocument('whether_flag', { whether: 1, flag: 1 }),
      toyDocument('web_search', { search: 2, web: 1, pages: 1 }),
      toyDocument('stock_price', { stock: 2, price: 1 }),
      toyDocument('stack_trace', { stack: 1, trace: 1 }),
      toyDocument('storks', { stork: 1 }),
    ];
    const write = await replaceCatalog(database.db, uniqueName('typos'), 'typos', docs);
    const index = (await new CatalogIndexCache(database.db).get(write.catalog))!;
    const catalog: Corpus = { kind: 'catalog', catalogId: write.catalog.id };
    const hashes: Corpus = { kind: 'hashes', hashes: docs.map((doc) => doc.hash) };
    const hashIndex = new Bm25Index(docs.map((doc) => ({ id: doc.hash, termFreqs: doc.termFreqs, length: doc.length })));
    const queries = [['wether', 'forcast', 'city'], ['serch', 'web'], ['stxck', 'prise'], ['weather'], ['zzzz', 'qq'], []];
    for (const terms of queries) {
      const inProcess = expandTerms(terms, index.bm25.vocabulary());
      expect(await expandTermsLoaded(terms, (words) => loadTermFrequencies(database.db, catalog, words)), terms.join(' ')).toEqual(inProcess);
      // A tag filter does not change which words are the corpus's.
      expect(await expandTermsLoaded(terms, (words) => loadTermFrequencies(database.db, { ...catalog, tags: ['aquatic'] }, words))).toEqual(inProcess);
      expect(await expandTermsLoaded(terms, (words) => loadTermFrequencies(database.db, hashes, words))).toEqual(expandTerms(terms, hashIndex.vocabulary()));
    }
    expect(expandTerms(['wether', 'forcast'], index.bm25.vocabulary()).weights).toEqual(
      new Map([
        ['wether', 1],
        ['forcast', 1],
        ['weather', 0.6],
        ['whether', 0.6],
        ['forecast', 0.6],
      ]),
    );
  });

  it('ranks vectors by cosine similarity, exact scan and HNSW alike', async () => {
    const model = `test-model-${randomBytes(3).toString('hex')}`;
    await writeVectors(database.db, { model, textVersion: EMBED_TEXT_VERSION }, [
      { hash: docs[0]!.hash, vector: [1, 0, 0] },
      { hash: docs[1]!.hash, vector: [0.6, 0.8, 0] },
      { hash: docs[2]!.hash, vector: [0, 0, 1] },
    ]);
    await database.db.execute(
      sql.raw(
        `create index if not exists "hnsw_${model.replaceAll('-', '_')}" on tool_embeddings using hnsw ((embedding::vector(3)) vector_cosine_ops) where model = '${model}'`,
      ),
    );
    const exact = await searchVector(database.db, catalog, { model, vector: [1, 0, 0], useIndex: false }, 10);
    expect(exact.map(([id]) => id)).toEqual(['d1', 'd2', 'd3']);
    expect(exact[0]![1]).toBeCloseTo(1, 6);
    expect(exact[1]![1]).toBeCloseTo(0.6, 6);
    const indexed = await searchVector(database.db, catalog, { model, vector: [1, 0, 0], useIndex: true }, 10);
    expect(indexed.map(([id]) => id)).toEqual(['d1', 'd2', 'd3']);
    const filtered = await searchVector(database.db, { ...catalog, tags: ['aquatic'] } as Corpus, { model, vector: [1, 0, 0], useIndex: true }, 10);
    expect(filtered.map(([id]) => id)).toEqual(['d3']);
  });
});

describe('server lists in SQL', () => {
  it('rank servers exactly as the in-process statistics do: BM25 over their tools together, cosine to their mean vector', async () => {
    const { Bm25Index } = await import('../../src/ranking/bm25-index.js');
    const { rankByCosine } = await import('../../src/ranking/vector-scan.js');
    const { serverCentroids, serverDocuments } = await import('../../src/ranking/servers.js');
    const database = await testDatabase();
    const model = `server-model-${randomBytes(3).toString('hex')}`;
    const words = ['paper', 'search', 'read', 'file', 'stock', 'price', 'chart', 'news'];
    // 30 tools on 7 servers (and 3 without one), with uneven term counts and lengths.
    const docs = Array.from({ length: 30 }, (_, i) => {
      const termFreqs: Record<string, number> = {};
      for (let j = 0; j < 1 + (i % 4); j++) termFreqs[words[(i * 3 + j * 5) % words.length]!] = 1 + ((i + j) % 3);
      const doc = toyDocument(`t${String(i).padStart(2, '0')}`, termFreqs);
      return { ...doc, tool: { ...doc.tool, server: i < 27 ? `s${i % 7}` : null, tags: [i % 2 === 0 ? 'even' : 'odd'] } };
    });
    const write = await replaceCatalog(database.db, uniqueName('servers'), 'servers', docs);
    const unit = (values: number[]) => values.map((value) => value / Math.hypot(...values));
    const vectors = new Map(docs.slice(0, 28).map((doc, i) => [doc.tool.name, unit([Math.sin(i), Math.cos(i * 1.3), (i % 5) - 2, 0.4])]));
    await writeVectors(
      database.db,
      { model, textVersion: EMBED_TEXT_VERSION },
      docs.slice(0, 28).map((doc) => ({ hash: doc.hash, vector: vectors.get(doc.tool.name)! })),
    );
    const query = unit([0.3, -0.2, 1, 0.5]);
    const terms = ['paper', 'read', 'price', 'absent'];
    for (const [corpus, kept] of [
      [{ kind: 'catalog', catalogId: write.catalog.id }, docs],
      [{ kind: 'catalog', catalogId: write.catalog.id, tags: ['even'] }, docs.filter((_, i) => i % 2 === 0)],
      [{ kind: 'hashes', hashes: docs.slice(5).map((doc) => doc.hash) }, docs.slice(5)],
    ] as [Corpus, typeof docs][]) {
      const id = (doc: CountedDocument) => (corpus.kind === 'catalog' ? doc.tool.name : doc.hash);
      const expected = serverDocuments(kept.map((doc) => ({ id: id(doc), server: doc.tool.server, termFreqs: doc.termFreqs, length: doc.length })));
      const weights = terms.map((_, i) => (i % 2 === 1 ? 0.6 : 1));
      const bm25 = await searchServersBm25(database.db, corpus, { terms, weights }, 10);
      const pure = new Bm25Index(expected.documents).searchWeighted(new Map(terms.map((term, i) => [term, weights[i]!])), 10);
      expect(bm25.ranked.map(([server]) => server)).toEqual(pure.map(([server]) => server));
      bm25.ranked.forEach(([, score], index) => expect(score).toBeCloseTo(pure[index]![1], 9));
      const sorted = (ids: readonly string[]) => [...ids].sort();
      for (const [server] of bm25.ranked) expect(sorted(bm25.members.get(server)!)).toEqual(sorted(expected.members.get(server)!));

      const dense = await searchServersVector(database.db, corpus, { model, vector: query }, 10);
      const byId = new Map(kept.flatMap((doc) => (vectors.has(doc.tool.name) ? [[id(doc), vectors.get(doc.tool.name)!] as const] : [])));
      const centroids = rankByCosine(query, serverCentroids(expected.members, byId), 10);
      expect(dense.ranked.map(([server]) => server)).toEqual(centroids.map(([server]) => server));
      dense.ranked.forEach(([, score], index) => expect(score).toBeCloseTo(centroids[index]![1], 5));
      // Members are all the server's tools in the corpus, with a vector or not.
      for (const [server] of dense.ranked) expect(sorted(dense.members.get(server)!)).toEqual(sorted(expected.members.get(server)!));
    }
    expect(await searchServersBm25(database.db, { kind: 'catalog', catalogId: write.catalog.id }, { terms: [], weights: [] }, 10)).toEqual({
      ranked: [],
      members: new Map(),
    });

    // The same lists from the statistics a catalog search keeps in process (search/catalog-index.ts,
    // search/server-stats.ts).
    const { ServerStatsCache } = await import('../../src/search/server-stats.js');
    const { CatalogIndexCache } = await import('../../src/search/catalog-index.js');
    const cache = new ServerStatsCache();
    const catalog = { id: write.catalog.id, revision: write.catalog.revision };
    const corpus: Corpus = { kind: 'catalog', catalogId: catalog.id };
    const index = (await new CatalogIndexCache(database.db).get(catalog))!.servers;
    for (const query of [terms, ['stock', 'chart'], ['news']]) {
      const inSql = await searchServersBm25(database.db, corpus, { terms: query, weights: query.map(() => 1) }, 10);
      const kept = index.bm25.search(query, 10);
      expect(kept.map(([server]) => server)).toEqual(inSql.ranked.map(([server]) => server));
      kept.forEach(([server, score], i) => {
        expect(score).toBeCloseTo(inSql.ranked[i]![1], 9);
        expect(index.members.get(server)).toEqual(inSql.members.get(server));
      });
    }
    const means = await cache.means(database.db, catalog, model);
    const dense = await searchServersVector(database.db, corpus, { model, vector: query }, 10);
    const kept = rankByCosine(query, means, 10);
    expect(kept.map(([server]) => server)).toEqual(dense.ranked.map(([server]) => server));
    kept.forEach(([, score], i) => expect(score).toBeCloseTo(dense.ranked[i]![1], 5));
  });

  it("keeps a catalog's server statistics per revision, and its mean vectors only once every server tool has one", async () => {
    const { ServerStatsCache } = await import('../../src/search/server-stats.js');
    const { CatalogIndexCache } = await import('../../src/search/catalog-index.js');
    const database = await testDatabase();
    const indexes = new CatalogIndexCache(database.db);
    const model = `means-model-${randomBytes(3).toString('hex')}`;
    const tool = (name: string, server: string, term: string) => {
      const doc = toyDocument(name, { [term]: 1 });
      return { ...doc, tool: { ...doc.tool, server } };
    };
    const docs = [tool('a1', 'a', 'alpha'), tool('a2', 'a', 'alpha'), tool('b1', 'b', 'beta')];
    const name = uniqueName('kept');
    const first = await replaceCatalog(database.db, name, name, docs);
    const cache = new ServerStatsCache();
    const recipe = { model, textVersion: EMBED_TEXT_VERSION };
    // a2 has no vector yet: server a's mean is a1's alone, and it is read again next time.
    await writeVectors(database.db, recipe, [
      { hash: docs[0]!.hash, vector: [1, 0] },
      { hash: docs[2]!.hash, vector: [0, 1] },
    ]);
    expect([...(await cache.means(database.db, first.catalog, model)).get('a')!]).toEqual([1, 0]);
    await writeVectors(database.db, recipe, [{ hash: docs[1]!.hash, vector: [0, 1] }]);
    const complete = (await cache.means(database.db, first.catalog, model)).get('a')!;
    expect(complete[0]).toBeCloseTo(Math.SQRT1_2, 6);
    // Complete: kept, even when the store's vectors go away.
    await database.db.execute(sql`delete from tool_embeddings where model = ${model}`);
    expect((await cache.means(database.db, first.catalog, model)).get('a')).toBe(complete);

    const firstIndex = (await indexes.get(first.catalog))!;
    expect(firstIndex.servers.bm25.search(['beta'])).toHaveLength(1);
    expect(indexes.current(first.catalog)).toBe(firstIndex);
    // A new revision of the catalog is read afresh (as a search on any replica reads the revision
    // first); the index it replaces is still what it was for whoever holds it.
    const second = await replaceCatalog(database.db, name, name, [...docs, tool('c1', 'c', 'beta')]);
    expect(second.catalog.revision).toBeGreaterThan(first.catalog.revision);
    // The search that first sees the new revision ranks in SQL while the index is read.
    expect(indexes.current(second.catalog)).toBeUndefined();
    const secondIndex = (await indexes.get(second.catalog))!;
    expect(secondIndex.revision).toBe(second.catalog.revision);
    expect(
      secondIndex.servers.bm25
        .search(['beta'])
        .map(([server]) => server)
        .sort(),
    ).toEqual(['b', 'c']);
    expect(firstIndex.servers.members.has('c')).toBe(false);
    // An older revision asked for later (a search that read the catalog before the write) gets the newer index.
    expect(indexes.current(first.catalog)).toBe(secondIndex);
  });
});

describe("a newer revision's index derived from the older one and the change log", () => {
  it('ranks, filters, votes by server and corrects typos exactly as the index read whole and the SQL, laid over its base or merged', {
    timeout: 120_000,
  }, async () => {
    const { CatalogIndex, CatalogIndexCache } = await import('../../src/search/catalog-index.js');
    const { ServerStatsCache } = await import('../../src/search/server-stats.js');
    const { seededRandom } = await import('../helpers/seeded-random.js');
    const { upsertCatalogTools, deleteCatalogTool, replaceServerTools, getCatalog, listCatalogTools } = await import('../../src/store/catalog-store.js');
    const database = await testDatabase();
    const random = seededRandom(7);
    const words = ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot', 'golf', 'hotel', 'india', 'juliet', 'kilo', 'lima'];
    const model = `derive-model-${randomBytes(3).toString('hex')}`;
    const recipe = { model, textVersion: EMBED_TEXT_VERSION };
    const termsOf = new Map<string, Record<string, number>>();
    const tool = (name: string, server: string | null) => {
      const terms: Record<string, number> = {};
      for (let k = 0; k < 1 + Math.floor(random() * 4); k++) terms[words[Math.floor(random() * words.length)]!] = 1 + Math.floor(random() * 3);
      termsOf.set(name, terms);
      const doc = toyDocument(name, terms);
      return { ...doc, tool: { ...doc.tool, server, tags: [words[Math.floor(random() * 3)]!] } };
    };
    const vectorsOf = (docs: CountedDocument[]) => docs.map((doc) => ({ hash: doc.hash, vector: [random() - 0.5, random() - 0.5, random() - 0.5] }));
    const docs = Array.from({ length: 60 }, (_, i) => tool(`t${String(i).padStart(2, '0')}`, i % 10 === 9 ? null : `s${i % 6}`));
    const name = uniqueName('derive');
    const tenant = name;
    await replaceCatalog(database.db, tenant, name, docs);
    await writeVectors(database.db, recipe, vectorsOf(docs));
    // `indexes` lays every change over the first index read (merges only past 1,000 names);
    // `merging` merges each change into a base of its own at once; `replica`, a second process
    // sharing the store, searches only every third revision (its changes span several revisions).
    const indexes = new CatalogIndexCache(database.db);
    const merging = new CatalogIndexCache(database.db, undefined, { minNames: 1, quietMs: 0 });
    const replica = new CatalogIndexCache(database.db, undefined, { minNames: 4, quietMs: 0 });
    // `writer`, the process that writes: each upsert's index laid over the last from the write's own
    // documents (catalog-service `writtenChanges`), never read back: its reads fail, the search's too.
    const writer = new CatalogIndexCache(database.db);
    const unread = new Proxy(
      {},
      {
        get() {
          throw new Error('the writer read its own changes back');
        },
      },
    ) as unknown as Executor;
    let writerHolds = false;
    const upsert = async (written: CountedDocument[], laid = true) => {
      const write = await upsertCatalogTools(database.db, tenant, name, written);
      writer.refresh(write.catalog, unread, writtenChanges(write, written));
      writerHolds = laid;
    };
    const means = new ServerStatsCache();
    let catalog = (await getCatalog(database.db, tenant, name))!;
    await writer.get(catalog);
    await indexes.get(catalog);
    await merging.get(catalog);
    await replica.get(catalog);
    await means.means(database.db, catalog, model);
    let step = 0;
    let overlays = 0;
    let merges = 0;
    // Postgres groups the sums differently: scores to 1e-9, ordered by (score, id) rounded.
    const canonical = (ranked: [string, number][]) =>
      ranked
        .map(([id, score]) => `${score.toFixed(9)} ${id}`)
        .sort()
        .reverse();

    type Index = Awaited<ReturnType<typeof CatalogIndex.build>>;
    const expectEqual = async (label: string, derived: Index, whole: Index) => {
      expect(derived.revision, label).toBe(catalog.revision);
      expect(derived.size, label).toBe(whole.size);
      const queries = [
        ...words.map((word) => [word]),
        ['alpha', 'delta'],
        ['echo', 'kilo', 'lima'],
        ['bravo', 'golf', 'hotel', 'juliet'],
        ['revised', 'alpha'],
      ];
      for (const query of queries) {
        const weights = new Map(query.map((term, i) => [term, i === 0 ? 1 : 0.6]));
        expect(derived.search(weights, 100), `${label}: ${query}`).toEqual(whole.search(weights, 100));
        expect(derived.search(weights, 100, ['alpha']), `${label}: ${query} tagged`).toEqual(whole.search(weights, 100, ['alpha']));
        expect(derived.servers.bm25.searchWeighted(weights, 100), `${label}: ${query} servers`).toEqual(whole.servers.bm25.searchWeighted(weights, 100));
        // What a search ranks servers with (an overlay's changed servers made from the query's terms).
        expect(derived.serversFor([...weights.keys()]).bm25.searchWeighted(weights, 100), `${label}: ${query} servers for the query`).toEqual(
          whole.servers.bm25.searchWeighted(weights, 100),
        );
        expect(derived.serversCarrying(['alpha'], query).bm25.searchWeighted(weights, 100), `${label}: ${query} tagged servers`).toEqual(
          whole.serversCarrying(['alpha'], query).bm25.searchWeighted(weights, 100),
        );
        for (const tags of [undefined, ['alpha']]) {
          const inSql = await searchBm25(
            database.db,
            { kind: 'catalog', catalogId: catalog.id, ...(tags ? { tags } : {}) },
            { terms: query, weights: [...weights.values()] },
            100,
          );
          expect(canonical(derived.search(weights, 100, tags)), `${label}: ${query} ${tags ?? ''} as the SQL`).toEqual(canonical(inSql));
        }
      }
      expect(derived.namesCarrying(['alpha', 'bravo']), label).toEqual(whole.namesCarrying(['alpha', 'bravo']));
      for (const shape of ['anthropic', 'openai', 'as_sent'] as const) expect(derived.totalTokens(shape), `${label}: ${shape}`).toBe(whole.totalTokens(shape));
      const sortedMembers = (members: ReadonlyMap<string, readonly string[]>) =>
        new Map([...members].map(([server, list]): [string, string[]] => [server, [...list].sort()]).sort());
      expect(sortedMembers(derived.servers.members), label).toEqual(sortedMembers(whole.servers.members));
      // Every tool's place and server, and none for a tool the catalog no longer has.
      const names = new Set([
        ...Array.from({ length: whole.size }, (_, at) => whole.bm25.idAt(at)),
        ...docs.map((doc) => doc.tool.name),
        'n1',
        'n2',
        'n3',
        'n5',
        'u1',
        'none',
      ]);
      for (const tool of names) {
        const at = derived.bm25.indexOf(tool);
        expect(at === undefined ? undefined : derived.bm25.idAt(at), `${label}: place of ${tool}`).toBe(
          whole.bm25.indexOf(tool) === undefined ? undefined : tool,
        );
        expect(derived.servers.serverOf.get(tool), `${label}: server of ${tool}`).toBe(whole.servers.serverOf.get(tool));
      }
      for (const word of [...words, 'alpah', 'delat', 'ech']) {
        expect(derived.bm25.vocabulary().df(word), `${label}: df ${word}`).toBe(whole.bm25.vocabulary().df(word));
        expect(new Set(derived.bm25.vocabulary().near(word)), `${label}: near ${word}`).toEqual(new Set(whole.bm25.vocabulary().near(word)));
      }
      expect(derived.tagsOf(['t00', 't31', 'n1'])).toEqual(whole.tagsOf(['t00', 't31', 'n1']));
    };

    const expectSame = async (label: string, withMeans = true) => {
      catalog = (await getCatalog(database.db, tenant, name))!;
      const derived = (await indexes.forSearch(catalog, database.db))!;
      expect(derived, label).toBeDefined();
      expect(derived.revision, label).toBe(catalog.revision);
      expect(derived.changedSince?.length, label).toBeGreaterThan(0);
      if (derived.delta) overlays++;
      const whole = (await new CatalogIndexCache(database.db).get(catalog))!;
      await expectEqual(label, derived, whole);
      // The writer's own index of its upsert, in hand before any search; after other writes, read.
      if (writerHolds) {
        const own = await writer.forSearch(catalog, unread);
        expect(own, `${label}: the writer's index`).toBeDefined();
        await expectEqual(`${label}, from the write's own documents`, own!, whole);
      } else await writer.forSearch(catalog, database.db);
      writerHolds = false;
      // Merged in the background: searched while the merge runs, then merged.
      const laid = (await merging.forSearch(catalog, database.db))!;
      await expectEqual(`${label}, laid over before the merge`, laid, whole);
      const merged = merging.merged();
      await expectEqual(`${label}, while merging`, merging.held(catalog)!, whole);
      await merged;
      const mergedIndex = merging.held(catalog)!;
      if (!mergedIndex.delta) merges++;
      await expectEqual(`${label}, merged`, mergedIndex, whole);
      if (step++ % 3 === 2) {
        await expectEqual(`${label}, on a replica`, (await replica.forSearch(catalog, database.db))!, whole);
        await replica.merged();
        await expectEqual(`${label}, on a replica after its merge`, replica.held(catalog)!, whole);
      }
      if (!withMeans) return;
      // The dense server list's means: only the changed servers read again, the same as all read afresh.
      const kept = await means.means(database.db, catalog, model, derived.changedSince);
      const fresh = await new ServerStatsCache().means(database.db, catalog, model);
      expect([...kept.keys()].sort(), label).toEqual([...fresh.keys()].sort());
      for (const [server, mean] of fresh) [...mean].forEach((x, i) => expect(kept.get(server)![i]).toBeCloseTo(x, 6));
    };

    // New tools (one on a new server), changed ones (one moving to another server), none removed.
    const added = [tool('n1', 's9'), tool('n2', 's0'), tool('n3', null), { ...tool('t01', 's2') }, tool('t02', 's2')];
    await upsert(added);
    await writeVectors(database.db, recipe, vectorsOf(added));
    await expectSame('upsert');
    // A tool removed, then every tool of one server (the server goes).
    await deleteCatalogTool(database.db, tenant, name, 't10');
    await expectSame('delete');
    for (const doc of docs.filter((doc) => doc.tool.server === 's5')) await deleteCatalogTool(database.db, tenant, name, doc.tool.name);
    await expectSame('server emptied');
    // An upstream's sync, two revisions at once: its new tool u1 lands; t03, a pushed tool's name,
    // stays the pushed tool's (a sync never takes a name another source holds).
    const synced = [tool('t03', 's3'), tool('u1', 's3')];
    await replaceServerTools(database.db, tenant, name, 's3', synced);
    await writeVectors(database.db, recipe, vectorsOf(synced));
    // Two revisions: the sync's is not the writer's, so the upsert's index is read.
    await upsert([tool('n1', 's1')], false);
    await expectSame('sync and upsert');
    // Two derivations with no means between: the means kept two revisions back serve.
    await upsert([tool('t20', 's4')]);
    await expectSame('first of two', false);
    const two = [tool('n5', 's0'), tool('n6', 's8')];
    await upsert(two);
    await writeVectors(database.db, recipe, vectorsOf([...two]));
    await expectSame('second of two');
    // A bulk revision in place: a dozen tools keep their terms and gain one (each goes back to its
    // own place, and only the lists of the terms that changed are written again), one also moving server.
    const revised = ['t07', 't13', 't19', 't25', 't31', 't37', 't08', 't14', 't20', 't26', 't32', 't38'].map((toolName, k) => {
      const doc = toyDocument(toolName, { ...termsOf.get(toolName)!, revised: 1 + (k % 2) });
      return { ...doc, tool: { ...doc.tool, server: k === 0 ? 's4' : `s${Number(toolName.slice(1)) % 6}`, tags: ['alpha'] } };
    });
    await upsert(revised);
    await writeVectors(database.db, recipe, vectorsOf(revised));
    await expectSame('revision in place');
    // A run of small writes, each index derived from the last (its id lookup chains over the last
    // one's and is built afresh past LOOKUP_DEPTH), one of them removing the catalog's first tool.
    for (let k = 0; k < 10; k++) {
      if (k === 4) await deleteCatalogTool(database.db, tenant, name, 't00');
      else await upsert([tool(`t${30 + k}`, `s${k % 6}`)]);
      await expectSame(`small write ${k}`, false);
    }

    // A whole-catalog replace logs the names it changes like an upsert, and the index is derived:
    // the catalog re-sent with one tool dropped, one changed and one added; then cut to 20 tools.
    const loggedNames = async () => {
      const rows = await queryRows<{ names: string[] | null }>(
        database.db,
        sql`select names from catalog_changes where catalog_id = ${catalog.id} and revision = ${catalog.revision}`,
      );
      return rows[0]!.names && [...rows[0]!.names].sort();
    };
    const mapped = async () => new Map((await listCatalogTools(database.db, { tenant, name }, { limit: 1000 })).map((row) => [row.name, row]));
    const before = await mapped();
    const asSent = (row: CatalogToolRow) =>
      ({ hash: row.hash, tool: { name: row.name, definition: row.definition }, tokens: { as_sent: row.tokens.as_sent ?? 0 } }) as unknown as CountedDocument;
    const fresh = [tool('t12', 's1'), tool('r1', 's2')];
    // A replace is of the pushed tools: the upstream's u1 stays its own.
    const pushed = [...before.values()].filter((row) => row.upstream === null);
    await replaceCatalog(database.db, tenant, name, [...pushed.filter((row) => row.name !== 't04' && row.name !== 't12').map(asSent), ...fresh], fresh);
    catalog = (await getCatalog(database.db, tenant, name))!;
    expect(await loggedNames()).toEqual(['r1', 't04', 't12']);
    await expectSame('whole-catalog replace', false);
    // The pushed tools it replaces; u1 stays the upstream's and is no change.
    const beforeCut = new Map([...(await mapped())].filter(([, row]) => row.upstream === null));
    const cut = docs.slice(0, 20);
    await replaceCatalog(database.db, tenant, name, cut);
    catalog = (await getCatalog(database.db, tenant, name))!;
    const differing = [...new Set([...beforeCut.keys(), ...cut.map((doc) => doc.tool.name)])].filter(
      (tool) => beforeCut.get(tool)?.hash !== cut.find((doc) => doc.tool.name === tool)?.hash,
    );
    expect(differing.length).toBeGreaterThan(20);
    expect(await loggedNames()).toEqual(differing.sort());
    await expectSame('whole-catalog replace, cut to 20', false);
    // The 20 pushed tools and the upstream's u1.
    expect((await indexes.forSearch(catalog, database.db))!.size).toBe(21);
    // Sent again unchanged: no new revision.
    await replaceCatalog(database.db, tenant, name, cut);
    expect((await getCatalog(database.db, tenant, name))!.revision).toBe(catalog.revision);

    expect(overlays).toBeGreaterThan(10);
    expect(merges).toBeGreaterThan(10);

    // A merge that ends after a later write: that write's changes laid over the merged index.
    await upsertCatalogTools(database.db, tenant, name, [tool('m1', 's1'), tool('t05', 's2')]);
    catalog = (await getCatalog(database.db, tenant, name))!;
    const then = (await indexes.forSearch(catalog, database.db))!;
    const mergedThen = await CatalogIndex.derive(then.delta!.root, then.deltaChanges()!);
    await deleteCatalogTool(database.db, tenant, name, 't06');
    await upsertCatalogTools(database.db, tenant, name, [tool('m1', 's3'), tool('m2', null)]);
    catalog = (await getCatalog(database.db, tenant, name))!;
    const now = (await indexes.forSearch(catalog, database.db))!;
    const rebased = CatalogIndex.rebase(mergedThen, then, now)!;
    expect(rebased.delta!.root).toBe(mergedThen);
    expect(rebased.deltaNames).toBe(3);
    await expectEqual('rebased', rebased, (await new CatalogIndexCache(database.db).get(catalog))!);

    // A revision missing from the log (forgotten, as writers forget old ones): the index is read
    // whole instead, in the background.
    await upsertCatalogTools(database.db, tenant, name, [tool('n4', 's1')]);
    catalog = (await getCatalog(database.db, tenant, name))!;
    await database.db.execute(sql`delete from catalog_changes where catalog_id = ${catalog.id} and revision = ${catalog.revision}`);
    expect(await indexes.forSearch(catalog, database.db)).toBeUndefined();
    expect((await indexes.get(catalog))!.changedSince).toBeUndefined();
  });
});

describe('documents from an older tokenizer recipe', () => {
  it('get their BM25 terms recomputed at start-up, so one corpus never mixes recipes', async () => {
    const { refreshStaleTerms } = await import('../../src/catalog/refresh-terms.js');
    const { toDocument } = await import('../helpers/queue.js');
    const { normalizeTool } = await import('../../src/catalog/tool-formats.js');
    const { pino } = await import('pino');
    const database = await testDatabase();
    const doc = toDocument(normalizeTool({ name: `stale_${randomBytes(3).toString('hex')}`, description: 'Reads invoices', inputSchema: {} }));
    // As an older release would have stored it: other terms, another version.
    await replaceCatalog(database.db, uniqueName('stale'), 'stale', [{ ...doc, termFreqs: new Map([['obsolete', 3]]), length: 3, termsVersion: 0 }]);
    const before = await searchBm25(database.db, { kind: 'hashes', hashes: [doc.hash] }, { terms: ['invoices'], weights: [1] }, 5);
    expect(before).toEqual([]);
    const refreshed = await refreshStaleTerms(database.db, pino({ level: 'silent' }));
    expect(refreshed).toBeGreaterThanOrEqual(1);
    const after = await searchBm25(database.db, { kind: 'hashes', hashes: [doc.hash] }, { terms: ['invoices'], weights: [1] }, 5);
    expect(after.map(([id]) => id)).toEqual([doc.hash]);
    expect(await searchBm25(database.db, { kind: 'hashes', hashes: [doc.hash] }, { terms: ['obsolete'], weights: [1] }, 5)).toEqual([]);
    expect(await refreshStaleTerms(database.db, pino({ level: 'silent' }))).toBe(0);
  });

  it('are recomputed page after page, every one once, past the first page of 500', async () => {
    const { refreshStaleTerms } = await import('../../src/catalog/refresh-terms.js');
    const { toDocument } = await import('../helpers/queue.js');
    const { normalizeTool } = await import('../../src/catalog/tool-formats.js');
    const { documentsWithStaleTerms } = await import('../../src/store/tool-store.js');
    const { pino } = await import('pino');
    const database = await testDatabase();
    await refreshStaleTerms(database.db, pino({ level: 'silent' }));
    const run = randomBytes(3).toString('hex');
    const docs = Array.from({ length: 1_100 }, (_, i) =>
      toDocument(normalizeTool({ name: `paged_${i}_${run}`, description: `Files ledger ${i} ${run}`, inputSchema: {} })),
    );
    await replaceCatalog(
      database.db,
      uniqueName('paged'),
      'paged',
      docs.map((doc) => ({ ...doc, termFreqs: new Map([['obsolete', 2]]), length: 2, termsVersion: TERMS_VERSION - 1 })),
    );
    expect(await refreshStaleTerms(database.db, pino({ level: 'silent' }))).toBe(1_100);
    expect(await documentsWithStaleTerms(database.db, TERMS_VERSION, 10)).toEqual([]);
    const found = await searchBm25(database.db, { kind: 'hashes', hashes: docs.map((doc) => doc.hash) }, { terms: ['ledger'], weights: [1] }, 2_000);
    expect(found).toHaveLength(1_100);
  });

  it('are written at start-up for documents a catalog holds without them (as a release before NO_TERMS leaves them)', async () => {
    const { refreshStaleTerms } = await import('../../src/catalog/refresh-terms.js');
    const { toDocument } = await import('../helpers/queue.js');
    const { normalizeTool } = await import('../../src/catalog/tool-formats.js');
    const { NO_TERMS, storeDocuments } = await import('../../src/store/tool-store.js');
    const { pino } = await import('pino');
    const database = await testDatabase();
    const run = randomBytes(3).toString('hex');
    const [inCatalog, requestOnly] = ['ledgers', 'receipts'].map((word) =>
      toDocument(normalizeTool({ name: `termless_${word}_${run}`, description: `Reconciles ${word} ${run}`, inputSchema: {} })),
    );
    // Both stored as a selector request stores them; one then mapped into a catalog by a writer
    // that does not complete terms (an older release: the document counts as already stored).
    await storeDocuments(database.db, [inCatalog!, requestOnly!], 10, 1, { withTerms: false });
    await replaceCatalog(database.db, uniqueName('termless'), 'termless', [inCatalog!], []);
    const corpus: Corpus = { kind: 'hashes', hashes: [inCatalog!.hash, requestOnly!.hash] };
    expect(await searchBm25(database.db, corpus, { terms: ['reconciles'], weights: [1] }, 5)).toEqual([]);
    expect(await refreshStaleTerms(database.db, pino({ level: 'silent' }))).toBeGreaterThanOrEqual(1);
    expect((await searchBm25(database.db, corpus, { terms: ['reconciles'], weights: [1] }, 5)).map(([id]) => id)).toEqual([inCatalog!.hash]);
    const versions = await queryRows<{ hash: string; version: number }>(
      database.db,
      sql`select hash, terms_version as version from tool_documents where hash = ${requestOnly!.hash}`,
    );
    expect(versions).toEqual([{ hash: requestOnly!.hash, version: NO_TERMS }]);
    expect(await refreshStaleTerms(database.db, pino({ level: 'silent' }))).toBe(0);
  });
});

describe("the selector's in-process vector scan", () => {
  it("ranks a request's hashes exactly as the pgvector scan does, from vectors read out of pgvector", async () => {
    const { VectorCache } = await import('../../src/store/vector-cache.js');
    const { rankByCosine } = await import('../../src/ranking/vector-scan.js');
    const database = await testDatabase();
    const model = `cache-model-${randomBytes(3).toString('hex')}`;
    const docs = Array.from({ length: 40 }, (_, index) => toyDocument(`v${index}`, { word: 1 }));
    await replaceCatalog(database.db, uniqueName('vectors'), 'vectors', docs);
    const unit = (values: number[]) => {
      const norm = Math.hypot(...values);
      return values.map((value) => value / norm);
    };
    await writeVectors(
      database.db,
      { model, textVersion: EMBED_TEXT_VERSION },
      docs.slice(0, 35).map((doc, index) => ({ hash: doc.hash, vector: unit([Math.sin(index), Math.cos(index * 1.7), (index % 5) - 2, 0.3]) })),
    );
    const query = unit([0.2, -0.5, 1, 0.1]);
    const corpus: Corpus = { kind: 'hashes', hashes: docs.map((doc) => doc.hash) };
    const inSql = await searchVector(database.db, corpus, { model, vector: query, useIndex: false }, 20);
    const cache = new VectorCache();
    const statements: string[] = [];
    const loaded = await cache.load(
      observing(database.db, (text) => statements.push(text)),
      { model, textVersion: EMBED_TEXT_VERSION },
      corpus.hashes,
    );
    // node-postgres reads them in binary; PGlite as text (its bytea parser is slower than JSON.parse).
    expect(statements.filter((text) => text.includes('vector_send(')).length).toBe(storeKind() === 'postgres' ? 1 : 0);
    expect(loaded.vectors.size).toBe(35);
    expect(loaded.complete).toBe(false); // 5 of the 40 have no vector yet
    const inMemory = rankByCosine(query, loaded.vectors, 20);
    expect(inMemory.map(([id]) => id)).toEqual(inSql.map(([id]) => id));
    inMemory.forEach(([, score], index) => expect(score).toBeCloseTo(inSql[index]![1], 5));
    // The very float4s pgvector holds, as its text form (shortest round trip) gives them.
    const textRows = await queryRows<{ hash: string; embedding: string }>(
      database.db,
      sql`select hash, embedding::text as embedding from tool_embeddings where model = ${model}`,
    );
    expect(textRows).toHaveLength(35);
    for (const row of textRows) expect([...loaded.vectors.get(row.hash)!]).toEqual([...Float32Array.from(JSON.parse(row.embedding) as number[])]);
    // Served from the cache the second time, including after the rows are gone from the store.
    await database.db.execute(sql`delete from tool_embeddings where model = ${model}`);
    expect((await cache.load(database.db, { model, textVersion: EMBED_TEXT_VERSION }, corpus.hashes)).vectors.size).toBe(35);
  });
});

describe("a mid-size catalog's vectors in process", () => {
  it("are the catalog's current vectors by name, kept per revision once every tool has one, and rank as the exact scan in SQL", async () => {
    const { VectorCache } = await import('../../src/store/vector-cache.js');
    const { CatalogVectorCache } = await import('../../src/search/catalog-vectors.js');
    const { rankByCosine } = await import('../../src/ranking/vector-scan.js');
    const { upsertCatalogTools, getCatalog } = await import('../../src/store/catalog-store.js');
    const database = await testDatabase();
    const recipe = { model: `catalog-vectors-${randomBytes(3).toString('hex')}`, textVersion: EMBED_TEXT_VERSION };
    const unit = (values: number[]) => {
      const norm = Math.hypot(...values);
      return values.map((value) => value / norm);
    };
    const vectorOf = (index: number) => unit([Math.sin(index), Math.cos(index * 1.7), (index % 5) - 2, 0.3]);
    const docs = Array.from({ length: 40 }, (_, index) => toyDocument(`v${String(index).padStart(2, '0')}`, { word: 1 }));
    const name = uniqueName('catalog-vectors');
    await replaceCatalog(database.db, name, name, docs);
    await writeVectors(
      database.db,
      recipe,
      docs.slice(0, 39).map((doc, index) => ({ hash: doc.hash, vector: vectorOf(index) })),
    );
    // Statements seen, through the real database.
    let statements = 0;
    const db = new Proxy(database.db, {
      get(target, property, receiver) {
        const value = Reflect.get(target, property, receiver);
        if (property !== 'execute') return value;
        return (statement: SQL) => {
          statements++;
          return (value as (statement: SQL) => unknown).call(target, statement);
        };
      },
    });
    const cache = new CatalogVectorCache(new VectorCache());
    let catalog = (await getCatalog(database.db, name, name))!;
    // One tool without a vector: none (the search ranks in SQL and says embeddings_pending).
    expect(await cache.get(db, catalog, recipe)).toBeUndefined();
    await writeVectors(database.db, recipe, [{ hash: docs[39]!.hash, vector: vectorOf(39) }]);
    const vectors = (await cache.get(db, catalog, recipe))!;
    expect([...vectors.keys()].sort()).toEqual(docs.map((doc) => doc.tool.name));
    vectors.forEach((vector, tool) => [...vector].forEach((x, i) => expect(x).toBeCloseTo(vectorOf(Number(tool.slice(1)))[i]!, 6)));
    const query = unit([0.2, -0.5, 1, 0.1]);
    const inSql = await searchVector(database.db, { kind: 'catalog', catalogId: catalog.id }, { model: recipe.model, vector: query, useIndex: false }, 20);
    const inProcess = rankByCosine(query, vectors, 20);
    expect(inProcess.map(([id]) => id)).toEqual(inSql.map(([id]) => id));
    inProcess.forEach(([, score], index) => expect(score).toBeCloseTo(inSql[index]![1], 5));
    // Kept: the same revision asks nothing of the store.
    statements = 0;
    expect(await cache.get(db, catalog, recipe)).toBe(vectors);
    expect(statements).toBe(0);
    // A write: the older revision's set is not served for the new one, nor the new one's for the old.
    const added = toyDocument('v40', { word: 2 });
    await upsertCatalogTools(database.db, name, name, [added]);
    const older = catalog;
    catalog = (await getCatalog(database.db, name, name))!;
    expect(await cache.get(db, catalog, recipe)).toBeUndefined(); // v40 has no vector yet
    await writeVectors(database.db, recipe, [{ hash: added.hash, vector: vectorOf(40) }]);
    const newer = (await cache.get(db, catalog, recipe))!;
    expect(newer.size).toBe(41);
    expect(newer.has('v40')).toBe(true);
    expect(await cache.get(db, older, recipe)).toBeUndefined();
    // Another model's vectors are another set.
    expect(await cache.get(db, catalog, { ...recipe, model: `${recipe.model}-other` })).toBeUndefined();
  });
});

/**
 * A test database and the real test embedder, with a model id of the test's own, so the vectors it
 * writes never meet another test's.
 */
async function realEmbedderUnderOwnModel(prefix: string) {
  const { testEmbedder } = await import('../helpers/embedder.js');
  const database = await testDatabase();
  const real = await testEmbedder();
  const model = `${prefix}-model-${randomBytes(3).toString('hex')}`;
  return { database, real, model, current: { model, textVersion: EMBED_TEXT_VERSION } };
}

describe('vectors from an older embedding text recipe', () => {
  it('keep serving search, count as missing, and are replaced in place by the queue', { timeout: 120_000 }, async () => {
    const { VectorCache } = await import('../../src/store/vector-cache.js');
    const { catalogEmbeddingProgress, hashesWithoutVector } = await import('../../src/store/embedding-store.js');
    const { InProcessEmbedQueue } = await import('../../src/jobs/in-process-queue.js');
    const { pino } = await import('pino');
    const { database, real, model, current } = await realEmbedderUnderOwnModel('recipe');
    const embedder = { ...real, modelId: model, close: async () => {} };
    const docs = ['r1', 'r2', 'r3'].map((name) => toyDocument(name, { word: 1 }));
    const hashes = docs.map((doc) => doc.hash);
    const { catalog } = await replaceCatalog(database.db, uniqueName('recipe'), 'recipe', docs);
    // As a release with another embedding text recipe would have left them.
    await writeVectors(
      database.db,
      { model, textVersion: EMBED_TEXT_VERSION - 1 },
      docs.map((doc, index) => ({ hash: doc.hash, vector: [1, index, 0] })),
    );

    expect(await hashesWithoutVector(database.db, current, hashes)).toEqual([...hashes].sort());
    expect(await catalogEmbeddingProgress(database.db, catalog.id, current)).toEqual({ total: 3, done: 0 });
    const corpus: Corpus = { kind: 'hashes', hashes };
    expect(await searchVector(database.db, corpus, { model, vector: [1, 0, 0], useIndex: false }, 5)).toHaveLength(3);
    const cache = new VectorCache();
    const stale = await cache.load(database.db, current, hashes);
    expect(stale.vectors.size).toBe(3);
    expect(stale.complete).toBe(false);

    const queue = new InProcessEmbedQueue(database.db, embedder, { batchSize: 2, concurrency: 1, logger: pino({ level: 'silent' }) });
    expect(await queue.enqueue(hashes)).toHaveLength(2);
    await queue.whenIdle();
    await queue.close();

    expect(await hashesWithoutVector(database.db, current, hashes)).toEqual([]);
    expect(await catalogEmbeddingProgress(database.db, catalog.id, current)).toEqual({ total: 3, done: 3 });
    const rows = await queryRows<{ n: number; version: number; dimension: number }>(
      database.db,
      sql`select count(*)::int as n, min(text_version)::int as version, min(dimension)::int as dimension
          from tool_embeddings where model = ${model} and hash = any(${sql.param(hashes)}::text[])`,
    );
    expect(rows[0]).toEqual({ n: 3, version: EMBED_TEXT_VERSION, dimension: real.dimension });
    // The cache did not keep the stale vectors: it reads the new ones, and keeps those.
    const fresh = await cache.load(database.db, current, hashes);
    expect(fresh.complete).toBe(true);
    expect([...fresh.vectors.values()].every((vector) => vector.length === real.dimension)).toBe(true);
  });
});

describe('the HNSW index of the default model', () => {
  it('matches the expression the catalog vector search orders by, so the planner can use it', async () => {
    const database = await testDatabase();
    const vector = `[${Array.from({ length: 512 }, (_, i) => (i === 0 ? 1 : 0)).join(',')}]`;
    const plan = await database.db.transaction(async (tx) => {
      await tx.execute(sql.raw('set local enable_seqscan = off'));
      return queryRows<Record<string, string>>(
        tx,
        sql`explain select hash from tool_embeddings where model = 'use-lite'
            order by embedding::vector(512) <=> ${vector}::vector(512) limit 5`,
      );
    });
    expect(plan.map((row) => Object.values(row)[0]).join('\n')).toContain('tool_embeddings_hnsw_use_lite');
  });
});

describe('a new text recipe that leaves a tool text unchanged', () => {
  it('relabels that vector instead of embedding it again, and embeds the tools whose text changed', { timeout: 120_000 }, async () => {
    const { embedDocuments, embeddingTextHash } = await import('../../src/embed/embed-documents.js');
    const { embeddingText } = await import('../../src/ranking/search-text.js');
    const { hashesWithoutVector } = await import('../../src/store/embedding-store.js');
    const { database, real, model, current } = await realEmbedderUnderOwnModel('relabel');
    const embedded: string[] = [];
    const embedder = {
      ...real,
      modelId: model,
      embedDocuments: async (texts: string[]) => {
        embedded.push(...texts);
        return real.embedDocuments(texts);
      },
      close: async () => {},
    };
    const [same, changed, unrecorded] = ['same', 'changed', 'unrecorded'].map((name) => toyDocument(`relabel_${name}`, { word: 1 }));
    const docs = [same!, changed!, unrecorded!];
    await replaceCatalog(database.db, uniqueName('relabel'), 'relabel', docs);
    // As an older release left them: one from the text this release builds, one from another
    // text, one from before text hashes were recorded.
    await writeVectors(database.db, { model, textVersion: EMBED_TEXT_VERSION - 1 }, [
      { hash: same!.hash, vector: [1, 0, 0], textHash: embeddingTextHash(embeddingText(same!.tool)) },
      { hash: changed!.hash, vector: [0, 1, 0], textHash: embeddingTextHash('an older text') },
      { hash: unrecorded!.hash, vector: [0, 0, 1] },
    ]);

    expect(
      await embedDocuments(
        database.db,
        embedder,
        docs.map((doc) => doc.hash),
      ),
    ).toBe(3);
    expect(embedded.sort()).toEqual([embeddingText(changed!.tool), embeddingText(unrecorded!.tool)].sort());
    expect(
      await hashesWithoutVector(
        database.db,
        current,
        docs.map((doc) => doc.hash),
      ),
    ).toEqual([]);
    const rows = await queryRows<{ hash: string; version: number; dimension: number; text_hash: string }>(
      database.db,
      sql`select hash, text_version as version, dimension, text_hash from tool_embeddings
          where model = ${model} and hash = any(${sql.param(docs.map((doc) => doc.hash))}::text[])`,
    );
    const byHash = new Map(rows.map((row) => [row.hash, row]));
    // Relabelled: the old 3-d vector is kept, stamped with this release's version.
    expect(byHash.get(same!.hash)).toMatchObject({ version: EMBED_TEXT_VERSION, dimension: 3 });
    for (const doc of [changed!, unrecorded!]) {
      expect(byHash.get(doc.hash)).toEqual({
        hash: doc.hash,
        version: EMBED_TEXT_VERSION,
        dimension: real.dimension,
        text_hash: embeddingTextHash(embeddingText(doc.tool)),
      });
    }
    // Nothing left to do: a second pass neither relabels nor embeds.
    expect(
      await embedDocuments(
        database.db,
        embedder,
        docs.map((doc) => doc.hash),
      ),
    ).toBe(0);
    expect(embedded).toHaveLength(2);
  });
});

describe('storing documents in slices (storeDocuments)', () => {
  it('stores every document with its terms across slices, reports only new ones, and lets other work run between slices', async () => {
    const { storeDocuments } = await import('../../src/store/tool-store.js');
    const database = await testDatabase();
    const docs = Array.from({ length: 50 }, (_, index) => toyDocument(`slice_${index}`, { alpha: 1 + (index % 3), beta: 1 }));
    // Something else waiting for the event loop while the write runs: it must get a turn before the
    // write ends (a write of one giant statement on PGlite held every other request for seconds).
    let ranBetween = false;
    let finished = false;
    const waiting = new Promise<void>((resolve) =>
      setImmediate(() => {
        ranBetween = !finished;
        resolve();
      }),
    );
    const first = storeDocuments(database.db, [...docs.slice(0, 40), ...docs.slice(0, 5)], 7).then((fresh) => {
      finished = true;
      return fresh;
    });
    await waiting;
    expect((await first).sort()).toEqual(
      docs
        .slice(0, 40)
        .map((doc) => doc.hash)
        .sort(),
    );
    expect(ranBetween).toBe(true);
    // Again with the rest: only the ten not stored yet are new.
    expect((await storeDocuments(database.db, docs, 7)).sort()).toEqual(
      docs
        .slice(40)
        .map((doc) => doc.hash)
        .sort(),
    );
    const hashes = docs.map((doc) => doc.hash);
    const counted = await queryRows<{ documents: number; terms: number }>(
      database.db,
      sql`select (select count(*)::int from tool_documents where hash = any(${sql.param(hashes)}::text[])) as documents,
                 (select count(*)::int from tool_terms where hash = any(${sql.param(hashes)}::text[])) as terms`,
    );
    expect(counted[0]).toEqual({ documents: 50, terms: 100 });
  });
});
