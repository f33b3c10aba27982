import { Queue, type JobsOptions, type JobState as BullJobState } from 'bullmq';
import { Redis } from 'ioredis';
import { currentRecipe } from '../embed/embed-documents.js';
import { chunk } from '../embed/embedder.js';
import { AppError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { Db } from '../store/database.js';
import { hashesWithoutVector } from '../store/embedding-store.js';
import {
  EMBED_QUEUE_NAME,
  embedJobId,
  embedJobPayload,
  type EmbedJobPayload,
  type EmbedQueue,
  type JobInfo,
  type JobState,
  type QueueStatus,
} from './embed-queue.js';

/**
 * Retries with backoff 1, 2, 4, 8 s cover a model restart or a short database blip; a longer
 * outage ends in `failed`, and the reconcile sweep enqueues those hashes again later.
 */
export const EMBED_JOB_OPTIONS: JobsOptions = {
  attempts: 5,
  backoff: { type: 'exponential', delay: 1000 },
  // Finished jobs are kept only so GET /v1/jobs/{id} can answer; dedup never relies on them
  // (the store says what is missing). A day / a week, bounded in number.
  removeOnComplete: { age: 24 * 3600, count: 10_000 },
  removeOnFail: { age: 7 * 24 * 3600, count: 10_000 },
};

/**
 * The backlog (`enqueueMissing`: at start, after Redis returns, each sweep) is queued with a
 * priority, and BullMQ runs every job without one first: a catalog pushed now is not embedded
 * behind a whole store re-embedding after an EMBED_MODEL change.
 */
const BACKLOG_PRIORITY = 1;

/** How often every process holding the queue re-enqueues what the store still lacks. */
export const DEFAULT_RECONCILE_MS = 60_000;

const CONNECT_TIMEOUT_MS = 5_000;

export interface BullmqQueueOptions {
  /** The producer's connection; the queue takes ownership and closes it. */
  connection: Redis;
  /** Model id the jobs are for (the active EMBED_MODEL). */
  model: string;
  batchSize: number;
  /** Redis key prefix: separates deployments (and tests) on one Redis. */
  prefix: string;
  logger: Logger;
  /** 0 disables the periodic sweep (reconnects still trigger one). */
  reconcileMs?: number;
}

/** Connects or throws a message naming the URL: a producer must never start without its queue. */
export async function connectRedis(url: string, options: { blocking?: boolean } = {}): Promise<Redis> {
  const redis = new Redis(url, {
    lazyConnect: true,
    // Workers block on Redis and BullMQ requires unlimited retries there; a producer must fail
    // fast instead, so a request answers 503 rather than hanging while Redis is away.
    maxRetriesPerRequest: options.blocking ? null : 1,
    enableOfflineQueue: options.blocking ?? false,
    connectTimeout: CONNECT_TIMEOUT_MS,
    retryStrategy: (times) => Math.min(times * 200, 2_000),
  });
  // ioredis reports every failed reconnect as an 'error' event; without a listener it is an unhandled one.
  redis.on('error', () => {});
  try {
    await Promise.race([
      redis.connect(),
      new Promise((_, reject) => setTimeout(() => reject(new Error(`timed out after ${CONNECT_TIMEOUT_MS} ms`)), CONNECT_TIMEOUT_MS).unref()),
    ]);
  } catch (error) {
    redis.disconnect();
    throw new Error(`Redis at ${redactUrl(url)} is unreachable (${(error as Error).message}); unset REDIS_URL to use the in-process queue`);
  }
  return redis;
}

function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return 'REDIS_URL';
  }
}

const STATE: Record<BullJobState | 'unknown', JobState> = {
  waiting: 'waiting',
  'waiting-children': 'waiting',
  prioritized: 'waiting',
  active: 'active',
  completed: 'completed',
  failed: 'failed',
  delayed: 'delayed',
  unknown: 'unknown',
};

/**
 * EmbedQueue on BullMQ: jobs carry hashes and the model id, and their ids are derived from both, so
 * two replicas enqueueing the same batch make one job. Only hashes without a vector are enqueued,
 * which is what makes re-ingesting an unchanged catalog enqueue nothing.
 */
export class BullmqEmbedQueue implements EmbedQueue {
  readonly kind = 'bullmq' as const;
  private readonly queue: Queue<EmbedJobPayload>;
  private readonly timer?: NodeJS.Timeout;
  private reconciling?: Promise<void>;
  private closed = false;

  constructor(
    private readonly db: Db,
    private readonly options: BullmqQueueOptions,
  ) {
    this.queue = new Queue<EmbedJobPayload>(EMBED_QUEUE_NAME, {
      connection: options.connection,
      prefix: options.prefix,
      defaultJobOptions: EMBED_JOB_OPTIONS,
    });
    this.queue.on('error', (error) => options.logger.debug({ err: error }, 'embedding queue connection error'));
    // Work accepted while Redis was away is in the store but not in the queue: find it again as
    // soon as Redis is back ('ready' fires on every reconnect), and on a timer for anything else.
    options.connection.on('ready', () => this.reconcile('redis reconnected'));
    const every = options.reconcileMs ?? DEFAULT_RECONCILE_MS;
    if (every > 0) {
      this.timer = setInterval(() => this.reconcile('periodic sweep'), every);
      this.timer.unref();
    }
  }

  get connected(): boolean {
    return this.options.connection.status === 'ready';
  }

  async enqueue(hashes: string[]): Promise<string[]> {
    const missing = await hashesWithoutVector(this.db, currentRecipe(this.options.model), [...new Set(hashes)]);
    return this.add(missing, 'fresh');
  }

  async enqueueMissing(): Promise<string[]> {
    const missing = await hashesWithoutVector(this.db, currentRecipe(this.options.model));
    if (missing.length === 0) return [];
    // Batches cut from a different set of hashes get different ids: leave out what an unfinished
    // job already holds, or a sweep during a long ingestion would embed much of it twice.
    const scheduled = await this.scheduledHashes();
    return this.add(
      missing.filter((hash) => !scheduled.has(hash)),
      'backlog',
    );
  }

  async getJob(id: string): Promise<JobInfo | undefined> {
    const job = await this.unavailableOnError(() => this.queue.getJob(id));
    if (!job) return undefined;
    const state = STATE[await this.unavailableOnError(() => job.getState())] ?? 'unknown';
    const payload = embedJobPayload.safeParse(job.data);
    return {
      id,
      state,
      progress: state === 'completed' ? 100 : typeof job.progress === 'number' ? job.progress : 0,
      hashes: payload.success ? payload.data.hashes.length : 0,
      hashList: payload.success ? payload.data.hashes : [],
      attempts: job.attemptsMade,
      ...(job.failedReason ? { error: job.failedReason } : {}),
    };
  }

  async status(): Promise<QueueStatus> {
    const counts = await this.unavailableOnError(() => this.queue.getJobCounts('waiting', 'prioritized', 'paused', 'delayed', 'active', 'failed', 'completed'));
    const workers = await this.unavailableOnError(() => this.queue.getWorkersCount());
    const [oldest] = await this.unavailableOnError(() => this.queue.getJobs(['waiting', 'prioritized'], 0, 0, true));
    return {
      kind: this.kind,
      model: this.options.model,
      workers,
      oldestWaitingMs: oldest ? Math.max(0, Date.now() - oldest.timestamp) : null,
      waiting: (counts.waiting ?? 0) + (counts.prioritized ?? 0) + (counts.paused ?? 0) + (counts.delayed ?? 0),
      active: counts.active ?? 0,
      failed: counts.failed ?? 0,
      completed: counts.completed ?? 0,
    };
  }

  /** Hashes of retained failed jobs (they gave up after every attempt; a sweep retries them). */
  async failedHashes(): Promise<Set<string>> {
    return jobHashes(await this.unavailableOnError(() => this.queue.getFailed(0, 999)));
  }

  /** Polls until no job waits or runs; needs a worker somewhere (this process or `npm run worker`). */
  async whenIdle(pollMs = 200): Promise<void> {
    for (;;) {
      const status = await this.status();
      if (status.waiting === 0 && status.active === 0) return;
      await new Promise((resolve) => setTimeout(resolve, pollMs));
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    await this.reconciling;
    await this.queue.close();
    await this.options.connection.quit().catch(() => this.options.connection.disconnect());
  }

  /** Re-enqueues what the store lacks; never throws (a failure waits for the next trigger). */
  reconcile(reason: string): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.reconciling ??= (async () => {
      try {
        const ids = await this.enqueueMissing();
        if (ids.length > 0) this.options.logger.info({ jobs: ids.length, reason }, 'enqueued documents still lacking a vector');
      } catch (error) {
        this.options.logger.warn({ err: error, reason }, 'could not re-enqueue missing embeddings; will retry');
      } finally {
        this.reconciling = undefined;
      }
    })();
    return this.reconciling;
  }

  private async add(hashes: string[], lane: 'fresh' | 'backlog'): Promise<string[]> {
    if (hashes.length === 0) return [];
    const { model, textVersion } = currentRecipe(this.options.model);
    const batches = chunk(hashes, this.options.batchSize).map((batch) => ({
      id: embedJobId(model, textVersion, batch),
      data: { model, textVersion, hashes: batch } satisfies EmbedJobPayload,
    }));
    return this.unavailableOnError(async () => {
      // A job id still in Redis makes `add` a no-op. That is the dedup for waiting and running
      // jobs; a finished one whose hashes are missing again (it failed, or the documents were
      // deleted and pushed again) must run again, so it is removed first.
      const states = await Promise.all(batches.map((batch) => this.queue.getJobState(batch.id)));
      await Promise.all(batches.map((batch, i) => (states[i] === 'completed' || states[i] === 'failed' ? this.queue.remove(batch.id) : undefined)));
      const priority = lane === 'backlog' ? BACKLOG_PRIORITY : 0;
      await this.queue.addBulk(batches.map((batch) => ({ name: 'embed', data: batch.data, opts: { jobId: batch.id, priority } })));
      if (lane === 'fresh') {
        // The same batch already waiting in the backlog: move it ahead with the fresh ones.
        const queued = batches.filter((_, i) => states[i] === 'prioritized');
        await Promise.all(queued.map(async (batch) => (await this.queue.getJob(batch.id))?.changePriority({ priority: 0 })));
      }
      return batches.map((batch) => batch.id);
    });
  }

  private async scheduledHashes(): Promise<Set<string>> {
    return jobHashes(await this.unavailableOnError(() => this.queue.getJobs(['waiting', 'prioritized', 'paused', 'delayed', 'active'], 0, -1)));
  }

  /** Redis being away is the service being unavailable (503), not an internal error. */
  private async unavailableOnError<T>(run: () => Promise<T>): Promise<T> {
    if (!this.connected) throw queueUnavailable(`Redis connection is ${this.options.connection.status}`);
    try {
      return await run();
    } catch (error) {
      if (this.connected && !isConnectionError(error)) throw error;
      throw queueUnavailable((error as Error).message);
    }
  }
}

/** Hashes of jobs for this model whose payload is valid (a malformed job names no real hash). */
function jobHashes(jobs: ({ data: unknown } | undefined)[]): Set<string> {
  const hashes = new Set<string>();
  for (const job of jobs) {
    const payload = embedJobPayload.safeParse(job?.data);
    if (payload.success) for (const hash of payload.data.hashes) hashes.add(hash);
  }
  return hashes;
}

function queueUnavailable(reason: string): AppError {
  return new AppError('service_unavailable', `embedding queue unavailable (${reason}); stored tools are embedded once Redis is back, and retrying is safe`);
}

function isConnectionError(error: unknown): boolean {
  const message = (error as Error)?.message ?? '';
  return /Connection is closed|Stream isn't writeable|ECONNREFUSED|ECONNRESET|max retries per request/i.test(message);
}
