/**
 * The embedded PGlite on a worker thread of its own (pglite-worker.ts), behind the part of PGlite's
 * client that drizzle uses (`query`, `transaction`).
 *
 * Why: PGlite is PostgreSQL compiled to WASM, and it executes on the thread that calls it. In the
 * process it ran every statement on the HTTP thread, so under `npm run bench -- --mix` its ~10 s of
 * statements in 30 s (the never-seen tools' writes, the catalog searches) were time every other
 * request waited, where PostgreSQL's own processes run beside it. Here the thread only sends
 * statements and receives rows. Order is kept: requests reach the worker in the order sent, and
 * PGlite runs them one at a time, a transaction excluding every other statement until it ends, as
 * it did in the process, except that work nobody waits for yields to work a request waits for
 * (priority.ts; the worker's scheduler).
 */
import type { Worker } from 'node:worker_threads';
import { spawnWorkerModule } from '../lib/worker-module.js';
import { isBackground } from './priority.js';

/** `background`: nobody waits for it (priority.ts), so it yields to work a request waits for. */
export type PgliteRequest =
  | { kind: 'query'; id: number; sql: string; params: unknown[]; rowMode: 'array' | 'object'; textOids: number[]; tx?: number; background?: boolean }
  | { kind: 'begin'; id: number; background?: boolean }
  | { kind: 'end'; id: number; tx: number; commit: boolean }
  | { kind: 'close'; id: number; background?: boolean };

export type PgliteError = { message: string; name?: string; code?: string; [field: string]: string | number | undefined };

export type PgliteReply = { id: number; ok: true; value: unknown } | { id: number; ok: false; error: PgliteError };

export interface QueryResult {
  rows: unknown[];
  fields: { name: string; dataTypeID: number }[];
  affectedRows?: number;
}

interface QueryOptions {
  rowMode?: 'array' | 'object';
  /** drizzle's: each maps a type to its text, which is what the worker does for these types. */
  parsers?: Record<number, unknown>;
}

interface Queryable {
  query(sql: string, params?: unknown[], options?: QueryOptions): Promise<QueryResult>;
}

/** A PostgreSQL-shaped error (`code`, `detail`, ...) from the worker's, so callers read it as before. */
function toError(described: PgliteError): Error {
  const { message, name, ...fields } = described;
  return Object.assign(new Error(message), fields, name && name !== 'Error' ? { name } : {});
}

/** A thread that crashed is restarted on the same data at most this often in RESTART_WINDOW_MS; past that it stays stopped. */
const RESTARTS_MAX = 3;
const RESTART_WINDOW_MS = 60_000;

/**
 * Unref'd while no call waits: the database thread never keeps the process alive on its own.
 *
 * A thread that dies (PGlite aborting, say on running out of WebAssembly memory) fails the calls it
 * held as unavailable (503), and a new thread reopens the data directory, where PostgreSQL's crash
 * recovery drops what was not committed; calls made meanwhile wait for it. An in-memory database
 * has nothing to reopen, and one that keeps crashing stays stopped: `/readyz` then says not ready.
 */
export class PgliteThread implements Queryable {
  readonly #dataDir: string;
  readonly #spawn: (dataDir: string) => Worker;
  #worker!: Worker;
  /** Counts threads started; a transaction belongs to the thread it began on. */
  #generation = 0;
  /** While a crashed thread's successor opens the data; calls wait for it. */
  #restarting: Promise<void> | null = null;
  readonly #crashes: number[] = [];
  readonly #waiting = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
  #nextId = 1;
  #closing = false;
  #stopped: Error | null = null;
  readonly #onStopped: ((error: Error) => void)[] = [];
  #writes = 0;

  private constructor(dataDir: string, spawn: (dataDir: string) => Worker) {
    this.#dataDir = dataDir;
    this.#spawn = spawn;
  }

  /**
   * Starts the thread and opens `dataDir` there (a path, or `memory://`); rejects if PGlite cannot
   * open it. `spawn` starts the thread (tests wrap it to stop one).
   */
  static async start(dataDir: string, spawn: (dataDir: string) => Worker = spawnPgliteWorker): Promise<PgliteThread> {
    const thread = new PgliteThread(dataDir, spawn);
    await thread.#open();
    return thread;
  }

  /** A new thread on the data directory, ready when PGlite has opened it. */
  async #open(): Promise<void> {
    const worker = this.#spawn(this.#dataDir);
    this.#worker = worker;
    this.#generation += 1;
    this.#writes += 1;
    let opened = false;
    const ready = new Promise<void>((resolve, reject) => this.#waiting.set(0, { resolve: () => resolve(), reject }));
    worker.on('message', (reply: PgliteReply) => {
      const waiter = this.#waiting.get(reply.id);
      if (!waiter) return;
      this.#waiting.delete(reply.id);
      if (reply.ok) waiter.resolve(reply.value);
      else waiter.reject(toError(reply.error));
      if (this.#waiting.size === 0) worker.unref();
    });
    let gone = false;
    const died = (error: Error) => {
      if (gone) return;
      gone = true;
      if (opened) this.#crashed(error);
      else this.#waiting.get(0)?.reject(error);
    };
    worker.on('error', died);
    worker.on('exit', (code) => died(new Error(`its thread exited with code ${code}`)));
    try {
      await ready;
      opened = true;
    } catch (error) {
      this.#waiting.delete(0);
      await worker.terminate();
      throw error;
    }
  }

  /** The thread died: fail what it held, then start another on the same data, unless it keeps dying. */
  #crashed(error: Error): void {
    if (this.#closing) {
      this.#stop(error);
      return;
    }
    const lost = Object.assign(new Error(`the embedded database stopped: ${error.message}; it is being restarted`), { code: '57P01' });
    for (const waiter of this.#waiting.values()) waiter.reject(lost);
    this.#waiting.clear();
    const now = performance.now();
    this.#crashes.push(now);
    while (this.#crashes[0]! < now - RESTART_WINDOW_MS) this.#crashes.shift();
    if (this.#dataDir.startsWith('memory://')) {
      this.#stop(new Error(`${error.message} (an in-memory database is not restarted)`));
      return;
    }
    if (this.#crashes.length > RESTARTS_MAX) {
      this.#stop(new Error(`${error.message} (${this.#crashes.length} times within ${RESTART_WINDOW_MS / 1000} s)`));
      return;
    }
    this.#restarting = this.#open().then(
      () => {
        this.#restarting = null;
      },
      (reopen: Error) => {
        this.#restarting = null;
        this.#stop(new Error(`${error.message}; reopening it failed: ${reopen.message}`));
      },
    );
  }

  /** A stopped database answers every call as unavailable (a 503, and /readyz says so), never hangs. */
  #stop(error: Error): void {
    if (this.#stopped) return;
    this.#stopped = Object.assign(new Error(`the embedded database stopped: ${error.message}`), { code: '57P01' });
    for (const waiter of this.#waiting.values()) waiter.reject(this.#stopped);
    this.#waiting.clear();
    if (!this.#closing) for (const listener of this.#onStopped) listener(this.#stopped);
  }

  /** Calls `listener` once if the thread stops for good other than by `close()` (see the class comment). */
  onStopped(listener: (error: Error) => void): void {
    this.#onStopped.push(listener);
  }

  /**
   * Moves whenever a statement that may change data is sent or settles (anything but a plain
   * `select`, a transaction's start and end) and when the thread restarts. This process is the
   * store's only writer (the data directory's lock), so a row read while it stood still is the
   * store's row for as long as it stands still: `store/read-cache.ts`.
   */
  get writes(): number {
    return this.#writes;
  }

  #call(id: number, request: PgliteRequest, generation?: number): Promise<unknown> {
    if (!writesNothing(request)) {
      this.#writes += 1;
      const settled = this.#send(id, request, generation);
      const moved = () => {
        this.#writes += 1;
      };
      settled.then(moved, moved);
      return settled;
    }
    return this.#send(id, request, generation);
  }

  #send(id: number, request: PgliteRequest, generation?: number): Promise<unknown> {
    if (this.#stopped) return Promise.reject(this.#stopped);
    if (this.#restarting) return this.#restarting.then(() => this.#send(id, request, generation));
    if (generation !== undefined && generation !== this.#generation) {
      return Promise.reject(Object.assign(new Error('the embedded database restarted during this transaction, which did not commit'), { code: '57P01' }));
    }
    return new Promise((resolve, reject) => {
      this.#waiting.set(id, { resolve, reject });
      this.#worker.ref();
      this.#worker.postMessage(request);
    });
  }

  #query(sql: string, params: unknown[] = [], options: QueryOptions = {}, tx?: { id: number; generation: number }): Promise<QueryResult> {
    const id = this.#nextId++;
    const textOids = Object.keys(options.parsers ?? {}).map(Number);
    const request = { kind: 'query', id, sql, params, rowMode: options.rowMode ?? 'object', textOids } as const;
    if (tx === undefined) return this.#call(id, { ...request, background: isBackground() }) as Promise<QueryResult>;
    return this.#call(id, { ...request, tx: tx.id }, tx.generation) as Promise<QueryResult>;
  }

  query(sql: string, params?: unknown[], options?: QueryOptions): Promise<QueryResult> {
    return this.#query(sql, params, options);
  }

  /** Runs `body` in one transaction: committed when it resolves, rolled back when it throws. */
  async transaction<T>(body: (tx: Queryable) => Promise<T>): Promise<T> {
    const tx = { id: this.#nextId++, generation: 0 };
    await this.#call(tx.id, { kind: 'begin', id: tx.id, background: isBackground() });
    tx.generation = this.#generation;
    const end = (commit: boolean) => {
      const id = this.#nextId++;
      return this.#call(id, { kind: 'end', id, tx: tx.id, commit }, tx.generation);
    };
    let result: T;
    try {
      result = await body({ query: (sql, params, options) => this.#query(sql, params, options, tx) });
    } catch (error) {
      await end(false).catch(() => {});
      throw error;
    }
    await end(true);
    return result;
  }

  async close(): Promise<void> {
    this.#closing = true;
    await this.#restarting;
    if (!this.#stopped) {
      const id = this.#nextId++;
      await this.#call(id, { kind: 'close', id }).catch(() => {});
    }
    await this.#worker.terminate();
  }
}

/** A plain `select` outside a transaction: it reads and changes nothing. */
const writesNothing = (request: PgliteRequest) => request.kind === 'query' && request.tx === undefined && /^\s*select\b/i.test(request.sql);

/** The thread that owns PGlite (pglite-worker.ts), opening `dataDir`. */
export function spawnPgliteWorker(dataDir: string): Worker {
  return spawnWorkerModule(import.meta.url, 'pglite-worker', { workerData: { dataDir } });
}
