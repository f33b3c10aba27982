import { loadConfigOrExit } from './config.js';
import { createDeps } from './deps.js';
import { startEmbedWorker } from './jobs/bullmq-worker.js';

/**
 * `npm run worker`: the same deps as the API, running BullMQ embedding workers only (no HTTP).
 * Start as many as there are cores to spare; SIGTERM finishes the jobs in hand, then exits. A
 * worker killed outright loses nothing: its job's lock expires and another worker takes it.
 */
async function main(): Promise<void> {
  const config = loadConfigOrExit();
  if (!config.REDIS_URL) {
    console.error('npm run worker needs REDIS_URL: without Redis, `npm start` embeds in-process (EMBED_WORKER=inline)');
    process.exit(2);
  }
  // This process is the worker; the deps must not start a second one inline.
  const deps = await createDeps({ ...config, EMBED_WORKER: 'off' }, { searches: false });
  if (!deps.embedder) {
    deps.logger.fatal({ model: config.EMBED_MODEL, status: deps.embedderStatus }, 'no embedding model: nothing for a worker to do');
    await deps.close();
    process.exit(1);
  }
  const worker = await startEmbedWorker({
    db: deps.database.db,
    embedder: deps.embedder,
    redisUrl: config.REDIS_URL,
    prefix: config.QUEUE_PREFIX,
    concurrency: config.EMBED_CONCURRENCY,
    stalledMs: config.EMBED_STALLED_MS,
    logger: deps.logger,
  });

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    deps.logger.info({ signal }, 'shutting down: finishing jobs in hand');
    await worker.close();
    await deps.close();
    deps.logger.info('stopped');
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}

main().catch((error: unknown) => {
  console.error(`toolsift worker failed to start: ${(error as Error).message}`);
  process.exit(1);
});
