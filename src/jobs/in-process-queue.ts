import type { Db } from '../store/database.js';
import { hashesWithoutVector } from '../store/embedding-store.js';
import { chunk } from '../embed/embedder.js';
import { currentRecipe, embedDocuments } from '../embed/embed-documents.js';
import type { Embedder } from '../embed/embedder.js';
import type { Logger } from '../logger.js';
import { embedJobId, type EmbedQueue, type JobInfo, type QueueStatus } from './embed-queue.js';

/** Fresh writes are embedded ahead of the backlog `enqueueMissing()` finds (see EmbedQueue). */
type Lane = 'fresh' | 'backlog';

interface Job extends JobInfo {
  hashList: string[];
  lane: Lane;
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
  private readonly waiting: Record<Lane, Job[]> = { fresh: [], backlog: [] };
  /** Each hash waiting or being embedded, and its job. */
  private readonly scheduled = new Map<string, Job>();
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

  enqueue(hashes: string[]): Promise<string[]> {
    return this.schedule([...new Set(hashes)], 'fresh');
  }

  async enqueueMissing(): Promise<string[]> {
    return this.schedule(undefined, 'backlog');
  }

  /** `hashes` undefined: every stored document without a vector. */
  private async schedule(hashes: string[] | undefined, lane: Lane): Promise<string[]> {
    const recipe = currentRecipe(this.embedder.modelId);
    const missing: string[] = [];
    // A fresh write's hashes already queued: their jobs are its jobs, and move ahead with it.
    const held = new Set<Job>();
    for (const hash of await hashesWithoutVector(this.db, recipe, hashes)) {
      const job = this.scheduled.get(hash);
      if (!job) missing.push(hash);
      else if (lane === 'fresh') held.add(job);
    }
    for (const job of held) this.promote(job);
    const ids = [...held].map((job) => job.id);
    for (const batch of chunk(missing, this.options.batchSize)) {
      const id = embedJobId(recipe.model, recipe.textVersion, batch);
      ids.push(id);
      const existing = this.jobs.get(id);
      if (existing && existing.state !== 'failed' && existing.state !== 'completed') continue;
      const job: Job = { id, state: 'waiting', progress: 0, hashes: batch.length, attempts: 0, hashList: batch, lane };
      this.jobs.set(id, job);
      for (const hash of batch) this.scheduled.set(hash, job);
      this.waiting[lane].push(job);
    }
    this.trim();
    this.pump();
    return ids;
  }

  /** A backlog batch holding a freshly written hash moves to the fresh lane, behind its jobs. */
  private promote(job: Job): void {
    if (job.lane === 'fresh') return;
    job.lane = 'fresh';
    const at = this.waiting.backlog.indexOf(job);
    if (at < 0) return; // running, or waiting out a retry: it re-queues in its new lane
    this.waiting.backlog.splice(at, 1);
    this.waiting.fresh.push(job);
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
    return { kind: this.kind, model: this.embedder.modelId, waiting: this.waitingCount(), active: this.running, failed, completed };
  }

  async failedHashes(): Promise<Set<string>> {
    const hashes = new Set<string>();
    for (const job of this.jobs.values()) if (job.state === 'failed') for (const hash of job.hashList) hashes.add(hash);
    return hashes;
  }

  whenIdle(): Promise<void> {
    if (this.waitingCount() === 0 && this.running === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /**
   * Stops taking batches and waits for the ones being embedded; a batch waiting to retry is not
   * waited for (with the database gone that wait had no end). What is left unembedded is found
   * again by `enqueueMissing()` at the next start.
   */
  async close(): Promise<void> {
    this.closed = true;
    this.waiting.fresh.length = 0;
    this.waiting.backlog.length = 0;
    for (const wake of this.backoffs) wake();
    if (this.running > 0) await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
  }

  private waitingCount(): number {
    return this.waiting.fresh.length + this.waiting.backlog.length;
  }

  private pump(): void {
    while (!this.closed && this.running < this.options.concurrency && this.waitingCount() > 0) {
      const job = (this.waiting.fresh.shift() ?? this.waiting.backlog.shift())!;
      this.running += 1;
      void this.run(job).finally(() => {
        this.running -= 1;
        this.pump();
        if (this.running === 0 && (this.waitingCount() === 0 || this.closed)) {
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
        if (!this.closed) this.waiting[job.lane].push(job);
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
