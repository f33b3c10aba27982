import { Queue } from 'bullmq';
import { sql } from 'drizzle-orm';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Embedder } from '../../src/embed/embedder.js';
import { createUseLiteEmbedder } from '../../src/embed/use-lite.js';
import { BullmqEmbedQueue, connectRedis } from '../../src/jobs/bullmq-queue.js';
import { startEmbedWorker, type EmbedWorker } from '../../src/jobs/bullmq-worker.js';
import { WRITE_AHEAD_SLICE } from '../../src/catalog/catalog-service.js';
import { EMBED_TEXT_VERSION } from '../../src/ranking/search-text.js';
import { EMBED_QUEUE_NAME, embedJobPayload } from '../../src/jobs/embed-queue.js';
import { upsertCatalogTools } from '../../src/store/catalog-store.js';
import { queryRows, type Db } from '../../src/store/database.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { until } from '../helpers/assertions.js';
import { scratchDatabase, storeKind, testDatabase, uniqueName } from '../helpers/database.js';
import { countingEmbedder, dropQueuePrefix, startRedisProxy, testRedisUrl, toDocuments, uniqueTools } from '../helpers/queue.js';

const logger = pino({ level: 'silent' });

async function vectorRows(db: Db, hashes: string[], model: string): Promise<{ hash: string; n: number }[]> {
  return queryRows(
    db,
    sql`select hash, count(*)::int as n from tool_embeddings where model = ${model} and hash = any(${sql.param(hashes)}::text[]) group by hash`,
  );
}

describe('BullMQ embedding queue (real Redis and database)', { timeout: 180_000 }, () => {
  let db: Db;
  let model: Embedder;
  let prefix: string;
  const closers: (() => Promise<void>)[] = [];

  beforeAll(async () => {
    db = (await testDatabase()).db;
    model = await createUseLiteEmbedder({ threads: 1 });
  });
  afterAll(async () => {
    await model?.close();
  });
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
    await dropQueuePrefix(prefix);
  });

  async function storedHashes(count: number): Promise<string[]> {
    const documents = toDocuments(uniqueTools(count, 'queue'));
    await upsertCatalogTools(db, uniqueName('tenant'), uniqueName('queue'), documents);
    return documents.map((doc) => doc.hash);
  }

  async function openQueue(batchSize = 16): Promise<BullmqEmbedQueue> {
    prefix = uniqueName('tq');
    const queue = new BullmqEmbedQueue(db, { connection: await connectRedis(testRedisUrl()), model: model.modelId, batchSize, prefix, logger, reconcileMs: 0 });
    closers.push(() => queue.close());
    return queue;
  }

  /** The service with the real queue and its in-process worker, under a fresh queue prefix. */
  async function inlineWorkerApp(batchSize: number): Promise<TestApp> {
    prefix = uniqueName('tq');
    const app = await startTestApp(
      { EMBED_MODEL: model.modelId, REDIS_URL: testRedisUrl(), QUEUE_PREFIX: prefix, EMBED_WORKER: 'inline', EMBED_BATCH_SIZE: String(batchSize) },
      { embedder: model },
    );
    closers.push(() => app.close());
    return app;
  }

  async function worker(embedder: Embedder, on: Db = db): Promise<EmbedWorker> {
    const started = await startEmbedWorker({ db: on, embedder, redisUrl: testRedisUrl(), prefix, concurrency: 2, stalledMs: 5000, logger });
    closers.push(() => started.close());
    return started;
  }

  it('embeds every enqueued hash exactly once; duplicates are one job; embedded hashes make no job', async () => {
    const queue = await openQueue();
    const hashes = await storedHashes(40);
    const first = await queue.enqueue(hashes);
    expect(first).toHaveLength(3);
    expect(await queue.enqueue([...hashes].reverse())).toEqual(first);
    expect(await queue.status()).toMatchObject({ kind: 'bullmq', waiting: 3, active: 0 });

    const counting = countingEmbedder(model);
    await worker(counting);
    await queue.whenIdle();
    expect(counting.texts).toBe(40);
    const rows = await vectorRows(db, hashes, model.modelId);
    expect(rows).toHaveLength(40);
    expect(rows.every((row) => row.n === 1)).toBe(true);
    for (const id of first) expect(await queue.getJob(id)).toMatchObject({ id, state: 'completed', progress: 100, attempts: 1 });

    expect(await queue.enqueue(hashes)).toEqual([]);
    expect(await queue.status()).toMatchObject({ waiting: 0, completed: 3 });
    // The sweep may find other tests' documents in the shared database, but never these again.
    expect(await queue.enqueueMissing().then((ids) => ids.filter((id) => first.includes(id)))).toEqual([]);
  });

  it('fails a malformed job at once (UnrecoverableError, no retries)', async () => {
    const queue = await openQueue();
    const raw = new Queue(EMBED_QUEUE_NAME, { connection: { url: testRedisUrl() } as never, prefix });
    closers.push(() => raw.close());
    await raw.add('embed', { model: model.modelId, hashes: ['not-a-hash'] }, { jobId: 'malformed-1', attempts: 5, backoff: { type: 'fixed', delay: 10 } });
    await worker(countingEmbedder(model));
    await until('the malformed job to fail', async () => (await queue.getJob('malformed-1'))?.state === 'failed');
    const job = await queue.getJob('malformed-1');
    expect(job).toMatchObject({ state: 'failed', attempts: 1, hashes: 0 });
    expect(job!.error).toMatch(/malformed embed job: hashes\.0/);
    expect((await queue.failedHashes()).size).toBe(0);
  });

  it('fails a job queued for another embedding text recipe at once, writing nothing', async () => {
    const queue = await openQueue();
    const [hash] = await storedHashes(1);
    const raw = new Queue(EMBED_QUEUE_NAME, { connection: { url: testRedisUrl() } as never, prefix });
    closers.push(() => raw.close());
    await raw.add(
      'embed',
      { model: model.modelId, textVersion: EMBED_TEXT_VERSION + 1, hashes: [hash] },
      { jobId: 'recipe-1', attempts: 5, backoff: { type: 'fixed', delay: 10 } },
    );
    await worker(countingEmbedder(model));
    await until('the job to fail', async () => (await queue.getJob('recipe-1'))?.state === 'failed');
    const job = await queue.getJob('recipe-1');
    expect(job).toMatchObject({ state: 'failed', attempts: 1 });
    expect(job!.error).toMatch(new RegExp(`embedding text version ${EMBED_TEXT_VERSION + 1}, this worker builds version ${EMBED_TEXT_VERSION}`));
    expect(await vectorRows(db, [hash!], model.modelId)).toEqual([]);
    // Jobs queued by a release from before recipe versions existed were built by recipe 1.
    expect(embedJobPayload.parse({ model: model.modelId, hashes: [hash] }).textVersion).toBe(1);
  });

  it('retries a transient failure with backoff and then writes the vectors', async () => {
    const queue = await openQueue(32);
    const hashes = await storedHashes(8);
    const [id] = await queue.enqueue(hashes);
    const counting = countingEmbedder(model);
    counting.failNext = 1;
    await worker(counting);
    await until('the job to complete', async () => (await queue.getJob(id!))?.state === 'completed');
    expect(await queue.getJob(id!)).toMatchObject({ state: 'completed', attempts: 2 });
    expect(await vectorRows(db, hashes, model.modelId)).toHaveLength(8);
  });

  it('answers 503 while Redis is lost, and enqueues what it accepted once Redis is back', async () => {
    prefix = uniqueName('tq');
    const proxy = await startRedisProxy();
    closers.push(() => proxy.close());
    // A database of its own: the app's start-up sweep queues every stored tool still lacking a
    // vector, and the shared one holds thousands from other tests (minutes of embedding).
    const scratch = await scratchDatabase(storeKind(), 'tq_lost');
    closers.push(() => scratch.drop());
    const app = await startTestApp(
      { EMBED_MODEL: model.modelId, REDIS_URL: proxy.url, QUEUE_PREFIX: prefix, EMBED_WORKER: 'off', EMBED_BATCH_SIZE: '8' },
      { embedder: model, database: scratch.database },
    );
    closers.push(() => app.close());
    const catalog = uniqueName('lost');
    const tools = uniqueTools(12, 'lost');
    // EMBED_WORKER=off and no worker process yet: search is ready, embedding is not, and says why.
    const ready = await app.request('GET', '/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body.components.queue).toMatchObject({ status: 'degraded', reason: expect.stringContaining('no worker consumes the queue') });

    await proxy.cut();
    await until('the queue to notice', async () => !(app.deps.queue as BullmqEmbedQueue).connected, 5000);
    const put = await app.request('PUT', `/v1/catalogs/${catalog}`, { tools });
    expect(put.status, put.text).toBe(503);
    expect(put.body.error).toMatchObject({ code: 'service_unavailable', message: expect.stringMatching(/embedding queue unavailable/) });
    expect((await app.request('GET', '/readyz')).body.components.queue.status).toBe('degraded');
    // The tools were stored; reads work while Redis is away, and nothing is embedded yet.
    const during = await app.request('GET', `/v1/catalogs/${catalog}`);
    expect(during.body.embedding).toEqual({ model: model.modelId, total: 12, done: 0, pending: 12, failed: 0 });

    await proxy.restore();
    await until('the reconnect sweep to enqueue the missing tools', async () => {
      const queue = app.deps.queue as BullmqEmbedQueue;
      return queue.connected && (await queue.status()).waiting >= 2;
    });
    await worker(countingEmbedder(model), scratch.database.db);
    await until('every tool to be embedded', async () => (await app.request('GET', `/v1/catalogs/${catalog}`)).body.embedding.done === 12, 120_000);
    expect((await app.request('GET', `/v1/catalogs/${catalog}`)).body.embedding).toEqual({ model: model.modelId, total: 12, done: 12, pending: 0, failed: 0 });
    // With a worker consuming, the queue is ready again and counts it.
    const consumed = await app.request('GET', '/readyz');
    expect(consumed.body.components.queue).toMatchObject({ status: 'ok', kind: 'bullmq', inlineWorker: false });
    expect(consumed.body.components.queue.workers).toBeGreaterThanOrEqual(1);

    // Pushing the same catalog again finds nothing to embed.
    const again = await app.request('PUT', `/v1/catalogs/${catalog}`, { tools });
    expect(again.status).toBe(200);
    expect(again.body.job_ids).toEqual([]);
  });

  it('embeds a catalog written ahead in slices once per tool, and re-pushing it queues nothing', async () => {
    const app = await inlineWorkerApp(32);
    const catalog = uniqueName('ahead');
    const tools = uniqueTools(WRITE_AHEAD_SLICE + 88, 'ahead');
    const put = await app.request('PUT', `/v1/catalogs/${catalog}`, { tools });
    expect(put.status, put.text).toBe(200);
    expect(put.body).toMatchObject({ new_documents: tools.length });
    // Slices of 64, 128, 256 and 152 tools, cut into jobs of at most 32: 2 + 4 + 8 + 5.
    expect(put.body.job_ids).toHaveLength(19);
    const queue = app.deps.queue as BullmqEmbedQueue;
    const jobs = await Promise.all((put.body.job_ids as string[]).map((id) => queue.getJob(id)));
    expect(jobs.reduce((sum, job) => sum + (job?.hashes ?? 0), 0)).toBe(tools.length);
    await until('every tool to be embedded', async () => (await app.request('GET', `/v1/catalogs/${catalog}`)).body.embedding.done === tools.length, 120_000);
    const rows = await vectorRows(
      db,
      toDocuments(tools).map((doc) => doc.hash),
      model.modelId,
    );
    expect(rows).toHaveLength(tools.length);
    expect(rows.every((row) => row.n === 1)).toBe(true);

    const again = await app.request('PUT', `/v1/catalogs/${catalog}`, { tools });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ new_documents: 0, job_ids: [] });
  });

  it('reports jobs over HTTP: GET /v1/jobs/{id}, and 404 in the error shape', async () => {
    const app = await inlineWorkerApp(4);
    const catalog = uniqueName('jobs');
    const put = await app.request('PUT', `/v1/catalogs/${catalog}`, { tools: uniqueTools(6, 'jobs') });
    expect(put.status).toBe(200);
    expect(put.body.job_ids).toHaveLength(2);
    await until('the inline worker to finish', async () => (await app.deps.queue!.getJob(put.body.job_ids[1]))?.state === 'completed', 120_000);
    await until('the inline worker to finish', async () => (await app.deps.queue!.getJob(put.body.job_ids[0]))?.state === 'completed', 120_000);
    const job = await app.request('GET', `/v1/jobs/${put.body.job_ids[0]}`);
    expect(job.status).toBe(200);
    expect(job.body).toEqual({ id: put.body.job_ids[0], state: 'completed', progress: 100, hashes: 4, attempts: 1 });
    const missing = await app.request('GET', '/v1/jobs/embed-0000');
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('not_found');
    expect((await app.request('GET', `/v1/catalogs/${catalog}`)).body.embedding).toMatchObject({ total: 6, done: 6 });
  });
});
