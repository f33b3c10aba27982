/**
 * Bare-model numbers for use-lite, the figures behind its `threads` and `chunkSize` defaults:
 * document throughput (texts/s) per chunk size and thread count, single-query latency when idle,
 * and query latency while a long document batch is running (the case the priority queue is for).
 *
 *   npx tsx bench/research/embed-model.ts [--threads=1,2] [--chunks=1,8,16,32,64] [--texts=128] [--repeats=3]
 *                                [--latency-chunks=8,64]
 *   npx tsx bench/research/embed-model.ts --query-batches   only: queries in one shared call vs one call each
 *                                                  (the figures behind use-lite's query batching)
 *   npx tsx bench/research/embed-model.ts --first-queries[=8]  only: a new process's model load and its first
 *                                                  queries, with and without the threads' warm-up
 *                                                  (USE_LITE_WARM_UP_TEXTS), alternating, each start
 *                                                  in its own process
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { createUseLiteEmbedder } from '../../src/embed/use-lite.js';
import { loadQueries, readJsonl } from '../../src/eval/run-eval.js';
import { seededRandom } from '../../test/helpers/seeded-random.js';
import { median, medianAndRange, summarize } from '../lib/stats.js';

const EVAL_DIR = fileURLToPath(new URL('../../../shared/eval/livemcpbench/', import.meta.url));

const args = new Map(
  process.argv.slice(2).map((arg) => {
    const [key, value = ''] = arg.replace(/^--/, '').split('=');
    return [key!, value];
  }),
);
const listArg = (name: string, fallback: number[]) => (args.has(name) ? args.get(name)!.split(',').map(Number) : fallback);
const threadCounts = listArg('threads', [1, 2]);
const chunkSizes = listArg('chunks', [1, 8, 16, 32, 64]);
const textCount = listArg('texts', [128])[0]!;
const repeats = listArg('repeats', [3])[0]!;
const latencyChunkSizes = listArg('latency-chunks', [8, 64]);

const toolTexts = (readJsonl(`${EVAL_DIR}catalog.jsonl`) as { name: string; description: string }[]).map((tool) => `${tool.name} ${tool.description}`);
const queries = loadQueries(`${EVAL_DIR}queries.dev.jsonl`).map((q) => q.query);
const documents = toolTexts.slice(0, textCount);

if (args.has('first-query-child')) {
  console.log(JSON.stringify(await firstQueries(args.get('first-query-child') === 'warm', Number(args.get('offset')))));
  process.exit(0);
}
if (args.has('first-queries')) {
  reportFirstQueries(Number(args.get('first-queries') || 8));
  process.exit(0);
}

if (args.has('query-batches')) {
  await reportQueryBatches();
  process.exit(0);
}

console.log(`use-lite, ${documents.length} tool texts per batch (LiveMCPBench catalog), ${repeats} repeats`);
for (const threads of threadCounts) {
  console.log(`\n## threads=${threads}`);
  for (const chunkSize of chunkSizes) {
    const embedder = await createUseLiteEmbedder({ threads, chunkSize });
    await embedder.embedDocuments(documents.slice(0, threads * chunkSize)); // warm every worker
    const rates: number[] = [];
    for (let r = 0; r < repeats; r++) {
      const start = performance.now();
      await embedder.embedDocuments(documents);
      rates.push(documents.length / ((performance.now() - start) / 1000));
    }
    console.log(`documents chunk=${String(chunkSize).padStart(2)}: ${medianAndRange(rates)} texts/s`);
    await embedder.close();
  }
  await reportQueryLatency(threads);
}

/** Idle latency, then latency and main event-loop delay while a long document batch runs. */
async function reportQueryLatency(threads: number) {
  for (const chunkSize of latencyChunkSizes) {
    const embedder = await createUseLiteEmbedder({ threads, chunkSize });
    await embedder.embedDocuments(documents.slice(0, threads * chunkSize));
    if (chunkSize === latencyChunkSizes[0]) {
      const idle: number[] = [];
      for (const query of queries.slice(0, 40)) idle.push(await timed(() => embedder.embedQuery(query)));
      console.log(`query, idle (ms): ${percentiles(idle)}`);
    }
    const loopDelay = monitorEventLoopDelay({ resolution: 10 });
    loopDelay.enable();
    const batch = embedder.embedDocuments(toolTexts.slice(0, 256));
    const underLoad: number[] = [];
    for (const query of queries.slice(0, 20)) {
      underLoad.push(await timed(() => embedder.embedQuery(query)));
      await sleep(50);
    }
    await batch;
    loopDelay.disable();
    console.log(`query during a 256-text batch, chunk=${chunkSize} (ms): ${percentiles(underLoad)}`);
    console.log(`  main-thread event-loop delay meanwhile (ms): p50 ${(loopDelay.percentile(50) / 1e6).toFixed(1)}  max ${(loopDelay.max / 1e6).toFixed(1)}`);
    await embedder.close();
  }
}

/**
 * One thread, one call at a time: the median time of a set of queries sent in one call, against
 * the same set sent one call each. A call's cost follows its longest text, so only sets of short
 * queries gain (use-lite.ts USE_LITE_SHARED_QUERY_MAX_CHARS).
 */
async function reportQueryBatches() {
  const vocabulary = [
    ...new Set(
      toolTexts
        .join(' ')
        .toLowerCase()
        .split(/[^a-z]+/)
        .filter((word) => word.length > 3),
    ),
  ];
  const random = seededRandom(11);
  const words = (count: number) => Array.from({ length: count }, () => vocabulary[Math.floor(random() * vocabulary.length)]).join(' ');
  let next = 0;
  const task = () => `${queries[next++ % queries.length]} ${words(1)}`;
  const cases: [string, () => string[]][] = [
    ['4 x 3 words', () => [words(3), words(3), words(3), words(3)]],
    ['8 x 3 words', () => Array.from({ length: 8 }, () => words(3))],
    ['3 x 3 words + 10 words', () => [words(3), words(3), words(3), words(10)]],
    ['3 x 3 words + a task sentence', () => [words(3), words(3), words(3), task()]],
    ['2 task sentences', () => [task(), task()]],
  ];
  const embedder = await createUseLiteEmbedder({ threads: 1, chunkSize: 8, queryBatch: 1 });
  for (let i = 0; i < 30; i++) await embedder.embedQuery(words(3)); // JIT and WASM warm-up
  console.log(`use-lite, 1 thread: a set of queries in one call vs one call each, median of ${repeats * 10} sets (ms)`);
  for (const [label, make] of cases) {
    const together: number[] = [];
    const apart: number[] = [];
    for (let r = 0; r < repeats * 10; r++) {
      together.push(await timed(() => embedder.embedDocuments(make())));
      const texts = make();
      apart.push(
        await timed(async () => {
          for (const text of texts) await embedder.embedQuery(text);
        }),
      );
    }
    console.log(`${label.padEnd(32)} one call ${median(together).toFixed(1).padStart(6)}   one each ${median(apart).toFixed(1).padStart(6)}`);
  }
  await embedder.close();
}

interface FirstQueries {
  load_ms: number;
  /** Two queries sent at once, one per thread: the slower one's time. */
  first_pair_ms: number;
  /** The next four, one after another: their median. */
  next_ms: number;
}

/** In this process: the model's load (the pool ready), then its first queries, as a service's first searches after a start. */
async function firstQueries(warmUp: boolean, offset: number): Promise<FirstQueries> {
  const started = performance.now();
  const embedder = await createUseLiteEmbedder({ threads: 2, warmUp });
  const load_ms = performance.now() - started;
  const pick = (k: number) => queries[(offset + k) % queries.length]!;
  const pair = await Promise.all([timed(() => embedder.embedQuery(pick(0))), timed(() => embedder.embedQuery(pick(1)))]);
  const next: number[] = [];
  for (let k = 2; k < 6; k++) next.push(await timed(() => embedder.embedQuery(pick(k))));
  await embedder.close();
  return { load_ms, first_pair_ms: Math.max(...pair), next_ms: median(next) };
}

/** `starts` starts a side, alternating, each in a child process (a process keeps compiled WebAssembly for its later threads). */
function reportFirstQueries(starts: number) {
  const runs: Record<'warm' | 'cold', FirstQueries[]> = { warm: [], cold: [] };
  for (let start = 0; start < 2 * starts; start++) {
    const side = start % 2 === 0 ? 'cold' : 'warm';
    const output = execFileSync(
      process.execPath,
      [...process.execArgv, fileURLToPath(import.meta.url), `--first-query-child=${side}`, `--offset=${6 * Math.floor(start / 2)}`],
      { encoding: 'utf8' },
    );
    runs[side].push(JSON.parse(output.trim().split('\n').at(-1)!) as FirstQueries);
  }
  console.log(`use-lite, 2 threads, a new process each start, ${starts} starts a side (median, min-max; ms)`);
  for (const side of ['cold', 'warm'] as const) {
    const column = (key: keyof FirstQueries) => medianAndRange(runs[side].map((run) => run[key]));
    console.log(
      `${side === 'warm' ? 'with warm-up   ' : 'without warm-up'}  load ${column('load_ms')}  first two at once ${column('first_pair_ms')}  next four ${column('next_ms')}`,
    );
  }
}

async function timed(run: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await run();
  return performance.now() - start;
}

function percentiles(samples: number[]): string {
  const { p50, p95, max, n } = summarize(samples);
  return `median ${p50.toFixed(1)}  p95 ${p95.toFixed(1)}  max ${max.toFixed(1)}  (n=${n})`;
}

function sleep(ms: number) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
