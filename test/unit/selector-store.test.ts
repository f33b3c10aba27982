import { countHere, TokenCounter } from '../../src/catalog/tokens.js';
import { Writable } from 'node:stream';
import { beforeAll, describe, expect, it } from 'vitest';
import { BackgroundWork } from '../../src/lib/background-work.js';
import { createLogger } from '../../src/logger.js';
import { LruCache } from '../../src/lib/lru-cache.js';
import { MAX_WRITES_IN_FLIGHT, selectTools, type CachedToolList, type RequestTool, type SelectorDeps } from '../../src/search/selector.js';
import type { Db } from '../../src/store/database.js';
import type { LoadedVectors, VectorCache } from '../../src/store/vector-cache.js';
import { until } from '../helpers/assertions.js';
import { holdThread } from '../helpers/hold-thread.js';

/**
 * When a request's new tools are written: after its answer, which needs none of the write. The
 * store is a fake whose one statement (the documents' insert, which answers the new hashes) the test
 * settles by hand (the real write is covered by the selector's integration tests on PGlite and
 * PostgreSQL).
 */
function harness() {
  const settlers: { resolve: (hashes: string[]) => void; reject: (error: Error) => void }[] = [];
  const writes: Promise<string[]>[] = [];
  const db = {
    execute: () => {
      const write = new Promise<string[]>((resolve, reject) => settlers.push({ resolve, reject }));
      writes.push(write);
      return write.then((hashes) => ({ rows: hashes.map((hash) => ({ hash })) }));
    },
  } as unknown as Db;
  const lines: string[] = [];
  const sink = new Writable({ write: (chunk, _encoding, done) => (lines.push(String(chunk)), done()) });
  const deps: SelectorDeps = {
    db,
    embedder: null,
    queue: null,
    toolCache: new LruCache<string, RequestTool>(100),
    toolListCache: new LruCache<string, CachedToolList>(10),
    background: new BackgroundWork(),
    tokens: new TokenCounter(countHere),
    logger: createLogger('warn', sink),
  };
  return { deps, writes, settle: () => settlers.at(-1)!, settlers, lines };
}

const tools = [
  { name: 'read_file', description: 'Read a file from disk' },
  { name: 'web_search', description: 'Search the web' },
  { name: 'send_email', description: 'Send an email message' },
];
const input = { pattern: 'search the web', topK: 1, alwaysKeep: [], tools, toolsKey: 'list-1' };

/**
 * Lets settled promises' callbacks run. Work started after an answer (a write, a read) is waited for
 * with `until`: it takes as many turns as a busy machine needs (a fixed 5 ms wait failed in CI).
 */
const nextTurn = () => new Promise((resolve) => setTimeout(resolve, 5));

describe('selector: storing a request’s new tools', () => {
  // The tokenizer loads on its first count (a dynamic import, 0.1-1 s on a cold machine): loaded
  // here, so the turn after an answer is enough for the write to start.
  beforeAll(() => countHere.countTexts(['warm up']), 30_000);

  it('answers before the write of its new tools has finished, then remembers them as stored', async () => {
    const { deps, writes, settle } = harness();
    const selection = await selectTools(deps, input);
    expect(selection.names).toEqual(['web_search']);
    await until('the write to start', () => writes.length === 1);
    expect(writes).toHaveLength(1);
    expect(deps.background.size).toBe(1);
    expect(deps.toolListCache.get('list-1')).toBeUndefined();

    settle().resolve(['h1', 'h2', 'h3']);
    await deps.background.settled();
    expect(selection.newDocuments).toBe(3);
    expect(selection.timings.store_ms).toBeGreaterThan(0);
    expect(deps.toolListCache.get('list-1')?.tools.map(({ tool }) => tool.name)).toEqual(['read_file', 'web_search', 'send_email']);

    // The next turn with the same list writes nothing and ranks the same.
    const again = await selectTools(deps, { ...input, cached: deps.toolListCache.get('list-1') });
    await deps.background.settled();
    expect(again.names).toEqual(['web_search']);
    expect(writes).toHaveLength(1);
  });

  it('keeps the answer when the write fails, and the next request that sends the tools writes them again', async () => {
    const { deps, writes, settle, lines } = harness();
    const selection = await selectTools(deps, input);
    await until('the write to start', () => writes.length === 1);
    settle().reject(new Error('connection refused'));
    await selection.stored;
    expect(selection.names).toEqual(['web_search']);
    expect(selection.newDocuments).toBe(0);
    expect(deps.toolListCache.get('list-1')).toBeUndefined();
    expect(lines.join('')).toContain('could not store new tools');

    const retry = await selectTools(deps, input);
    await until('the retry’s write to start', () => writes.length === 2);
    expect(writes).toHaveLength(2);
    settle().resolve(['h1', 'h2', 'h3']);
    await retry.stored;
    expect(deps.toolListCache.get('list-1')).toBeDefined();
  });

  it(`makes a request wait for its own write once ${MAX_WRITES_IN_FLIGHT} writes are pending`, async () => {
    const { deps, writes, settlers } = harness();
    const newList = (index: number) => ({ ...input, toolsKey: `list-${index}`, tools: [{ name: `tool_${index}`, description: 'Search the web' }] });
    for (let index = 0; index < MAX_WRITES_IN_FLIGHT; index++) await selectTools(deps, newList(index));
    await until('the writes to start', () => writes.length === MAX_WRITES_IN_FLIGHT);
    expect(writes).toHaveLength(MAX_WRITES_IN_FLIGHT);

    let answered = false;
    const waiting = selectTools(deps, newList(MAX_WRITES_IN_FLIGHT)).then((selection) => ((answered = true), selection));
    await until('the waiting request’s write to start', () => writes.length === MAX_WRITES_IN_FLIGHT + 1);
    expect(writes).toHaveLength(MAX_WRITES_IN_FLIGHT + 1);
    expect(answered).toBe(false);
    settlers.at(-1)!.resolve(['h']);
    expect((await waiting).names).toEqual([`tool_${MAX_WRITES_IN_FLIGHT}`]);

    for (const settler of settlers) settler.resolve(['h']);
    await deps.background.settled();
    // With the writes done, new tools answer first again.
    const next = await selectTools(deps, newList(MAX_WRITES_IN_FLIGHT + 1));
    expect(deps.background.size).toBe(1);
    await until('the write to start', () => writes.length === MAX_WRITES_IN_FLIGHT + 2);
    expect(writes).toHaveLength(MAX_WRITES_IN_FLIGHT + 2);
    settlers.at(-1)!.resolve(['h']);
    await next.stored;
  });
});

describe('selector: parsing a never-seen list', () => {
  it('lets other requests run once it has parsed for a few milliseconds, however few the tools', async () => {
    const { deps } = harness();
    let otherRequestRan = false;
    let ranBeforeLastTool: boolean | undefined;
    // JSON.stringify reads every tool as it is parsed: the first holds the thread for 20 ms, the
    // last records whether anything else ran in between. Two tools never reached the old slice of 256.
    const slow = {
      name: 'slow_tool',
      get description() {
        holdThread(20);
        return 'Takes a while';
      },
    };
    const last = {
      name: 'last_tool',
      get description() {
        ranBeforeLastTool ??= otherRequestRan;
        return 'Parsed last';
      },
    };
    setImmediate(() => (otherRequestRan = true));
    const selection = await selectTools(deps, { pattern: 'anything', topK: 2, alwaysKeep: [], tools: [slow, last] });
    expect(selection.names).toEqual(['slow_tool', 'last_tool']);
    expect(ranBeforeLastTool).toBe(true);
  });
});

describe('selector: a list whose vectors are still being embedded', () => {
  beforeAll(() => countHere.countTexts(['warm up']), 30_000);

  it('waits for the list’s first read only; later turns rank with what they have and read the rest in the background, one read at a time', async () => {
    const { deps, writes, settle } = harness();
    const reads: { resolve: (loaded: LoadedVectors) => void; reject: (error: Error) => void }[] = [];
    deps.embedder = {
      modelId: 'fake',
      dimension: 2,
      embedDocuments: async (texts) => texts.map(() => [1, 0]),
      embedQuery: async () => [0, 1],
      close: async () => {},
    };
    deps.vectors = { load: () => new Promise<LoadedVectors>((resolve, reject) => reads.push({ resolve, reject })) } as unknown as VectorCache;
    const answered = (turn: Promise<unknown>) =>
      Promise.race([turn.then(() => 'answered'), new Promise((resolve) => setTimeout(() => resolve('still waiting'), 1_000))]);

    // First sight: the read is waited for (the tools' vectors may exist from another list).
    const first = selectTools(deps, input);
    await until('the first read', () => reads.length === 1);
    expect(reads).toHaveLength(1);
    expect(await answered(first)).toBe('still waiting');
    reads[0]!.resolve({ vectors: new Map(), complete: false });
    await first;
    await until('the write to start', () => writes.length === 1);
    settle().resolve(['h1', 'h2', 'h3']);
    await deps.background.settled();
    const list = deps.toolListCache.get('list-1')!;
    const turn = () => selectTools(deps, { ...input, cached: list });

    // Vectors still missing: the turn answers while its read is still out, and starts no second read.
    expect(await answered(turn())).toBe('answered');
    expect(reads).toHaveLength(2);
    expect(await answered(turn())).toBe('answered');
    expect(reads).toHaveLength(2);
    // A failed read is tried again by a later turn.
    reads[1]!.reject(new Error('the store did not answer'));
    await nextTurn();
    expect((await turn()).names).toEqual(['web_search']);
    expect(reads).toHaveLength(3);
    // Once a read finds them all, the list keeps them and turns read nothing more.
    const vectors = new Map(list.tools.map(({ tool, hash }) => [hash, Float32Array.from(tool.name === 'web_search' ? [0, 1] : [1, 0])]));
    reads[2]!.resolve({ vectors, complete: true });
    await nextTurn();
    expect(list.vectors?.byHash).toBe(vectors);
    expect((await turn()).names).toEqual(['web_search']);
    expect(reads).toHaveLength(3);
  });

  it('waits for a new list’s first read at most one SELECTOR_BUDGET_MS; the read goes on and the next turn has its vectors', async () => {
    const { deps, writes, settle } = harness();
    const reads: { resolve: (loaded: LoadedVectors) => void }[] = [];
    deps.budgetMs = 50;
    deps.embedder = {
      modelId: 'fake',
      dimension: 2,
      embedDocuments: async (texts) => texts.map(() => [1, 0]),
      embedQuery: async () => [0, 1],
      close: async () => {},
    };
    deps.vectors = { load: () => new Promise<LoadedVectors>((resolve) => reads.push({ resolve })) } as unknown as VectorCache;
    // The query matches no word: only the vectors can rank web_search first.
    const blind = { ...input, pattern: 'zzz qqq' };

    // The read never settles on its own: the turn answers after one budget, not after the store's
    // deadline (4 budgets), which would count as a store failure and answer from BM25 alone.
    const first = await selectTools(deps, blind);
    expect(reads).toHaveLength(1);
    expect(first.fallback).toBe('no_match');
    expect(first.names).toEqual(['read_file']);
    await until('the write to start', () => writes.length === 1);
    settle().resolve(['h1', 'h2', 'h3']);
    await deps.background.settled();
    const list = deps.toolListCache.get('list-1')!;
    // While the late read is out, a turn starts no second read.
    await selectTools(deps, { ...blind, cached: list });
    expect(reads).toHaveLength(1);
    const vectors = new Map(list.tools.map(({ tool, hash }) => [hash, Float32Array.from(tool.name === 'web_search' ? [0, 1] : [1, 0])]));
    reads[0]!.resolve({ vectors, complete: true });
    await nextTurn();
    expect(list.vectors?.byHash).toBe(vectors);
    expect((await selectTools(deps, { ...blind, cached: list })).names).toEqual(['web_search']);
    expect(reads).toHaveLength(1);
  });
});
