import { createHash } from 'node:crypto';
import { z } from 'zod';

/** Queue and job names shared by producers and workers. */
export const EMBED_QUEUE_NAME = 'toolsift-embed';

/**
 * A job carries content hashes, the model id and the embedding text recipe version, never texts:
 * workers read documents from the store. Jobs queued before the version existed are version 1.
 */
export const embedJobPayload = z.object({
  model: z.string().min(1).max(200),
  textVersion: z.number().int().min(0).default(1),
  hashes: z
    .array(z.string().regex(/^[0-9a-f]{64}$/, 'hashes are sha256 hex'))
    .min(1)
    .max(1000),
});
export type EmbedJobPayload = z.infer<typeof embedJobPayload>;

export type JobState = 'waiting' | 'active' | 'completed' | 'failed' | 'delayed' | 'unknown';

export interface JobInfo {
  id: string;
  state: JobState;
  /** 0-100 */
  progress: number;
  hashes: number;
  /** The job's content hashes (not answered by the API: used to scope a job to a tenant's catalogs). */
  hashList: string[];
  error?: string;
  attempts: number;
}

export interface QueueStatus {
  kind: 'in-process' | 'bullmq';
  model: string;
  waiting: number;
  active: number;
  failed: number;
  completed: number;
  /** BullMQ: worker connections consuming the queue (any process), and how long the oldest waiting job has waited. */
  workers?: number;
  oldestWaitingMs?: number | null;
}

/**
 * Where embedding work goes. The in-process queue serves the embedded default; BullMQ on Redis
 * serves replicas and separate worker processes. Both dedupe by job id, derived from what a job
 * embeds, so the same hashes enqueued twice are one job.
 */
export interface EmbedQueue {
  readonly kind: QueueStatus['kind'];
  /**
   * Schedules the hashes that have no vector for the active model (a write just stored them);
   * returns the job ids. They go ahead of `enqueueMissing()`'s backlog, which after a model change
   * is the whole store: a catalog pushed now has its vectors in seconds, not after the backlog.
   */
  enqueue(hashes: string[]): Promise<string[]>;
  /** Schedules every stored document still lacking a vector (at start, or when Redis is back), behind fresh writes. */
  enqueueMissing(): Promise<string[]>;
  getJob(id: string): Promise<JobInfo | undefined>;
  status(): Promise<QueueStatus>;
  /** Hashes whose job gave up after every attempt (bounded to recent failures); progress reports them as failed. */
  failedHashes(): Promise<Set<string>>;
  /** Resolves once nothing is waiting or running (eval, tests, the ingest CLI). */
  whenIdle(): Promise<void>;
  close(): Promise<void>;
}

/** Stable id for one batch: the same model, text recipe and hashes always give the same id. */
export function embedJobId(model: string, textVersion: number, hashes: string[]): string {
  const digest = createHash('sha256')
    .update(`${model}\0${textVersion}\0`)
    .update([...hashes].sort().join(','))
    .digest('hex');
  return `embed-${digest.slice(0, 32)}`;
}
