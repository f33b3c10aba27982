// @store-independent: never opens the store the suite is given (vitest.config.ts runs it once, not again on PostgreSQL).
import { sql } from 'drizzle-orm';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { Embedder } from '../../src/embed/embedder.js';
import { InProcessEmbedQueue } from '../../src/jobs/in-process-queue.js';
import { openPglite, queryRows } from '../../src/store/database.js';
import { insertDocuments } from '../../src/store/tool-store.js';
import { testEmbedder } from '../helpers/embedder.js';
import { toDocuments, uniqueTools } from '../helpers/queue.js';

/** The real model's vectors under another model id: a stand-in for a second model. */
function renamed(inner: Embedder, modelId: string): Embedder {
  return { ...inner, modelId, embedDocuments: (texts) => inner.embedDocuments(texts), embedQuery: (text) => inner.embedQuery(text), close: async () => {} };
}

describe('changing EMBED_MODEL', () => {
  it('embeds every document under the new model and keeps the old vectors', async () => {
    // A database of its own: the start-up sweep re-embeds every document the new model lacks, and
    // the shared test database holds thousands from other tests.
    const database = await openPglite('memory://');
    await database.migrate();
    const model = await testEmbedder();
    const suffix = Date.now().toString(36);
    const oldModel = renamed(model, `old-${suffix}`);
    const newModel = renamed(model, `new-${suffix}`);
    const docs = toDocuments(uniqueTools(12, 'switch'));
    await insertDocuments(database.db, docs);
    const hashes = docs.map((doc) => doc.hash);
    const logger = pino({ level: 'silent' });

    const before = new InProcessEmbedQueue(database.db, oldModel, { batchSize: 5, concurrency: 1, logger });
    await before.enqueue(hashes);
    await before.whenIdle();
    await before.close();

    // A restart with the new model: the start-up sweep finds what the new model lacks.
    const after = new InProcessEmbedQueue(database.db, newModel, { batchSize: 5, concurrency: 1, logger });
    await after.enqueueMissing();
    await after.whenIdle();
    await after.close();

    const counts = await queryRows<{ model: string; n: number }>(
      database.db,
      sql`select model, count(*)::int as n from tool_embeddings
          where hash = any(${sql.param(hashes)}::text[]) and model in (${oldModel.modelId}, ${newModel.modelId})
          group by model order by model`,
    );
    expect(counts).toEqual([
      { model: newModel.modelId, n: 12 },
      { model: oldModel.modelId, n: 12 },
    ]);
    await database.close();
  });
});
