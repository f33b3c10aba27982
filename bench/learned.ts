/**
 * `npm run bench:learned`: what learning from use costs a search (issue 72).
 *
 * 1. The learned list alone (src/ranking/learned.ts), in process: `--events` events over past
 *    queries of the four corpora's dev sets, half of them made distinct by an extra word, each with a
 *    512-dimension vector (the default model's), from 20 callers, for tools drawn Zipf-like (the first
 *    ones far more often); the time of one `list()` per query over 100 candidates drawn alike, and
 *    the index's memory (heap and array buffers after a full GC, built less before; a past query's vector is drawn
 *    from its text, so the bench itself holds none).
 * 2. End to end: a stored catalog of `--tools` tools (bench/lib/scale-catalog.ts), `--events` events
 *    written through the store's insert (as POST /v1/feedback writes them), and hybrid catalog searches
 *    over HTTP with learning on and off in alternating rounds (the service in process, no model: the
 *    learned list runs on the query's words; its embedding part is timed in 1).
 *
 *   npm run bench:learned -- [--tools 100000] [--events 100000] [--store postgres|pglite] [--queries 60] [--rounds 3] [--shown 10] [--list-only]
 *
 * Each event names `--shown` tools shown with it and passed over (drawn as the used ones are), as
 * the MCP correlation and a quoted search_id record them (0: events that name only what was used).
 *
 * Target (issue 72): at 100,000 events on a 100,000-tool catalog, a search's p50 rises by <= 2 ms.
 * The last line is the report as JSON.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { distinctTerms } from '../src/ranking/bm25.js';
import { LEARNED_EVENTS_PER_TOOL, LearnedIndex } from '../src/ranking/learned.js';
import { queryTerms } from '../src/ranking/search-text.js';
import { seededRandom } from '../src/eval/seeded-random.js';
import { getCatalog } from '../src/store/catalog-store.js';
import { currentHashes, insertFeedback, PURGE_PAGE, purgeFeedback } from '../src/store/feedback-store.js';
import { sql } from 'drizzle-orm';
import { queryRows } from '../src/store/database.js';
import { openBenchStore } from './lib/bench-store.js';
import { startInProcess } from './lib/in-process.js';
import { toolAt } from './lib/scale-catalog.js';
import { summarize } from './lib/stats.js';
import { memoryInUse } from './lib/memory.js';

const { values } = parseArgs({
  options: {
    tools: { type: 'string', default: '100000' },
    events: { type: 'string', default: '100000' },
    store: { type: 'string', default: 'postgres' },
    queries: { type: 'string', default: '60' },
    rounds: { type: 'string', default: '3' },
    shown: { type: 'string', default: '10' },
    pg: { type: 'string', default: process.env.BENCH_PG ?? 'postgres://postgres@127.0.0.1:5432' },
    /** Only part 1, the learned list alone. */
    'list-only': { type: 'boolean', default: false },
  },
});
const toolCount = Number(values.tools);
const eventCount = Number(values.events);
const rounds = Number(values.rounds);
const shownCount = Number(values.shown);
const EVAL = fileURLToPath(new URL('../../shared/eval/', import.meta.url));
const random = seededRandom(7);

const devQueries = readdirSync(EVAL)
  .filter((name) => !name.startsWith('.') && name !== 'poison' && name !== 'README.md')
  .flatMap((name) =>
    readFileSync(`${EVAL}${name}/queries.dev.jsonl`, 'utf8')
      .trim()
      .split('\n')
      .map((line) => (JSON.parse(line) as { query: string }).query),
  );
const words = [...new Set(devQueries.flatMap((query) => queryTerms(query)))];
const timed = devQueries.filter((_, index) => index % 7 === 3).slice(0, Number(values.queries));

/** A tool used after a query: the catalog's first tools far more often (Zipf-like, as use concentrates). */
const usedTool = () => toolAt(Math.floor(toolCount * random() ** 3)).name;
/** What the model was shown with a tool used and passed over. */
const passedOver = () => Array.from({ length: shownCount }, usedTool);
/** What the other lists rank for a query: 100 tools, drawn as the used ones are. */
const candidates = () => Array.from({ length: 100 }, usedTool);

/** The past queries of the events: dev queries, half made distinct by an extra word. */
const pastQuery = () => {
  const query = devQueries[Math.floor(random() * devQueries.length)]!;
  return random() < 0.5 ? `${query} ${words[Math.floor(random() * words.length)]}` : query;
};
const unitVector = (draw: () => number = random) => {
  const vector = Array.from({ length: 512 }, () => draw() - 0.5);
  const norm = Math.hypot(...vector);
  return vector.map((x) => x / norm);
};
/** A past query's embedding, the same for the same text (drawn from its text's hash). */
const vectorOf = (query: string) => unitVector(seededRandom(createHash('sha256').update(query).digest().readUInt32LE(0)));

// 1. The learned list alone.
const empty = memoryInUse();
const index = new LearnedIndex();
const now = Date.now() / 1000;
for (let i = 0; i < eventCount; i++) {
  const query = pastQuery();
  index.add(query, distinctTerms(queryTerms(query)), vectorOf(query), {
    tool: usedTool(),
    caller: `c${i % 20}`,
    strength: 1,
    at: now - random() * 30 * 86_400,
    ...(shownCount > 0 ? { passedOver: passedOver() } : {}),
  });
}
const indexMb = (memoryInUse() - empty) / 2 ** 20;
const listMs: number[] = [];
for (let round = 0; round < rounds; round++) {
  for (const query of timed) {
    const started = performance.now();
    index.list(candidates(), distinctTerms(queryTerms(query)), unitVector(), now);
    listMs.push(performance.now() - started);
  }
}
const list = summarize(listMs);
const distinctPastQueries = index.size;
console.error(
  `learned list alone: ${eventCount} events, ${distinctPastQueries} distinct past queries; p50 ${list.p50.toFixed(2)} ms, p99 ${list.p99.toFixed(2)} ms; the index's memory ${indexMb.toFixed(1)} MB (its own estimate, for LEARNED_MEMORY: ${(index.bytes / 2 ** 20).toFixed(1)} MB)`,
);

if (values['list-only']) process.exit(0);

// 2. End to end.

const { database, drop } = await openBenchStore(values.store, values.pg, 'toolsift_bench_learned');
const service = await startInProcess({ EMBED_MODEL: 'none', CATALOG_WARMUP: 'false' }, database);
try {
  const catalog = 'learned';
  for (let start = 0; start < toolCount; start += 5000) {
    const tools = Array.from({ length: Math.min(5000, toolCount - start) }, (_, k) => toolAt(start + k));
    const answer = await fetch(`${service.base}/v1/catalogs/${catalog}/tools`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ tools }),
    });
    if (!answer.ok) throw new Error(`push answered ${answer.status}: ${await answer.text()}`);
  }
  const row = (await getCatalog(database.db, 'default', catalog))!;
  const written = performance.now();
  for (let start = 0; start < eventCount; start += 2000) {
    const batch = Array.from({ length: Math.min(2000, eventCount - start) }, (_, k) => ({
      query: pastQuery(),
      toolName: usedTool(),
      caller: `c${(start + k) % 20}`,
      strength: 1,
      ...(shownCount > 0 ? { passedOver: passedOver() } : {}),
    }));
    const hashes = await currentHashes(database.db, row.id, [...new Set(batch.map((event) => event.toolName))]);
    await insertFeedback(
      database.db,
      row.id,
      batch.map((event) => ({ ...event, toolHash: hashes.get(event.toolName)! })),
      LEARNED_EVENTS_PER_TOOL,
    );
  }
  console.error(`${toolCount} tools pushed, ${eventCount} events written in ${((performance.now() - written) / 1000).toFixed(1)} s`);
  const learned = service.deps.search.learned;
  const search = async (query: string) => {
    const started = performance.now();
    const answer = await fetch(`${service.base}/v1/catalogs/${catalog}/search`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query, top_k: 10, explain: true }),
    });
    const body = (await answer.json()) as { results: { explain: { learned: unknown } }[] };
    if (!answer.ok) throw new Error(`search answered ${answer.status}`);
    return { ms: performance.now() - started, learned: body.results.filter((result) => result.explain.learned).length };
  };
  // Untimed: the index and the learned events are read once.
  for (const query of timed) await search(query);
  const on: number[] = [];
  const off: number[] = [];
  let touched = 0;
  for (let round = 0; round < rounds; round++) {
    for (const learning of round % 2 === 0 ? [false, true] : [true, false]) {
      (service.deps.search as { learned?: typeof learned }).learned = learning ? learned : undefined;
      for (const query of timed) {
        const { ms, learned: withLearned } = await search(query);
        (learning ? on : off).push(ms);
        if (learning && withLearned > 0) touched++;
      }
    }
  }
  // The sweep of stale events (purgeFeedback) walks every event: its time with none stale, all kept.
  const held = (await queryRows<{ n: number }>(database.db, sql`select count(*)::int as n from feedback_events`))[0]!.n;
  const swept = performance.now();
  const page = PURGE_PAGE[database.kind];
  const purged = await purgeFeedback(database.db, 86_400, page);
  const sweepMs = performance.now() - swept;
  const windows = Math.ceil(held / page);
  const a = summarize(off);
  const b = summarize(on);
  console.log(
    `store ${values.store}, ${toolCount} tools, ${eventCount} events (${shownCount} passed over each), ${timed.length} queries x ${rounds} rounds (hybrid, no model)`,
  );
  console.log(`learning off: p50 ${a.p50.toFixed(2)} ms, p99 ${a.p99.toFixed(2)} ms`);
  console.log(`learning on:  p50 ${b.p50.toFixed(2)} ms, p99 ${b.p99.toFixed(2)} ms (answers with a learned vote: ${touched} of ${timed.length * rounds})`);
  console.log(
    `p50 rise ${(b.p50 - a.p50).toFixed(2)} ms (target <= 2 ms); the learned list alone, with vectors: p50 ${list.p50.toFixed(2)} ms, p99 ${list.p99.toFixed(2)} ms; its index's memory ${indexMb.toFixed(1)} MB`,
  );
  console.log(
    `the feedback sweep over the ${held} events stored, none stale: ${sweepMs.toFixed(0)} ms in ${windows} windows of ${page} (${(sweepMs / windows).toFixed(1)} ms a window); removed ${purged.expired + purged.stale}`,
  );
  console.log(
    JSON.stringify({
      store: values.store,
      tools: toolCount,
      events: eventCount,
      shown: shownCount,
      off: a,
      on: b,
      listAlone: list,
      distinctPastQueries,
      indexMemoryMb: Number(indexMb.toFixed(1)),
      eventsStored: held,
      sweepMs: Number(sweepMs.toFixed(1)),
      sweepWindows: windows,
    }),
  );
} finally {
  await service.close();
  await drop();
}
