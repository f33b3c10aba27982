import { sql, type SQL } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deleteCatalogTool, getCatalog, replaceCatalog, upsertCatalogTools } from '../../src/store/catalog-store.js';
import { queryRows } from '../../src/store/database.js';
import { exactScanSql } from '../../src/store/search-store.js';
import {
  catalogEmbeddingProgress,
  catalogHashesWithoutVector,
  hashesWithoutVector,
  vectorStatusSql,
  writeVectors,
  type VectorRecipe,
} from '../../src/store/embedding-store.js';
import { observing, scratchDatabase, storeKind, type ScratchDatabase } from '../helpers/database.js';
import { toDocuments, uniqueTools } from '../helpers/queue.js';
import { seededRandom } from '../helpers/seeded-random.js';

const TOOLS = 1200;
const EMBEDDED = 700;
const recipe: VectorRecipe = { model: 'status-test', textVersion: 2 };

/**
 * The state right after a first big ingestion: a new database whose tables have never been
 * analyzed (PGlite has no autovacuum at all; PostgreSQL's runs about once a minute), a catalog of
 * TOOLS tools, and vectors for the first EMBEDDED of them, one of those from an older text recipe.
 */
describe(`which vectors exist, on tables never analyzed (${storeKind()})`, () => {
  let scratch: ScratchDatabase;
  let catalogId: number;
  let hashes: string[];

  beforeAll(async () => {
    scratch = await scratchDatabase(storeKind(), 'toolsift_status');
    const documents = toDocuments(uniqueTools(TOOLS, 'status'));
    hashes = documents.map((doc) => doc.hash);
    catalogId = (await replaceCatalog(scratch.database.db, 'tenant', 'status', documents)).catalog.id;
    const random = seededRandom(5);
    const vector = () => Array.from({ length: 512 }, () => random() - 0.5);
    const embedded = hashes.slice(0, EMBEDDED);
    await writeVectors(
      scratch.database.db,
      recipe,
      embedded.slice(1).map((hash) => ({ hash, vector: vector() })),
    );
    await writeVectors(scratch.database.db, { ...recipe, textVersion: 1 }, [{ hash: embedded[0]!, vector: vector() }]);
  }, 60_000);

  afterAll(async () => {
    await scratch?.drop();
  });

  it('counts and lists what lacks a current vector (an older recipe counts as missing)', async () => {
    const { db } = scratch.database;
    expect(await catalogEmbeddingProgress(db, catalogId, recipe)).toEqual({ total: TOOLS, done: EMBEDDED - 1 });
    const missing = [hashes[0]!, ...hashes.slice(EMBEDDED)].sort();
    expect((await catalogHashesWithoutVector(db, catalogId, recipe)).sort()).toEqual(missing);
    expect(await hashesWithoutVector(db, recipe)).toEqual(missing);
    expect(await hashesWithoutVector(db, recipe, hashes.slice(0, 10))).toEqual([hashes[0]!]);
    expect(await catalogEmbeddingProgress(db, catalogId, { ...recipe, model: 'other-model' })).toEqual({ total: TOOLS, done: 0 });
  });

  // Planned as joins, these took 200-470 ms per call for a 4,076-tool catalog while its vectors
  // were being written (a nested loop over a full scan of tool_embeddings per catalog tool, chosen
  // because the missing statistics promised one row), on every poll of the catalog's progress.
  it('probe the (hash, model) primary key instead of scanning tool_embeddings', async () => {
    const statements: [string, SQL][] = [
      ['catalogProgress', vectorStatusSql.catalogProgress(catalogId, recipe)],
      ['catalogMissing', vectorStatusSql.catalogMissing(catalogId, recipe)],
      ['missing, all', vectorStatusSql.missing(recipe, undefined, 100_000)],
      ['missing, of a list', vectorStatusSql.missing(recipe, hashes.slice(0, 500), 100_000)],
      ['catalogProgressSince', vectorStatusSql.catalogProgressSince(catalogId, 0, recipe, 10_000)],
      ['exact scan, a catalog', exactScanSql({ kind: 'catalog', catalogId }, recipe.model, `[${Array(512).fill(0.1).join(',')}]`, 100)],
      ['exact scan, hashes', exactScanSql({ kind: 'hashes', hashes: hashes.slice(0, 300) }, recipe.model, `[${Array(512).fill(0.1).join(',')}]`, 100)],
    ];
    for (const [name, statement] of statements) {
      const plan = (await queryRows<{ 'QUERY PLAN': string }>(scratch.database.db, sql`explain ${statement}`)).map((row) => row['QUERY PLAN']).join('\n');
      expect(plan, `${name}:\n${plan}`).toContain('tool_embeddings_hash_model_pk');
      expect(plan, `${name}:\n${plan}`).not.toMatch(/Seq Scan on tool_embeddings/);
    }
  });
});

describe(`a catalog's embedding progress, counted at a bounded cost (${storeKind()})`, () => {
  it('shares one count among concurrent readers, recounts a pending revision only after 20 times its last count took, and remembers a complete one', async () => {
    const { CatalogEmbeddingStatus } = await import('../../src/catalog/embedding-status.js');
    const { currentRecipe } = await import('../../src/embed/embed-documents.js');
    const { testDatabase, uniqueName } = await import('../helpers/database.js');
    const database = await testDatabase();
    const documents = toDocuments(uniqueTools(20, 'progress'));
    const write = await replaceCatalog(database.db, 'tenant', uniqueName('progress'), documents);
    const catalog = write.catalog;
    const model = uniqueName('progress-model');
    const current = currentRecipe(model);
    // Counting statements seen, through the real database.
    let counts = 0;
    const db = observing(database.db, () => (counts += 1));
    // A clock that each count reads twice, 5 ms apart: every count "takes" 5 ms.
    let clock = 0;
    const status = new CatalogEmbeddingStatus(() => (clock += 5) - 5);
    const read = () => status.progress(db, catalog, model);

    const together = await Promise.all([read(), read(), read()]);
    expect(together).toEqual([
      { done: 0, total: 20 },
      { done: 0, total: 20 },
      { done: 0, total: 20 },
    ]);
    expect(counts).toBe(1);

    await writeVectors(
      database.db,
      current,
      documents.slice(0, 5).map((doc) => ({ hash: doc.hash, vector: [1, 0, 0] })),
    );
    clock += 50; // 50 ms after a 5 ms count: not yet recounted (20 x 5 = 100 ms)
    expect(await read()).toEqual({ done: 0, total: 20 });
    expect(counts).toBe(1);
    clock += 100;
    expect(await read()).toEqual({ done: 5, total: 20 });
    expect(counts).toBe(2);
    expect(await status.pending(db, catalog, model)).toEqual({ done: 5, total: 20 }); // a search's floor: 1 s
    expect(counts).toBe(2);

    await writeVectors(
      database.db,
      current,
      documents.slice(5).map((doc) => ({ hash: doc.hash, vector: [1, 0, 0] })),
    );
    clock += 1_000;
    expect(await read()).toEqual({ done: 20, total: 20 });
    expect(await status.pending(db, catalog, model)).toBeUndefined();
    // Complete is remembered for the revision: no more counting, however much time passes.
    clock += 1e9;
    expect(await read()).toEqual({ done: 20, total: 20 });
    expect(counts).toBe(3);
    // Another revision is counted afresh.
    expect(await status.progress(db, { ...catalog, revision: catalog.revision + 1 }, model)).toEqual({ done: 20, total: 20 });
    expect(counts).toBe(4);
  });

  it('does not hold a count slowed by a stalled machine against a small catalog: the wait is capped by its size', async () => {
    const { CatalogEmbeddingStatus } = await import('../../src/catalog/embedding-status.js');
    const { currentRecipe } = await import('../../src/embed/embed-documents.js');
    const { testDatabase, uniqueName } = await import('../helpers/database.js');
    const database = await testDatabase();
    const documents = toDocuments(uniqueTools(4, 'stalled'));
    const { catalog } = await replaceCatalog(database.db, 'tenant', uniqueName('stalled'), documents);
    const model = uniqueName('stalled-model');
    // The first count "takes" 3 s (a loaded machine), the next ones 1 ms.
    let clock = 0;
    let stall = 3_000;
    const status = new CatalogEmbeddingStatus(() => {
      const now = clock;
      clock += stall;
      stall = 0;
      return now;
    });
    expect(await status.progress(database.db, catalog, model)).toEqual({ done: 0, total: 4 });
    await writeVectors(
      database.db,
      currentRecipe(model),
      documents.map((doc) => ({ hash: doc.hash, vector: [1, 0, 0] })),
    );
    clock += 200; // 20 x 3 s would be a minute; a 4-tool count is taken to cost at most ~5 ms
    expect(await status.progress(database.db, catalog, model)).toEqual({ done: 4, total: 4 });
  });

  it("tells a revision written after a complete one from the names it changed, one statement probing those names (a whole-catalog replace's too); a revision the log lost is counted afresh", async () => {
    const { CatalogEmbeddingStatus } = await import('../../src/catalog/embedding-status.js');
    const { currentRecipe } = await import('../../src/embed/embed-documents.js');
    const { testDatabase, uniqueName } = await import('../helpers/database.js');
    const database = await testDatabase();
    const name = uniqueName('since');
    const tools = uniqueTools(30, 'since');
    const documents = toDocuments(tools);
    let catalog = (await replaceCatalog(database.db, 'tenant', name, documents)).catalog;
    const model = uniqueName('since-model');
    const current = currentRecipe(model);
    const embed = (docs: { hash: string }[]) =>
      writeVectors(
        database.db,
        current,
        docs.map((doc) => ({ hash: doc.hash, vector: [1, 0, 0] })),
      );
    await embed(documents);
    // Statements seen, and which of them count the catalog whole.
    const seen: string[] = [];
    const db = observing(database.db, (text) => seen.push(text.includes('catalog_changes') ? 'since' : 'whole'));
    let clock = 0; // a pending revision is recounted once enough time has passed: here, when the test moves the clock
    const status = new CatalogEmbeddingStatus(() => clock);
    const truth = async () => catalogEmbeddingProgress(database.db, catalog.id, current);
    expect(await status.progress(db, catalog, model)).toEqual({ done: 30, total: 30 });
    expect(seen).toEqual(['whole']);

    // One tool added, one changed: two names to probe, both without a vector yet.
    const added = toDocuments([{ ...tools[0]!, name: `${tools[0]!.name}_added` }])[0]!;
    const changed = toDocuments([{ ...tools[1]!, description: `${tools[1]!.description} Revised.` }])[0]!;
    catalog = (await upsertCatalogTools(database.db, 'tenant', name, [added, changed])).catalog;
    expect(await status.progress(db, catalog, model)).toEqual({ done: 29, total: 31 });
    expect(await truth()).toEqual({ done: 29, total: 31 });
    expect(seen).toEqual(['whole', 'since']);

    // Embedded: complete again, and the next revision (a tool deleted) is told from this one.
    await embed([added, changed]);
    clock += 60_000;
    expect(await status.progress(db, catalog, model)).toEqual({ done: 31, total: 31 });
    expect(seen).toEqual(['whole', 'since', 'since']);
    expect(await deleteCatalogTool(database.db, 'tenant', name, tools[2]!.name)).toBe(true);
    catalog = (await getCatalog(database.db, 'tenant', name))!;
    expect(await status.progress(db, catalog, model)).toEqual({ done: 30, total: 30 });
    expect(seen).toEqual(['whole', 'since', 'since', 'since']);

    // A whole-catalog replace logs the names it drops, adds or changes: told from them too.
    const replaced = toDocuments(uniqueTools(5, 'since_replaced'));
    catalog = (await replaceCatalog(database.db, 'tenant', name, [...documents.slice(0, 10), ...replaced])).catalog;
    expect(await status.progress(db, catalog, model)).toEqual({ done: 10, total: 15 });
    expect(await truth()).toEqual({ done: 10, total: 15 });
    expect(seen).toEqual(['whole', 'since', 'since', 'since', 'since']);

    // A revision the log no longer holds: the log cannot tell, so the catalog is counted whole.
    await embed(replaced);
    clock += 60_000;
    expect(await status.progress(db, catalog, model)).toEqual({ done: 15, total: 15 });
    catalog = (await upsertCatalogTools(database.db, 'tenant', name, toDocuments(uniqueTools(1, 'since_forgotten')))).catalog;
    await database.db.execute(sql`delete from catalog_changes where catalog_id = ${catalog.id} and revision = ${catalog.revision}`);
    seen.length = 0;
    expect(await status.progress(db, catalog, model)).toEqual({ done: 15, total: 16 });
    expect(seen).toEqual(['since', 'whole']);
  });
});

describe(`vectors written read back as the float4 pgvector stores (${storeKind()})`, () => {
  it('PostgreSQL takes them in binary, PGlite as text; both store each component to float4 precision', async () => {
    const { testDatabase, uniqueName } = await import('../helpers/database.js');
    const { sendsBinaryParameters } = await import('../../src/store/database.js');
    const database = await testDatabase();
    const documents = toDocuments(uniqueTools(10, 'roundtrip'));
    await replaceCatalog(database.db, 'tenant', uniqueName('roundtrip'), documents);
    const random = seededRandom(11);
    const vectors = documents.map((doc, i) => ({
      hash: doc.hash,
      // 512-d unit-ish vectors, and one of each kind of component: above 1, negative, tiny, zero.
      vector: i === 0 ? [1.5, -0.3, 1e-8, 0, -2, 0.123456789] : Array.from({ length: 512 }, () => (random() - 0.5) / 10),
      textHash: `text-${i}`,
    }));
    const recipe = { model: uniqueName('roundtrip-model'), textVersion: 2 };
    // Written twice: the second write takes the upsert's update path.
    await writeVectors(
      database.db,
      recipe,
      vectors.map((item) => ({ ...item, vector: item.vector.map((value) => -value) })),
    );
    await writeVectors(database.db, recipe, vectors);

    const binary = sendsBinaryParameters(database.db);
    expect(binary).toBe(storeKind() === 'postgres');
    const rows = await queryRows<{ hash: string; dimension: number; embedding: string; text_hash: string; text_version: number }>(
      database.db,
      sql`select hash, dimension, embedding::text as embedding, text_hash, text_version from tool_embeddings where model = ${recipe.model}`,
    );
    expect(rows).toHaveLength(vectors.length);
    const byHash = new Map(rows.map((row) => [row.hash, row]));
    for (const item of vectors) {
      const row = byHash.get(item.hash)!;
      expect([row.dimension, row.text_hash, row.text_version]).toEqual([item.vector.length, item.textHash, 2]);
      const stored = (JSON.parse(row.embedding) as number[]).map((value) => Math.fround(value));
      expect(stored).toHaveLength(item.vector.length);
      stored.forEach((value, i) => {
        const written = item.vector[i]!;
        // Binary sends the float4 itself; the text literal is rounded to 1e-9 first (vector-literal.ts),
        // so its float4 is within half a float4 step of the component, plus that rounding.
        if (binary) expect(value).toBe(Math.fround(written));
        else expect(Math.abs(value - written)).toBeLessThanOrEqual(Math.abs(written) * 2 ** -24 + 1e-9);
      });
    }
  });
});
