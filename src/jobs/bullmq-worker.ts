import { UnrecoverableError, Worker, type Job } from 'bullmq';
import type { Embedder } from '../embed/embedder.js';
import { EMBED_TEXT_VERSION } from '../ranking/search-text.js';
import { embedDocuments } from '../embed/embed-documents.js';
import type { Logger } from '../logger.js';
import type { Db } from '../store/database.js';
import { connectRedis } from './bullmq-queue.js';
import { EMBED_QUEUE_NAME, embedJobPayload, type EmbedJobPayload } from './embed-queue.js';

export interface EmbedWorkerOptions {
  db: Db;
  embedder: Embedder;
  redisUrl: string;
  prefix: string;
  /** Jobs run at once in this process (EMBED_CONCURRENCY). */
  concurrency: number;
  /**
   * Lock duration and stalled-check interval (EMBED_STALLED_MS): a worker that dies mid-job
   * (SIGKILL, OOM) stops renewing its lock, and within about twice this time another worker
   * moves the job back to waiting and runs it.
   */
  stalledMs: number;
  logger: Logger;
  /** Called with the vectors each finished job wrote (the metrics count them). */
  onEmbedded?: (count: number) => void;
}

export interface EmbedWorker {
  readonly worker: Worker<EmbedJobPayload, { written: number }>;
  /** Finishes the jobs in hand (their locks stay valid), then disconnects. */
  close(): Promise<void>;
}

/**
 * The job body. A payload that does not parse will never parse: UnrecoverableError, no retries.
 * Anything else that throws (database down, the model's workers restarting) is transient and
 * BullMQ retries it with backoff. Embedding is idempotent, so a retried or recovered job skips
 * whatever an earlier attempt already wrote.
 */
export function embedJobProcessor(db: Db, embedder: Embedder) {
  return async (job: Job<unknown>): Promise<{ written: number }> => {
    const payload = embedJobPayload.safeParse(job.data);
    if (!payload.success) {
      const issue = payload.error.issues[0]!;
      throw new UnrecoverableError(`malformed embed job: ${issue.path.join('.') || 'data'}: ${issue.message}`);
    }
    if (payload.data.model !== embedder.modelId) {
      // Jobs queued under another EMBED_MODEL (a deploy changing models). This worker cannot do
      // them; the sweep of a process running that model enqueues its missing hashes again.
      throw new UnrecoverableError(`job is for model "${payload.data.model}", this worker embeds "${embedder.modelId}"`);
    }
    if (payload.data.textVersion !== EMBED_TEXT_VERSION) {
      // Queued by a release with another embedding text recipe (a rolling deploy): writing this
      // worker's vectors under the job's version, or the reverse, would mislabel them.
      throw new UnrecoverableError(`job is for embedding text version ${payload.data.textVersion}, this worker builds version ${EMBED_TEXT_VERSION}`);
    }
    const written = await embedDocuments(db, embedder, payload.data.hashes);
    await job.updateProgress(100);
    return { written };
  };
}

export async function startEmbedWorker(options: EmbedWorkerOptions): Promise<EmbedWorker> {
  // The model's first inferences run at half speed (kernels compile); pay that before taking a
  // job, not inside one whose lock is ticking. Measured ~1 s for use-lite.
  await options.embedder.embedDocuments(Array.from({ length: 16 }, (_, i) => `warm up embedding worker ${i}`));
  const connection = await connectRedis(options.redisUrl, { blocking: true });
  const worker = new Worker<EmbedJobPayload, { written: number }>(EMBED_QUEUE_NAME, embedJobProcessor(options.db, options.embedder), {
    connection,
    prefix: options.prefix,
    concurrency: options.concurrency,
    lockDuration: options.stalledMs,
    stalledInterval: options.stalledMs,
    // A job that keeps killing its worker (say, out of memory) fails instead of looping forever.
    maxStalledCount: 2,
  });
  worker.on('error', (error) => options.logger.warn({ err: error }, 'embedding worker: Redis error'));
  worker.on('completed', (_job, result) => options.onEmbedded?.(result.written));
  worker.on('failed', (job, error) => {
    const final = !job || job.attemptsMade >= (job.opts.attempts ?? 1) || error instanceof UnrecoverableError || error.name === 'UnrecoverableError';
    options.logger[final ? 'error' : 'warn'](
      { jobId: job?.id, attempt: job?.attemptsMade, err: error },
      final ? 'embedding job failed' : 'embedding job failed; retrying',
    );
  });
  worker.on('completed', (job, result) =>
    options.logger.info(
      {
        jobId: job.id,
        tools: (job.data as { hashes?: unknown[] })?.hashes?.length ?? null,
        written: result.written,
        ms: job.finishedOn && job.processedOn ? job.finishedOn - job.processedOn : null,
        outcome: 'completed',
      },
      'embedding job done',
    ),
  );
  await worker.waitUntilReady();
  options.logger.info({ concurrency: options.concurrency, model: options.embedder.modelId, prefix: options.prefix }, 'embedding worker started');
  return {
    worker,
    async close() {
      await worker.close();
      await connection.quit().catch(() => connection.disconnect());
    },
  };
}
