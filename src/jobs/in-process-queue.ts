import type { Db } from '../store/database.js';
import { hashesWithoutVector } from '../store/embedding-store.js';
import { chunk } from '../embed/embedder.js';
import { currentRecipe, embedDocuments } from '../embed/embed-documents.js';
import type { Embedder } from '../embed/embedder.js';
import type { Logger } from '../logger.js';
import { embedJobId, type EmbedQueue, type JobInfo, type QueueStatus } from './embed-queue.js';

interface Job extends JobInfo {
  hashList: string[];
}

const KEEP_FINISHED = 1000;
const MAX_ATTEMPTS = 3;

/**
 * The embedded default's queue: one process, no Redis. Same contract as the BullMQ queue: jobs
 * are deduplicated by id, a failed batch is retried with backoff, and nothing is lost across a
 * restart because `enqueueMissing()` re-discovers what the store still lacks.
 */
export class InProcessEmbedQueue implements EmbedQueue {
  readonly kind = 'in-process' as const;
  private readonly jobs = new Map<string, Job>();
  private readonly waiting: Job[] = [];
  private readonly scheduled = new Set<string>();
  private running = 0;
  private idleWaiters: (() => void)[] = [];
  /** Wakes the batches waiting out a retry's backoff (close() does not wait for them). */
  private readonly backoffs = new Set<() => void>();
  private closed = false;

  constructor(
    private readonly db: Db,
    private readonly embedder: Embedder,
    private readonly options: { batchSize: number; concurrency: number; logger: Logger; retryDelayMs?: number; onEmbedded?: (count: number) => void },
  ) {}

  async enqueue(hashes: string[]): Promise<string[]> {
    const recipe = currentRecipe(this.embedder.modelId);
    const missing = (await hashesWithoutVector(this.db, recipe, [...new Set(hashes)])).filter(
      (hash) => !this.scheduled.has(hash),
    );
    const ids: string[] = [];
    for (const batch of chunk(missing, this.options.batchSize)) {
      const id = embedJobId(recipe.model, recipe.textVersion, batch);
      ids.push(id);
      const existing = this.jobs.get(id);
      if (existing && existing.state !== 'failed' && existing.state !== 'completed') continue;
      const job: Job = { id, state: 'waiting', progress: 0, hashes: batch.length, attempts: 0, hashList: batch };
      this.jobs.set(id, job);
      for (const hash of batch) this.scheduled.add(hash);
      this.waiting.push(job);
    }
    this.trim();
    this.pump();
    return ids;
  }

  async enqueueMissing(): Promise<string[]> {
    return this.enqueue(await hashesWithoutVector(this.db, currentRecipe(this.embedder.modelId)));
  }

  async getJob(id: string): Promise<JobInfo | undefined> {
    const job = this.jobs.get(id);
    if (!job) return undefined;
    return { ...job, hashList: [...job.hashList] };
  }

  async status(): Promise<QueueStatus> {
    let failed = 0;
    let completed = 0;
    for (const job of this.jobs.values()) {
      if (job.state === 'failed') failed += 1;
      if (job.state === 'completed') completed += 1;
    }
    return { kind: this.kind, model: this.embedder.modelId, waiting: this.waiting.length, active: this.running, failed, completed };
  }

  async failedHashes(): Promise<Set<string>> {
    const hashes = new Set<string>();
    for (const job of this.jobs.values()) if (job.state === 'failed') for (const hash of job.hashList) hashes.add(hash);
    return hashes;
  }

  whenIdle(): Promise<void> {
    if (this.waiting.length === 0 && this.running === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /**
   * Stops taking batches and waits for the ones being embedded; a batch waiting to retry is not
   * waited for (with the database gone that wait had no end). What is left unembedded is found
   * again by `enqueueMissing()` at the next start.
   */
  async close(): Promise<void> {
    this.closed = true;
    this.waiting.length = 0;
    for (const wake of this.backoffs) wake();
    if (this.running > 0) await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
  }

  private pump(): void {
    while (!this.closed && this.running < this.options.concurrency && this.waiting.length > 0) {
      const job = this.waiting.shift()!;
      this.running += 1;
      void this.run(job).finally(() => {
        this.running -= 1;
        this.pump();
        if (this.running === 0 && (this.waiting.length === 0 || this.closed)) {
          const waiters = this.idleWaiters;
          this.idleWaiters = [];
          for (const resolve of waiters) resolve();
        }
      });
    }
  }

  private async run(job: Job): Promise<void> {
    job.state = 'active';
    job.attempts += 1;
    try {
      const written = await embedDocuments(this.db, this.embedder, job.hashList);
      this.options.onEmbedded?.(written);
      job.state = 'completed';
      job.progress = 100;
      for (const hash of job.hashList) this.scheduled.delete(hash);
    } catch (error) {
      job.error = (error as Error).message;
      if (job.attempts < MAX_ATTEMPTS && !this.closed) {
        job.state = 'delayed';
        const delay = (this.options.retryDelayMs ?? 1000) * 2 ** (job.attempts - 1);
        this.options.logger.warn({ jobId: job.id, attempt: job.attempts, err: error }, 'embedding batch failed; retrying');
        await this.backoff(delay);
        job.state = 'waiting';
        if (!this.closed) this.waiting.push(job);
      } else {
        job.state = 'failed';
        for (const hash of job.hashList) this.scheduled.delete(hash);
        this.options.logger.error({ jobId: job.id, err: error }, 'embedding batch failed');
      }
    }
  }

  /** Waits `ms`, or until close(). */
  private backoff(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.backoffs.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      this.backoffs.add(wake);
    });
  }

  private trim(): void {
    if (this.jobs.size <= KEEP_FINISHED) return;
    for (const [id, job] of this.jobs) {
      if (this.jobs.size <= KEEP_FINISHED) break;
      if (job.state === 'completed' || job.state === 'failed') this.jobs.delete(id);
    }
  }
}
