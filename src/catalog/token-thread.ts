/**
 * Definition tokens counted on a worker thread of their own (tokens-worker.ts). Counting was the
 * largest share of storing a never-seen tool on the main thread (~40-80 us a tool): under
 * `npm run bench -- --mix` it took 5.1 of the main thread's 29 busy seconds, and every gateway
 * turn waited behind it. The main thread now only makes the texts (tokens.ts).
 *
 * The thread starts on the first count and ends after TOKEN_THREAD_IDLE_MS without one: the
 * tokenizer's tables (~66 MB) and the thread's heap are held only while tools are being written,
 * not by a service that only answers searches and remembered lists.
 */
import { WorkerPool } from '../embed/worker-pool.js';
import type { Logger } from '../logger.js';
import { spawnWorkerModule } from '../lib/worker-module.js';
import { countHere, type TextCounter } from './tokens.js';

/** How long the counting thread stays after its last count. Starting it again takes ~0.2-0.4 s. */
export const TOKEN_THREAD_IDLE_MS = 60_000;

export interface TokenThread extends TextCounter {
  /** Whether the thread is running (started and not yet ended for idleness). */
  readonly running: boolean;
  close(): Promise<void>;
}

/** Unref'd: the counting thread never keeps the process alive (close() still ends it). */
function spawnCounter() {
  const worker = spawnWorkerModule(import.meta.url, 'tokens-worker');
  worker.unref();
  return worker;
}

/**
 * Counts asked while the thread starts wait for it. If it cannot start (or a call fails: a crashed
 * thread is replaced), or after close(), the texts are counted on this thread instead, with a
 * warning. A write never fails because of the counting thread.
 */
export function startTokenThread(logger: Logger, idleMs = TOKEN_THREAD_IDLE_MS): TokenThread {
  let pool: Promise<WorkerPool<string[], number[]> | null> | null = null;
  let inFlight = 0;
  let idleTimer: NodeJS.Timeout | null = null;
  let closed = false;

  const start = () =>
    WorkerPool.start<string[], number[]>({ name: 'token counter', size: 1, spawn: spawnCounter }).catch((error: Error) => {
      logger.warn({ err: error }, 'token counting thread did not start; counting on the main thread');
      return null;
    });
  const stop = async () => {
    const stopping = pool;
    pool = null;
    await (await stopping)?.close();
  };
  const onThisThread = (texts: readonly string[], why: string, error?: unknown) => {
    logger.warn(error ? { err: error } : {}, `token counting thread ${why}; counting those tools on the main thread`);
    return countHere.countTexts(texts);
  };

  return {
    get running() {
      return pool !== null;
    },
    async countTexts(texts) {
      if (closed) return onThisThread(texts, 'is closed');
      if (idleTimer) clearTimeout(idleTimer);
      idleTimer = null;
      inFlight += 1;
      try {
        const ready = await (pool ??= start());
        if (!ready) return await countHere.countTexts(texts);
        try {
          return await ready.run([...texts], 'low');
        } catch (error) {
          return await onThisThread(texts, 'failed a call', error);
        }
      } finally {
        inFlight -= 1;
        if (inFlight === 0 && !closed) {
          idleTimer = setTimeout(() => {
            idleTimer = null;
            if (inFlight === 0) void stop();
          }, idleMs);
          idleTimer.unref();
        }
      }
    },
    async close() {
      closed = true;
      if (idleTimer) clearTimeout(idleTimer);
      await stop();
    },
  };
}
