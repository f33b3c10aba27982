/**
 * The embedded default's queue at shutdown: close() waits for batches being embedded, never for a
 * batch waiting out its retry backoff (with the database gone that wait never ended, and SIGTERM
 * hung), and what it leaves unembedded is found again by the next queue.
 */
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { currentRecipe } from '../../src/embed/embed-documents.js';
import { InProcessEmbedQueue } from '../../src/jobs/in-process-queue.js';
import { hashesWithoutVector } from '../../src/store/embedding-store.js';
import { storeDocuments } from '../../src/store/tool-store.js';
import { testDatabase } from '../helpers/database.js';
import { testEmbedder } from '../helpers/embedder.js';
import { countingEmbedder, toDocuments, uniqueTools } from '../helpers/queue.js';

const logger = pino({ level: 'silent' });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('InProcessEmbedQueue.close', () => {
  it("does not wait out a failed batch's backoff, and leaves its tools for the next queue", { timeout: 120_000 }, async () => {
    const database = await testDatabase();
    const real = await testEmbedder();
    const failing = countingEmbedder(real);
    failing.failNext = 1_000;
    const documents = toDocuments(uniqueTools(3, 'backoff'));
    const hashes = documents.map((doc) => doc.hash);
    await storeDocuments(database.db, documents);

    // A backoff of ten minutes: close() must not sit it out.
    const queue = new InProcessEmbedQueue(database.db, failing, { batchSize: 10, concurrency: 1, logger, retryDelayMs: 600_000 });
    const [id] = await queue.enqueue(hashes);
    for (let tries = 0; (await queue.getJob(id!))?.state !== 'delayed'; tries++) {
      if (tries > 600) throw new Error(`the batch never failed: ${JSON.stringify(await queue.getJob(id!))}`);
      await sleep(50);
    }
    expect(await Promise.race([queue.close().then(() => 'closed'), sleep(30_000).then(() => 'still waiting')])).toBe('closed');
    // Nothing was embedded, and nothing is retried after close.
    expect(failing.texts).toBe(0);
    const recipe = currentRecipe(real.modelId);
    expect(await hashesWithoutVector(database.db, recipe, hashes)).toEqual([...hashes].sort());

    const next = new InProcessEmbedQueue(database.db, real, { batchSize: 10, concurrency: 1, logger });
    expect(await next.enqueue(hashes)).toHaveLength(1);
    await next.whenIdle();
    await next.close();
    expect(await hashesWithoutVector(database.db, recipe, hashes)).toEqual([]);
  });
});
