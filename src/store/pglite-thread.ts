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
import { spawnWorkerModule } from '../worker-module.js';
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

/** Unref'd while no call waits: the database thread never keeps the process alive on its own. */
export class PgliteThread implements Queryable {
  readonly #worker: Worker;
  readonly #waiting = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
  #nextId = 1;
  #stopped: Error | null = null;

  private constructor(worker: Worker) {
    this.#worker = worker;
    worker.on('message', (reply: PgliteReply) => {
      const waiter = this.#waiting.get(reply.id);
      if (!waiter) return;
      this.#waiting.delete(reply.id);
      if (reply.ok) waiter.resolve(reply.value);
      else waiter.reject(toError(reply.error));
      if (this.#waiting.size === 0) worker.unref();
    });
    const stop = (error: Error) => {
      // A stopped database answers every call as unavailable (a 503, and /readyz says so), never hangs.
      this.#stopped ??= Object.assign(new Error(`the embedded database stopped: ${error.message}`), { code: '57P01' });
      for (const waiter of this.#waiting.values()) waiter.reject(this.#stopped);
      this.#waiting.clear();
    };
    worker.on('error', stop);
    worker.on('exit', (code) => stop(new Error(`its thread exited with code ${code}`)));
  }

  /** Starts the thread and opens `dataDir` there (a path, or `memory://`); rejects if PGlite cannot open it. */
  static async start(dataDir: string): Promise<PgliteThread> {
    const thread = new PgliteThread(spawnWorkerModule(import.meta.url, 'pglite-worker', { workerData: { dataDir } }));
    try {
      await thread.#call(0, null);
    } catch (error) {
      await thread.#worker.terminate();
      throw error;
    }
    return thread;
  }

  #call(id: number, request: PgliteRequest | null): Promise<unknown> {
    if (this.#stopped) return Promise.reject(this.#stopped);
    return new Promise((resolve, reject) => {
      this.#waiting.set(id, { resolve, reject });
      this.#worker.ref();
      if (request) this.#worker.postMessage(request);
    });
  }

  #query(sql: string, params: unknown[] = [], options: QueryOptions = {}, tx?: number): Promise<QueryResult> {
    const id = this.#nextId++;
    const textOids = Object.keys(options.parsers ?? {}).map(Number);
    const request = { kind: 'query', id, sql, params, rowMode: options.rowMode ?? 'object', textOids } as const;
    return this.#call(id, tx === undefined ? { ...request, background: isBackground() } : { ...request, tx }) as Promise<QueryResult>;
  }

  query(sql: string, params?: unknown[], options?: QueryOptions): Promise<QueryResult> {
    return this.#query(sql, params, options);
  }

  /** Runs `body` in one transaction: committed when it resolves, rolled back when it throws. */
  async transaction<T>(body: (tx: Queryable) => Promise<T>): Promise<T> {
    const tx = this.#nextId++;
    await this.#call(tx, { kind: 'begin', id: tx, background: isBackground() });
    const end = (commit: boolean) => {
      const id = this.#nextId++;
      return this.#call(id, { kind: 'end', id, tx, commit });
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
    if (!this.#stopped) {
      const id = this.#nextId++;
      await this.#call(id, { kind: 'close', id }).catch(() => {});
    }
    await this.#worker.terminate();
  }
}
