import type { Worker } from 'node:worker_threads';

/**
 * A fixed pool of worker threads, each holding its own model, fed from a two-level queue.
 *
 * Why: tfjs computes on the calling thread, so a model on the main thread would stall every HTTP
 * request while it embeds a catalog. Queries jump ahead of queued document chunks so a search
 * waits for at most one in-flight chunk per worker, never behind a whole ingestion batch.
 *
 * The wire protocol (see `WorkerMessage`) is what a worker script must speak: post `ready` once its
 * model is loaded (or `failed`), then answer every `{ id, payload }` with `result` or `error`.
 */
export type WorkerMessage<R> =
  | { type: 'ready' }
  | { type: 'failed'; message: string }
  | { type: 'result'; id: number; value: R }
  | { type: 'error'; id: number; message: string };

export type WorkerRequest<P> = { id: number; payload: P };

export type Priority = 'high' | 'low';

/**
 * How queued high-priority tasks are sent to a worker together. A model call has a fixed cost
 * besides its per-text work, so under load the short queries waiting for a worker go as one call.
 * Nothing waits to form a batch: a task that finds a free worker runs at once, alone.
 */
export interface Coalescing<P, R> {
  /** Most tasks in one call. */
  max: number;
  /** Whether a task may share a call (e.g. only short texts, where padding costs less than a call). */
  joins(payload: P): boolean;
  merge(payloads: P[]): P;
  /** One result per payload, in order, from the merged call's result. */
  split(result: R, payloads: P[]): R[];
}

export interface WorkerPoolOptions<P = unknown, R = unknown> {
  /** Used in error messages, e.g. 'use-lite'. */
  name: string;
  size: number;
  /** Starts one worker; called again to replace a worker that crashed after it was ready. */
  spawn: () => Worker;
  /** A worker that has not posted `ready` by then counts as failed. */
  startupTimeoutMs?: number;
  /** Send queued high-priority tasks to a freed worker together; absent = one task per call. */
  coalesceHigh?: Coalescing<P, R>;
  /**
   * While a high-priority task arrived within this window, low-priority tasks never take the last
   * free worker (pools of two or more): a query then starts at once instead of waiting for a
   * document chunk. Pure ingestion, with no queries, still uses every worker. 0 = off.
   */
  reserveForHighMs?: number;
}

interface Task<P, R> {
  id: number;
  payload: P;
  signal: AbortSignal | undefined;
  resolve: (value: R) => void;
  reject: (error: Error) => void;
}

interface Slot<P, R> {
  worker: Worker;
  busyWith: Task<P, R> | null;
  lastError: Error | null;
}

/** Generous: the models load in well under a second, but a cold disk or a busy CI box is slow. */
const DEFAULT_STARTUP_TIMEOUT_MS = 60_000;

export class WorkerPool<P, R> {
  readonly #options: WorkerPoolOptions<P, R>;
  readonly #slots = new Set<Slot<P, R>>();
  readonly #high: Task<P, R>[] = [];
  readonly #low: Task<P, R>[] = [];
  #nextId = 1;
  #lastHighAt = Number.NEGATIVE_INFINITY;
  #reserveTimer: NodeJS.Timeout | null = null;
  #closed = false;
  /** Set once no worker is left; every later call fails with it. */
  #broken: Error | null = null;

  private constructor(options: WorkerPoolOptions<P, R>) {
    this.#options = options;
  }

  /** Starts `size` workers and resolves once every one has loaded its model; rejects (and stops them all) if any fails. */
  static async start<P, R>(options: WorkerPoolOptions<P, R>): Promise<WorkerPool<P, R>> {
    const pool = new WorkerPool<P, R>(options);
    const starts = Array.from({ length: options.size }, () => pool.#startSlot());
    const results = await Promise.allSettled(starts);
    const failure = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failure) {
      await pool.close();
      throw failure.reason;
    }
    return pool;
  }

  get size(): number {
    return this.#slots.size;
  }

  /** Runs one task on the next free worker; `high` tasks are taken before any `low` one. */
  run(payload: P, priority: Priority, signal?: AbortSignal): Promise<R> {
    if (this.#closed) return Promise.reject(new Error(`${this.#options.name} worker pool is closed`));
    if (this.#broken) return Promise.reject(this.#broken);
    if (signal?.aborted) return Promise.reject(abortError(signal));
    if (priority === 'high') this.#lastHighAt = performance.now();
    return new Promise<R>((resolve, reject) => {
      const task: Task<P, R> = { id: this.#nextId++, payload, signal, resolve, reject };
      (priority === 'high' ? this.#high : this.#low).push(task);
      this.#dispatch();
    });
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#reserveTimer) clearTimeout(this.#reserveTimer);
    const closed = new Error(`${this.#options.name} worker pool is closed`);
    this.#rejectQueued(closed);
    const slots = [...this.#slots];
    this.#slots.clear();
    for (const slot of slots) slot.busyWith?.reject(closed);
    await Promise.all(slots.map((slot) => slot.worker.terminate()));
  }

  #startSlot(): Promise<void> {
    const { name, spawn, startupTimeoutMs = DEFAULT_STARTUP_TIMEOUT_MS } = this.#options;
    return new Promise<void>((resolve, reject) => {
      let worker: Worker;
      try {
        worker = spawn();
      } catch (error) {
        reject(new Error(`${name} worker could not start: ${messageOf(error)}`));
        return;
      }
      const slot: Slot<P, R> = { worker, busyWith: null, lastError: null };
      let ready = false;
      const timer = setTimeout(() => {
        fail(new Error(`${name} worker did not load its model within ${startupTimeoutMs} ms`));
        void worker.terminate();
      }, startupTimeoutMs);
      const fail = (error: Error) => {
        clearTimeout(timer);
        reject(error);
      };

      worker.on('message', (message: WorkerMessage<R>) => {
        if (message.type === 'ready') {
          ready = true;
          clearTimeout(timer);
          if (this.#closed) {
            void worker.terminate();
          } else {
            this.#slots.add(slot);
            this.#dispatch();
          }
          resolve();
        } else if (message.type === 'failed') {
          fail(new Error(`${name} worker could not load its model: ${message.message}`));
          void worker.terminate();
        } else {
          this.#settle(slot, message);
        }
      });
      worker.on('error', (error) => {
        slot.lastError = error;
      });
      worker.on('exit', (code) => {
        const cause = slot.lastError ? `: ${slot.lastError.message}` : '';
        if (!ready) {
          fail(new Error(`${name} worker exited with code ${code} before it was ready${cause}`));
          return;
        }
        if (!this.#slots.delete(slot)) return; // terminated by close()
        const crash = new Error(`${name} worker crashed (exit code ${code})${cause}`);
        slot.busyWith?.reject(crash);
        slot.busyWith = null;
        // Replace the worker; the task it was running is not retried, so a text that kills the
        // model cannot put the pool into a crash loop.
        this.#startSlot().catch((error: Error) => {
          if (this.#slots.size === 0 && !this.#closed) {
            this.#broken = new Error(`${name} has no worker left: ${error.message}`);
            this.#rejectQueued(this.#broken);
          }
        });
      });
    });
  }

  #settle(slot: Slot<P, R>, message: WorkerMessage<R>): void {
    const task = slot.busyWith;
    if (!task || !('id' in message) || message.id !== task.id) return;
    slot.busyWith = null;
    if (message.type === 'result') task.resolve(message.value);
    else if (message.type === 'error') task.reject(new Error(`${this.#options.name}: ${message.message}`));
    this.#dispatch();
  }

  #dispatch(): void {
    for (const slot of this.#slots) {
      if (slot.busyWith) continue;
      const task = this.#nextTask(this.#reservingLastWorker());
      if (!task) return;
      slot.busyWith = task;
      const request: WorkerRequest<P> = { id: task.id, payload: task.payload };
      slot.worker.postMessage(request);
    }
  }

  #nextTask(highOnly: boolean): Task<P, R> | undefined {
    const high = takeLive(this.#high);
    if (high) return this.#coalesce(high);
    return highOnly ? undefined : takeLive(this.#low);
  }

  /**
   * Whether the only free worker is kept for queries: queries arrived recently and other workers
   * exist. When the window ends with documents still queued, a timer hands them the worker.
   */
  #reservingLastWorker(): boolean {
    const window = this.#options.reserveForHighMs ?? 0;
    if (window <= 0 || this.#slots.size < 2 || this.#low.length === 0) return false;
    let free = 0;
    for (const slot of this.#slots) if (!slot.busyWith) free += 1;
    if (free !== 1) return false;
    const left = this.#lastHighAt + window - performance.now();
    if (left <= 0) return false;
    if (!this.#reserveTimer) {
      this.#reserveTimer = setTimeout(() => {
        this.#reserveTimer = null;
        this.#dispatch();
      }, left + 1);
      this.#reserveTimer.unref();
    }
    return true;
  }

  /** `first` alone, or `first` and the high-priority tasks queued behind it that may join, as one task. */
  #coalesce(first: Task<P, R>): Task<P, R> {
    const coalescing = this.#options.coalesceHigh;
    if (!coalescing || this.#high.length === 0 || !coalescing.joins(first.payload)) return first;
    const tasks = [first];
    const left: Task<P, R>[] = [];
    for (const task of this.#high.splice(0)) {
      if (task.signal?.aborted) task.reject(abortError(task.signal));
      else if (tasks.length < coalescing.max && coalescing.joins(task.payload)) tasks.push(task);
      else left.push(task);
    }
    this.#high.push(...left);
    if (tasks.length === 1) return first;
    const payloads = tasks.map((task) => task.payload);
    const rejectAll = (error: Error) => {
      for (const task of tasks) task.reject(error);
    };
    return {
      id: this.#nextId++,
      payload: coalescing.merge(payloads),
      signal: undefined,
      resolve: (value) => {
        let results: R[];
        try {
          results = coalescing.split(value, payloads);
        } catch (error) {
          rejectAll(new Error(`${this.#options.name}: ${messageOf(error)}`));
          return;
        }
        tasks.forEach((task, index) => task.resolve(results[index]!));
      },
      // One failed call fails every task in it; a text that kills the model is not retried alone.
      reject: rejectAll,
    };
  }

  #rejectQueued(error: Error): void {
    for (const task of this.#high.splice(0)) task.reject(error);
    for (const task of this.#low.splice(0)) task.reject(error);
  }
}

/** The first task of `queue` whose caller has not given up; the ones that have are rejected. */
function takeLive<P, R>(queue: Task<P, R>[]): Task<P, R> | undefined {
  let task = queue.shift();
  while (task?.signal?.aborted) {
    task.reject(abortError(task.signal));
    task = queue.shift();
  }
  return task;
}

function abortError(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new Error('aborted');
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
