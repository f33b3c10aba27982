import { spawn, type ChildProcess } from 'node:child_process';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BullmqEmbedQueue } from '../../src/jobs/bullmq-queue.js';
import { queryRows } from '../../src/store/database.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { scratchDatabase, uniqueName, type ScratchDatabase } from '../helpers/database.js';
import { dropQueuePrefix, testRedisUrl, uniqueTools } from '../helpers/queue.js';

const TOOLS = 240;

/**
 * A worker *process* cannot share the in-memory PGlite, so this test always runs on PostgreSQL, in
 * a scratch database of its own: in the shared database, the start-up sweep would queue every other
 * test's documents too.
 */
describe('a worker process killed mid-batch (real Redis, PostgreSQL, model)', () => {
  let scratch: ScratchDatabase;
  let app: TestApp;
  const prefix = uniqueName('tq-crash');
  const workers: ChildProcess[] = [];

  function startWorker(): { child: ChildProcess; ready: Promise<void> } {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/worker.ts'], {
      env: {
        ...process.env,
        DATABASE_URL: scratch.url!,
        REDIS_URL: testRedisUrl(),
        QUEUE_PREFIX: prefix,
        EMBED_MODEL: 'use-lite',
        EMBED_THREADS: '1',
        EMBED_CONCURRENCY: '1',
        EMBED_STALLED_MS: '1500',
        LOG_LEVEL: 'info',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    workers.push(child);
    let log = '';
    const ready = new Promise<void>((resolve, reject) => {
      child.stdout!.on('data', (data: Buffer) => {
        log += data.toString();
        if (log.includes('embedding worker started')) resolve();
      });
      child.stderr!.on('data', (data: Buffer) => (log += data.toString()));
      child.on('exit', (code, signal) => reject(new Error(`worker exited (${code ?? signal}) before it started:\n${log.slice(-2000)}`)));
    });
    return { child, ready };
  }

  beforeAll(async () => {
    scratch = await scratchDatabase('postgres', 'toolsift_crash');
    // The API side needs no model to enqueue: jobs name the configured model id.
    app = await startTestApp(
      { EMBED_MODEL: 'use-lite', REDIS_URL: testRedisUrl(), QUEUE_PREFIX: prefix, EMBED_WORKER: 'off', EMBED_BATCH_SIZE: '20' },
      { database: scratch.database, embedder: null },
    );
  });
  afterAll(async () => {
    for (const child of workers) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await app?.close();
    await scratch?.drop();
    await dropQueuePrefix(prefix);
  });

  it('recovers the killed job in another worker and ends with exactly one vector per tool', async () => {
    const catalog = uniqueName('crash');
    const tools = uniqueTools(TOOLS, 'crash');
    const put = await app.request('PUT', `/v1/catalogs/${catalog}`, { tools });
    expect(put.status, put.text).toBe(200);
    expect(put.body.job_ids).toHaveLength(TOOLS / 20);
    const queue = app.deps.queue as BullmqEmbedQueue;
    const progress = async () => (await app.request('GET', `/v1/catalogs/${catalog}`)).body.embedding;

    const first = startWorker();
    await first.ready;
    // Kill it while it holds a job: some vectors written, one job active (its lock still in Redis).
    const deadline = Date.now() + 60_000;
    while (!((await progress()).done >= 20 && (await queue.status()).active === 1)) {
      if (Date.now() > deadline) throw new Error('the first worker never got going');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const [killedJob] = await (queue as unknown as { queue: { getJobs(types: string[]): Promise<{ id: string }[]> } }).queue.getJobs(['active']);
    first.child.kill('SIGKILL');
    const partial = await progress();
    expect(partial.done).toBeLessThan(TOOLS);

    const second = startWorker();
    await second.ready;
    const end = Date.now() + 120_000;
    while ((await progress()).done < TOOLS) {
      if (Date.now() > end) throw new Error(`not finished: ${JSON.stringify(await progress())}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(await progress()).toEqual({ model: 'use-lite', total: TOOLS, done: TOOLS, pending: 0, failed: 0 });
    expect(await queue.getJob(killedJob!.id)).toMatchObject({ state: 'completed' });
    await queue.whenIdle();
    expect(await queue.status()).toMatchObject({ failed: 0, completed: TOOLS / 20 });

    const perTool = await queryRows<{ n: number; tools: number }>(
      scratch.database.db,
      sql`select count(*)::int as n, count(distinct e.hash)::int as tools
          from tool_embeddings e join catalog_tools ct on ct.hash = e.hash
          join catalogs c on c.id = ct.catalog_id
          where c.name = ${catalog} and e.model = 'use-lite'`,
    );
    expect(perTool[0]).toEqual({ n: TOOLS, tools: TOOLS });

    // Re-ingesting the unchanged catalog makes no job.
    const again = await app.request('PUT', `/v1/catalogs/${catalog}`, { tools });
    expect(again.body.job_ids).toEqual([]);

    const stopped = new Promise((resolve) => second.child.once('exit', (code) => resolve(code)));
    second.child.kill('SIGTERM');
    expect(await stopped).toBe(0);
  }, 240_000);
});
