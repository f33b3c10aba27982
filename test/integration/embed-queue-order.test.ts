/**
 * Fresh writes are embedded ahead of the start-up backlog. `enqueueMissing()` queues every stored
 * document without a vector (at start, after a model change: the whole store), and a catalog pushed
 * meanwhile must not wait behind it. A backlog batch holding a freshly pushed hash moves ahead with
 * the fresh ones. Both queues, real model, real Redis, a database of their own (so the backlog is
 * exactly each test's tools).
 */
import { Queue } from 'bullmq';
import { pino } from 'pino';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { embeddingText } from '../../src/ranking/search-text.js';
import { currentRecipe } from '../../src/embed/embed-documents.js';
import type { Embedder } from '../../src/embed/embedder.js';
import { BullmqEmbedQueue, connectRedis } from '../../src/jobs/bullmq-queue.js';
import { startEmbedWorker } from '../../src/jobs/bullmq-worker.js';
import { EMBED_QUEUE_NAME, type EmbedQueue } from '../../src/jobs/embed-queue.js';
import { InProcessEmbedQueue } from '../../src/jobs/in-process-queue.js';
import { upsertCatalogTools } from '../../src/store/catalog-store.js';
import { documentsForEmbedding, hashesWithoutVector } from '../../src/store/embedding-store.js';
import { scratchDatabase, storeKind, uniqueName, type ScratchDatabase } from '../helpers/database.js';
import { testEmbedder } from '../helpers/embedder.js';
import { countingEmbedder, dropQueuePrefix, testRedisUrl, toDocuments, uniqueTools } from '../helpers/queue.js';

const logger = pino({ level: 'silent' });
const BATCH = 16;

describe(`embedding order: fresh writes before the backlog (${storeKind()})`, { timeout: 180_000 }, () => {
  let scratch: ScratchDatabase;
  let model: Embedder;
  /** Which stored hash each embedding text belongs to. */
  const hashOfText = new Map<string, string>();
  const closers: (() => Promise<void>)[] = [];

  beforeAll(async () => {
    model = await testEmbedder();
  });
  beforeEach(async () => {
    scratch = await scratchDatabase(storeKind(), 'toolsift_order');
    closers.push(() => scratch.drop());
  });
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });

  async function store(count: number, label: string): Promise<string[]> {
    const documents = toDocuments(uniqueTools(count, label));
    await upsertCatalogTools(scratch.database.db, 'tenant', uniqueName(label), documents);
    const hashes = documents.map((doc) => doc.hash);
    for (const doc of await documentsForEmbedding(scratch.database.db, hashes)) hashOfText.set(embeddingText(doc), doc.hash);
    return hashes;
  }

  /** Four backlog batches (from `enqueueMissing`), then one fresh batch and a backlog batch's hashes pushed again. */
  async function queueBoth(queue: EmbedQueue): Promise<{ backlog: string[]; fresh: string; promoted: string }> {
    await store(4 * BATCH, 'backlog');
    const backlog = await queue.enqueueMissing();
    expect(backlog).toHaveLength(4);
    const [fresh, ...more] = await queue.enqueue(await store(BATCH, 'fresh'));
    expect(more).toEqual([]);
    const promoted = backlog[3]!;
    expect(await queue.enqueue((await queue.getJob(promoted))!.hashList)).toEqual([promoted]);
    return { backlog, fresh: fresh!, promoted };
  }

  async function expectAllEmbedded(): Promise<void> {
    expect(await hashesWithoutVector(scratch.database.db, currentRecipe(model.modelId))).toEqual([]);
  }

  it('in process: the fresh batch, then the promoted one, then the rest of the backlog', async () => {
    const recording = countingEmbedder(model);
    const queue = new InProcessEmbedQueue(scratch.database.db, recording, { batchSize: BATCH, concurrency: 1, logger });
    closers.push(() => queue.close());
    const { backlog, fresh, promoted } = await queueBoth(queue);
    await queue.whenIdle();

    const jobOf = new Map<string, string>();
    for (const id of [...backlog, fresh]) for (const hash of (await queue.getJob(id))!.hashList) jobOf.set(hash, id);
    const order = recording.batches.map((texts) => jobOf.get(hashOfText.get(texts[0]!)!));
    // The first backlog batch was taken before anything else was queued (one at a time).
    expect(order).toEqual([backlog[0], fresh, promoted, backlog[1], backlog[2]]);
    await expectAllEmbedded();
  });

  it('BullMQ: the fresh batch, then the promoted one, then the rest of the backlog', async () => {
    const prefix = uniqueName('tq');
    closers.push(() => dropQueuePrefix(prefix));
    const queue = new BullmqEmbedQueue(scratch.database.db, {
      connection: await connectRedis(testRedisUrl()),
      model: model.modelId,
      batchSize: BATCH,
      prefix,
      logger,
      reconcileMs: 0,
    });
    closers.push(() => queue.close());
    const { backlog, fresh, promoted } = await queueBoth(queue);

    const worker = await startEmbedWorker({
      db: scratch.database.db,
      embedder: model,
      redisUrl: testRedisUrl(),
      prefix,
      concurrency: 1,
      stalledMs: 5000,
      logger,
    });
    closers.push(() => worker.close());
    await queue.whenIdle();
    const raw = new Queue(EMBED_QUEUE_NAME, { connection: { url: testRedisUrl() } as never, prefix });
    closers.push(() => raw.close());
    const started = new Map<string, number>();
    for (const id of [...backlog, fresh]) started.set(id, (await raw.getJob(id))!.processedOn!);
    const order = [...started.keys()].sort((a, b) => started.get(a)! - started.get(b)!);
    expect(order).toEqual([fresh, promoted, backlog[0], backlog[1], backlog[2]]);
    await expectAllEmbedded();
  });
});
