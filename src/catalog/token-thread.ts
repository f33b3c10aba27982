/**
 * Definition tokens counted on a worker thread of their own (tokens-worker.ts). Counting was the
 * largest share of storing a never-seen tool on the main thread (~40-80 us a tool): under
 * `npm run bench -- --mix` it took 5.1 of the main thread's 29 busy seconds, and every gateway
 * turn waited behind it. The main thread now only makes the texts (tokens.ts).
 */
import { WorkerPool } from '../embed/worker-pool.js';
import type { Logger } from '../logger.js';
import { spawnWorkerModule } from '../worker-module.js';
import { countHere, type TextCounter } from './tokens.js';

export interface TokenThread extends TextCounter {
  close(): Promise<void>;
}

/** Unref'd: the counting thread never keeps the process alive (close() still ends it). */
function spawnCounter() {
  const worker = spawnWorkerModule(import.meta.url, 'tokens-worker');
  worker.unref();
  return worker;
}

/**
 * Starts the thread in the background: counts asked before it is ready wait for it, and if it
 * cannot start (or a call fails: a crashed thread is replaced) the texts are counted on this thread
 * instead, with a warning. A write never fails because of the counting thread.
 */
export function startTokenThread(logger: Logger): TokenThread {
  const pool = WorkerPool.start<string[], number[]>({ name: 'token counter', size: 1, spawn: spawnCounter }).catch((error: Error) => {
    logger.warn({ err: error }, 'token counting thread did not start; counting on the main thread');
    return null;
  });
  return {
    async countTexts(texts) {
      const ready = await pool;
      if (!ready) return countHere.countTexts(texts);
      try {
        return await ready.run([...texts], 'low');
      } catch (error) {
        logger.warn({ err: error }, 'token counting thread failed a call; counting those tools on the main thread');
        return countHere.countTexts(texts);
      }
    },
    async close() {
      await (await pool)?.close();
    },
  };
}
