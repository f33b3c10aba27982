import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadEmbedder } from '../../src/embed/create-embedder.js';
import type { Embedder } from '../../src/embed/embedder.js';
import { createUseLiteEmbedder, useLiteWorkerSourceTs } from '../../src/embed/use-lite.js';
import { WorkerPool } from '../../src/embed/worker-pool.js';

const MODEL_DIR = path.resolve(process.cwd(), '../shared/models');
const TINY_MODEL = 'test/tiny-random-bert';

/** Loads through `loadEmbedder` and fails (never skips) with the reason when the model is missing. */
async function mustLoad(model: string, extra: { modelDir?: string; threads?: number } = {}): Promise<Embedder> {
  const { embedder, status } = await loadEmbedder({ model, allowRemote: false, threads: 1, ...extra });
  if (!embedder) throw new Error(`embedding model '${model}' did not load: ${status.reason}`);
  return embedder;
}

/** Each thread of this process and its nice value, from /proc (Linux): the field after `priority` in `stat`. */
function niceByThread(): Map<number, number> {
  const threads = new Map<number, number>();
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      threads.set(Number(tid), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]));
    } catch {
      // the thread ended between the listing and the read
    }
  }
  return threads;
}

const dot = (a: number[], b: number[]) => a.reduce((sum, x, i) => sum + x * b[i]!, 0);
const norm = (a: number[]) => Math.sqrt(dot(a, a));

describe('use-lite (real model in worker threads)', () => {
  let one: Embedder;
  let two: Embedder;

  beforeAll(async () => {
    one = await mustLoad('use-lite', { threads: 1 });
    two = await createUseLiteEmbedder({ threads: 2, chunkSize: 4 });
  }, 120_000);
  afterAll(async () => {
    await one?.close();
    await two?.close();
  });

  it('embeds queries and documents as 512-d unit vectors', async () => {
    expect(one.modelId).toBe('use-lite');
    expect(one.dimension).toBe(512);
    const query = await one.embedQuery('search the web');
    const documents = await one.embedDocuments(['web_search: Search the web', 'read_file: Read a file', '']);
    for (const vector of [query, ...documents]) {
      expect(vector).toHaveLength(512);
      expect(norm(vector)).toBeCloseTo(1, 6);
    }
    expect(await one.embedDocuments([])).toEqual([]);
  });

  it('puts similar texts closer than unrelated ones', async () => {
    const [search, webQuery, deleteFile] = await one.embedDocuments(['search the web', 'web search engine query', 'delete a file from disk']);
    expect(dot(search!, webQuery!)).toBeGreaterThan(dot(search!, deleteFile!));
  });

  it('gives the same vectors with 2 threads as with 1, in input order', async () => {
    const texts = Array.from({ length: 11 }, (_, i) => `tool number ${i}: fetch weather for city ${i}`);
    const [fromOne, fromTwo] = await Promise.all([one.embedDocuments(texts), two.embedDocuments(texts)]);
    expect(fromTwo).toHaveLength(texts.length);
    for (let i = 0; i < texts.length; i++) {
      const difference = Math.max(...fromOne[i]!.map((x, j) => Math.abs(x - fromTwo[i]![j]!)));
      expect(difference).toBeLessThan(1e-5);
    }
    const query = await two.embedQuery(texts[3]!);
    expect(Math.max(...query.map((x, j) => Math.abs(x - fromOne[3]![j]!)))).toBeLessThan(1e-5);
  });

  it('gives each of many concurrent queries its own vector when they share a model call', async () => {
    const queries = Array.from({ length: 7 }, (_, i) => `weather forecast for city ${i}${' today'.repeat(i)}`);
    queries.push(`a long task: ${'plan the trip, book the train and the hotel, then mail the itinerary; '.repeat(2)}`);
    // One thread: the first query runs alone, the six short ones behind it go in one call, the long one alone.
    const together = await Promise.all(queries.map((query) => one.embedQuery(query)));
    const alone = await one.embedDocuments(queries);
    for (let i = 0; i < queries.length; i++) {
      expect(Math.max(...together[i]!.map((x, j) => Math.abs(x - alone[i]![j]!)))).toBeLessThan(1e-5);
    }
  });

  it('answers a query without waiting for a long document batch', async () => {
    const texts = Array.from({ length: 120 }, (_, i) => `tool ${i}: ${'reads and writes spreadsheets in the cloud '.repeat(3)}`);
    const batchStart = performance.now();
    const batch = two.embedDocuments(texts).then(() => performance.now() - batchStart);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const queryStart = performance.now();
    const vector = await two.embedQuery('convert a spreadsheet to csv');
    const queryMs = performance.now() - queryStart;
    const batchMs = await batch;
    console.log(`use-lite query during a ${texts.length}-text batch: ${queryMs.toFixed(0)} ms (batch ${batchMs.toFixed(0)} ms)`);
    expect(vector).toHaveLength(512);
    // Behind the whole batch it would finish with it; ahead of the queue it waits for one chunk.
    // Timing targets belong in bench/research/embed-model.ts; this bound only catches a FIFO queue.
    expect(queryMs).toBeLessThan(batchMs / 2);
  });

  it.runIf(process.platform === 'linux')('runs its model threads at the nice value given, and leaves the other threads alone', async () => {
    const before = niceByThread();
    const niced = await createUseLiteEmbedder({ threads: 2, nice: 7 });
    try {
      expect(await niced.embedQuery('convert a spreadsheet to csv')).toHaveLength(512);
      const after = niceByThread();
      const started = [...after].filter(([tid]) => !before.has(tid));
      expect(started.filter(([, nice]) => nice === 7)).toHaveLength(2);
      for (const [tid, nice] of before) if (after.has(tid)) expect(after.get(tid), `thread ${tid}`).toBe(nice);
      expect(after.get(process.pid)).toBe(0);
    } finally {
      await niced.close();
    }
  });

  it.runIf(process.platform === 'linux')('leaves its model threads at the process priority with nice 0', async () => {
    const before = niceByThread();
    const plain = await createUseLiteEmbedder({ threads: 1, nice: 0 });
    try {
      await plain.embedQuery('list files');
      const started = [...niceByThread()].filter(([tid]) => !before.has(tid));
      expect(started.length).toBeGreaterThan(0);
      expect(started.map(([, nice]) => nice)).toEqual(started.map(() => 0));
    } finally {
      await plain.close();
    }
  });

  it('gives the same vectors after its threads warm up as without the warm-up', async () => {
    // The warm-up's speed is bench/research/embed-model.ts --first-queries; here: it leaves no state behind.
    const texts = ['convert a spreadsheet to csv', 'search', 'read files '.repeat(40), 'find the weather forecast for a city'];
    const cold = await createUseLiteEmbedder({ threads: 1, warmUp: false });
    const warm = await createUseLiteEmbedder({ threads: 1 });
    try {
      const [coldVectors, warmVectors] = await Promise.all([cold.embedDocuments(texts), warm.embedDocuments(texts)]);
      warmVectors.forEach((vector, i) => vector.forEach((value, d) => expect(value, `text ${i} dimension ${d}`).toBeCloseTo(coldVectors[i]![d]!, 6)));
      expect(await warm.embedQuery(texts[0]!)).toEqual(await cold.embedQuery(texts[0]!));
    } finally {
      await Promise.all([cold.close(), warm.close()]);
    }
  });

  it('refuses a nice value outside 0-19', async () => {
    await expect(createUseLiteEmbedder({ threads: 1, nice: 20 })).rejects.toThrow(/nice must be an integer from 0 to 19, got 20/);
  });

  it('loads its model even when the wasm backend starts after the weights are read', async () => {
    // CI saw "Backend 'wasm' has not yet been initialized" twice: the weights were ready before
    // the WebAssembly compile. Delaying every compile by 500 ms in the worker makes that order certain.
    const slowCompile = `
      const instantiate = WebAssembly.instantiate;
      WebAssembly.instantiate = (...args) => new Promise((resolve) => setTimeout(resolve, 500)).then(() => instantiate(...args));
    `;
    const worker = new Worker(slowCompile + useLiteWorkerSourceTs(), { eval: true });
    try {
      const first = await new Promise((resolve, reject) => {
        worker.once('message', resolve);
        worker.once('error', reject);
      });
      expect(first).toEqual({ type: 'ready' });
    } finally {
      await worker.terminate();
    }
  });
});

describe('transformers.js (tiny random BERT from a local folder, remote disabled)', () => {
  let tiny: Embedder;

  beforeAll(async () => {
    tiny = await mustLoad(TINY_MODEL, { modelDir: MODEL_DIR });
  }, 60_000);
  afterAll(async () => {
    await tiny?.close();
  });

  it('discovers the dimension and returns unit vectors in order', async () => {
    expect(tiny.modelId).toBe(TINY_MODEL);
    expect(tiny.dimension).toBe(32);
    const texts = ['find information online', 'delete a file', 'x'.repeat(2000)];
    const documents = await tiny.embedDocuments(texts);
    expect(documents).toHaveLength(3);
    for (const vector of [...documents, await tiny.embedQuery('find information online')]) {
      expect(vector).toHaveLength(32);
      expect(norm(vector)).toBeCloseTo(1, 6);
    }
    // Same text alone and inside a padded batch: padding must not leak into mean pooling.
    const [alone] = await tiny.embedDocuments([texts[1]!]);
    expect(Math.max(...alone!.map((x, j) => Math.abs(x - documents[1]![j]!)))).toBeLessThan(1e-5);
  });

  it('reports a missing model folder as unavailable, naming the folder', async () => {
    const { embedder, status } = await loadEmbedder({
      model: 'test/no-such-model',
      modelDir: MODEL_DIR,
      allowRemote: false,
      threads: 1,
    });
    expect(embedder).toBeNull();
    expect(status.state).toBe('unavailable');
    expect(status.reason).toContain(path.join(MODEL_DIR, 'test/no-such-model'));
  });
});

describe('loadEmbedder', () => {
  it("reports 'none' as disabled", async () => {
    expect(await loadEmbedder({ model: 'none', allowRemote: false, threads: 1 })).toEqual({
      embedder: null,
      status: { state: 'disabled', modelId: 'none' },
    });
  });
});

describe('WorkerPool', () => {
  /** A worker speaking the pool's protocol that dies on the text 'crash'. */
  const spawnEcho = () =>
    new Worker(
      `const { parentPort } = require('node:worker_threads');
       parentPort.on('message', ({ id, payload }) => {
         if (payload === 'crash') process.exit(3);
         if (payload === 'throw') throw new Error('boom');
         setTimeout(() => parentPort.postMessage({ type: 'result', id, value: payload.toUpperCase() }), 20);
       });
       parentPort.postMessage({ type: 'ready' });`,
      { eval: true },
    );

  it('rejects the call a crashed worker was running, then keeps serving with a replacement', async () => {
    const pool = await WorkerPool.start<string, string>({ name: 'echo', size: 1, spawn: spawnEcho });
    try {
      const queued = pool.run('after', 'low');
      await expect(pool.run('crash', 'high')).rejects.toThrow(/echo worker crashed \(exit code 3\)/);
      await expect(queued).resolves.toBe('AFTER');
      await expect(pool.run('throw', 'high')).rejects.toThrow(/echo worker crashed.*boom/);
      await expect(pool.run('again', 'high')).resolves.toBe('AGAIN');
    } finally {
      await pool.close();
    }
  });

  it('runs high-priority tasks before queued low-priority ones', async () => {
    const pool = await WorkerPool.start<string, string>({ name: 'echo', size: 1, spawn: spawnEcho });
    try {
      const finished: string[] = [];
      const track = (p: Promise<string>) => p.then((value) => void finished.push(value));
      await Promise.all([track(pool.run('a', 'low')), track(pool.run('b', 'low')), track(pool.run('c', 'low')), track(pool.run('q', 'high'))]);
      expect(finished).toEqual(['A', 'Q', 'B', 'C']);
    } finally {
      await pool.close();
    }
  });

  it('keeps the last free worker for queries while they keep coming, and gives it back when they stop', async () => {
    // Each task reports when it ran; overlapping runs mean two workers were busy at once.
    const spawnTimed = () =>
      new Worker(
        `const { parentPort } = require('node:worker_threads');
         parentPort.on('message', ({ id, payload }) => {
           const start = Date.now();
           setTimeout(() => parentPort.postMessage({ type: 'result', id, value: { payload, start, end: Date.now() } }), 150);
         });
         parentPort.postMessage({ type: 'ready' });`,
        { eval: true },
      );
    type Run = { payload: string; start: number; end: number };
    const overlap = (a: Run, b: Run) => a.start < b.end && b.start < a.end;
    const pool = await WorkerPool.start<string, Run>({ name: 'timed', size: 2, spawn: spawnTimed, reserveForHighMs: 1_500 });
    try {
      // No query yet: two document chunks run on both workers at once.
      const [a, b] = (await Promise.all([pool.run('a', 'low'), pool.run('b', 'low')])) as [Run, Run];
      expect(overlap(a, b), JSON.stringify([a, b])).toBe(true);
      // After a query, documents leave one worker free: they run one after another ...
      await pool.run('q', 'high');
      const documents = Promise.all(['c', 'd', 'e'].map((text) => pool.run(text, 'low')));
      // ... and a query sent meanwhile runs beside them, not after them.
      const r = await pool.run('r', 'high');
      const [c, d, e] = (await documents) as [Run, Run, Run];
      expect([overlap(c, d), overlap(d, e), overlap(c, e)]).toEqual([false, false, false]);
      expect(r.end, JSON.stringify({ r, c, d, e })).toBeLessThan(d.end);
      // When queries stop for the window, documents get both workers back.
      await new Promise((resolve) => setTimeout(resolve, 1_600));
      const [f, g] = (await Promise.all([pool.run('f', 'low'), pool.run('g', 'low')])) as [Run, Run];
      expect(overlap(f, g), JSON.stringify([f, g])).toBe(true);
    } finally {
      await pool.close();
    }
  });

  /** Answers each text with the size of the call it came in; fails a call that holds 'fail'. */
  const spawnBatchEcho = () =>
    new Worker(
      `const { parentPort } = require('node:worker_threads');
       parentPort.on('message', ({ id, payload }) => setTimeout(() => {
         if (payload.includes('fail')) parentPort.postMessage({ type: 'error', id, message: 'bad text' });
         else parentPort.postMessage({ type: 'result', id, value: payload.map((text) => text + '/' + payload.length) });
       }, 20));
       parentPort.postMessage({ type: 'ready' });`,
      { eval: true },
    );
  const startCoalescing = (max: number) =>
    WorkerPool.start<string[], string[]>({
      name: 'batch-echo',
      size: 1,
      spawn: spawnBatchEcho,
      coalesceHigh: {
        max,
        joins: (payload) => !payload.includes('alone'),
        merge: (payloads) => payloads.flat(),
        split: (result, payloads) => payloads.map((_, i) => [result[i]!]),
      },
    });

  it('sends high-priority tasks that wait for a worker in one call, at most `max`, and never low ones', async () => {
    const pool = await startCoalescing(3);
    try {
      const high = ['a', 'b', 'alone', 'c', 'd', 'e'].map((text) => pool.run([text], 'high'));
      const low = ['x', 'y'].map((text) => pool.run([text], 'low'));
      // 'a' finds the worker free and runs alone; b, c, d wait and go together, passing 'alone',
      // which may not share a call and goes next; e follows alone.
      const finished: string[] = [];
      await Promise.all(high.map((task) => task.then(([value]) => void finished.push(value!))));
      expect(finished).toEqual(['a/1', 'b/3', 'c/3', 'd/3', 'alone/1', 'e/1']);
      expect((await Promise.all(low)).flat()).toEqual(['x/1', 'y/1']);
    } finally {
      await pool.close();
    }
  });

  it('fails every task of a shared call that fails, and the next call goes on', async () => {
    const pool = await startCoalescing(8);
    try {
      const first = pool.run(['a'], 'high');
      const shared = [pool.run(['b'], 'high'), pool.run(['fail'], 'high')];
      await expect(first).resolves.toEqual(['a/1']);
      for (const task of shared) await expect(task).rejects.toThrow('batch-echo: bad text');
      await expect(pool.run(['c'], 'high')).resolves.toEqual(['c/1']);
    } finally {
      await pool.close();
    }
  });

  it('fails to start with the worker’s own error when the model cannot load', async () => {
    const spawnBroken = () =>
      new Worker(`require('node:worker_threads').parentPort.postMessage({ type: 'failed', message: 'weights missing' })`, {
        eval: true,
      });
    await expect(WorkerPool.start({ name: 'broken', size: 2, spawn: spawnBroken })).rejects.toThrow('broken worker could not load its model: weights missing');
  });

  it('rejects pending and later calls once closed', async () => {
    const pool = await WorkerPool.start<string, string>({ name: 'echo', size: 1, spawn: spawnEcho });
    const pending = expect(pool.run('slow', 'low')).rejects.toThrow('echo worker pool is closed');
    await pool.close();
    await pending;
    await expect(pool.run('x', 'high')).rejects.toThrow('echo worker pool is closed');
  });
});
