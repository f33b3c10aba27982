import { availableParallelism } from 'node:os';
import { spawnWorkerModule, workerModuleSourceTs } from '../lib/worker-module.js';
import { chunk, type Embedder } from './embedder.js';
import { WorkerPool } from './worker-pool.js';

export const USE_LITE_MODEL_ID = 'use-lite';
export const USE_LITE_DIMENSION = 512;

/**
 * Texts per worker call. USE-Lite takes sparse token ids, so a batch saves no padding and buys
 * little: on LiveMCPBench tool texts throughput falls as batches grow (quiet machine, in-process:
 * 32.5 texts/s at 1, 28.9 at 8, 24.9 at 16, 18.8 at 64), while a query waits behind up to one
 * chunk per busy worker (median 62 ms at chunk 1 vs 577 ms at chunk 8 during a long batch).
 * Under CPU contention 2-4 matched or beat 1, so 4 is the compromise; re-measure with
 * `npx tsx bench/research/embed-model.ts --chunks=1,2,4,8`.
 */
export const DEFAULT_USE_LITE_CHUNK_SIZE = 4;

/**
 * For this long after a query, document chunks leave one model thread free: under a gateway's
 * steady turns plus an ingestion, a query then starts at once instead of after a chunk (the
 * selector's budget is 100 ms). Without queries, ingestion uses every thread.
 */
const QUERY_RESERVE_MS = 2_000;

/**
 * Most queries in one model call. Short queries that arrive while every worker is busy wait for the
 * next free one and go to it together, with the same vectors: four 3-word queries took 18 ms in one
 * call against 34 ms in four, eight 25 ms against 52 ms. A query that finds a free worker runs at
 * once, alone, so an idle service answers as fast as before. Figures:
 * `npx tsx bench/research/embed-model.ts --query-batches`.
 */
export const DEFAULT_USE_LITE_QUERY_BATCH = 8;

/**
 * Longest query (in characters) that shares a call. A call costs about as if every text had the
 * longest one's length: three 3-word queries with a 10-word one took 22 ms together against 31 ms
 * apart, but with a whole task sentence 47 ms against 37 ms, so longer queries run alone.
 */
export const USE_LITE_SHARED_QUERY_MAX_CHARS = 100;

/**
 * The model threads' nice value on Linux (0-19). Under load the two cores are shared by the model
 * threads, the HTTP thread, the store's thread and the bench's clients; at 0 a request's short
 * HTTP-thread work waits behind model work the scheduler finds equally urgent. At 10 the model gets
 * what the rest leaves: under mixed load the remembered list's p99 is ~10% lower and more turns are
 * answered (`npm run bench -- --mix`; docs/benchmarks.md).
 */
export const DEFAULT_USE_LITE_NICE = 10;

/**
 * Texts each model thread embeds once after loading, before it says ready: a thread's first call
 * pays for compiling and allocating what later calls reuse (a new process's first query took
 * 210-250 ms against 45-80 ms after one such call; `npx tsx bench/research/embed-model.ts --first-queries`).
 * Lengths from a word to a long task, as queries come.
 */
export const USE_LITE_WARM_UP_TEXTS = [
  'search',
  'search the web for news',
  'find the weather forecast for a city and send it to my team by email '.repeat(3),
  'read files '.repeat(40),
];

/** What `use-lite-worker.ts` receives as `workerData`. */
export interface UseLiteWorkerData {
  nice: number;
  /** Embedded once before `ready` (USE_LITE_WARM_UP_TEXTS); empty: none. */
  warmUpTexts: string[];
}

export interface UseLiteOptions {
  /** Worker threads, each holding its own model; default `defaultUseLiteThreads()`. */
  threads?: number;
  /** The model threads' nice value on Linux, 0-19 (0 = the process's own); default `DEFAULT_USE_LITE_NICE`. */
  nice?: number;
  /** Texts per worker call when embedding documents; default `DEFAULT_USE_LITE_CHUNK_SIZE`. */
  chunkSize?: number;
  /** Most waiting queries sent in one call; default `DEFAULT_USE_LITE_QUERY_BATCH`, 1 = one query per call. */
  queryBatch?: number;
  startupTimeoutMs?: number;
  /** Each thread embeds USE_LITE_WARM_UP_TEXTS before it is ready; default true (false: a bench's baseline). */
  warmUp?: boolean;
}

/**
 * One worker per core, at most 2: on a 2-core machine 2 workers gave ~1.45x the throughput of 1
 * (tfjs-wasm is single-threaded per model), and beyond 2 each worker costs ~130 MB while the HTTP
 * thread needs a core of its own.
 */
export function defaultUseLiteThreads(): number {
  return Math.max(1, Math.min(2, availableParallelism()));
}

/** Starts the worker pool and resolves once every worker has loaded the model. */
export async function createUseLiteEmbedder(options: UseLiteOptions = {}): Promise<Embedder> {
  const threads = options.threads ?? defaultUseLiteThreads();
  const chunkSize = options.chunkSize ?? DEFAULT_USE_LITE_CHUNK_SIZE;
  const queryBatch = options.queryBatch ?? DEFAULT_USE_LITE_QUERY_BATCH;
  const nice = options.nice ?? DEFAULT_USE_LITE_NICE;
  if (!Number.isInteger(threads) || threads < 1) throw new Error(`use-lite: threads must be a positive integer, got ${threads}`);
  if (!Number.isInteger(chunkSize) || chunkSize < 1) throw new Error(`use-lite: chunkSize must be a positive integer, got ${chunkSize}`);
  if (!Number.isInteger(queryBatch) || queryBatch < 1) throw new Error(`use-lite: queryBatch must be a positive integer, got ${queryBatch}`);
  if (!Number.isInteger(nice) || nice < 0 || nice > 19) throw new Error(`use-lite: nice must be an integer from 0 to 19, got ${nice}`);

  const pool = await WorkerPool.start<string[], number[][]>({
    name: USE_LITE_MODEL_ID,
    size: threads,
    spawn: () =>
      spawnWorkerModule(import.meta.url, 'use-lite-worker', {
        workerData: { nice, warmUpTexts: options.warmUp === false ? [] : USE_LITE_WARM_UP_TEXTS } satisfies UseLiteWorkerData,
      }),
    startupTimeoutMs: options.startupTimeoutMs,
    reserveForHighMs: QUERY_RESERVE_MS,
    coalesceHigh:
      queryBatch > 1
        ? {
            max: queryBatch,
            joins: (texts) => texts.every((text) => text.length <= USE_LITE_SHARED_QUERY_MAX_CHARS),
            merge: (payloads) => payloads.flat(),
            split: splitByLength,
          }
        : undefined,
  });

  return {
    modelId: USE_LITE_MODEL_ID,
    dimension: USE_LITE_DIMENSION,
    async embedDocuments(texts) {
      if (texts.length === 0) return [];
      // One failed chunk fails the batch; the abort drops its chunks still waiting in the queue.
      const batch = new AbortController();
      const parts = chunk(texts, chunkSize).map((part) =>
        pool.run(part, 'low', batch.signal).catch((error: Error) => {
          batch.abort(error);
          throw error;
        }),
      );
      return (await Promise.all(parts)).flat();
    },
    async embedQuery(text) {
      const [vector] = await pool.run([text], 'high');
      return vector!;
    },
    close: () => pool.close(),
  };
}

/** The vectors of a merged call, handed back to each payload in order. */
function splitByLength(vectors: number[][], payloads: string[][]): number[][][] {
  const expected = payloads.reduce((sum, texts) => sum + texts.length, 0);
  if (vectors.length !== expected) throw new Error(`a call of ${expected} texts returned ${vectors.length} vectors`);
  let offset = 0;
  return payloads.map((texts) => vectors.slice(offset, (offset += texts.length)));
}

/** The eval source of a worker thread that runs `use-lite-worker.ts` through tsx (see worker-module.ts). */
export function useLiteWorkerSourceTs(): string {
  return workerModuleSourceTs(import.meta.url, 'use-lite-worker');
}
