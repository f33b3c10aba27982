import { describe, expect, it } from 'vitest';
import { termsDocument } from '../../src/catalog/catalog-service.js';
import { contentHash } from '../../src/catalog/content-hash.js';
import { documentTerms } from '../../src/ranking/search-text.js';
import { byScoreThenKey, scoreBm25 } from '../../src/ranking/bm25.js';
import { Bm25Builder, Bm25Index } from '../../src/ranking/bm25-index.js';
import { CatalogIndex } from '../../src/search/catalog-index.js';
import { indexTools, normalizeRequestTool, type FreshTool } from '../../src/search/selector.js';
import { serverDocuments } from '../../src/ranking/servers.js';
import { TimeSlice } from '../../src/lib/time-slice.js';
import { withRunningClock } from '../helpers/running-clock.js';
import { seededRandom } from '../helpers/seeded-random.js';

/**
 * A large list's BM25 indexes are built between time slices (at 10,000 tools they held the thread
 * 120-195 ms in one piece): the running clock ends every slice after one item, so other work must
 * run during the build, and the indexes must be the ones a build in one piece makes.
 */
const words = ['read', 'file', 'search', 'web', 'weather', 'forecast', 'paper', 'arxiv', 'send', 'mail', 'calendar', 'event', 'list', 'create'];

function requestTools(seed: number) {
  const random = seededRandom(seed);
  const pick = (count: number) => Array.from({ length: count }, () => words[Math.floor(random() * words.length)]!).join(' ');
  return Array.from({ length: 60 }, (_, index) => {
    const server = random() < 0.2 ? undefined : `server_${Math.floor(random() * 6)}`;
    const tool = normalizeRequestTool({ name: `tool_${index}`, description: pick(2 + Math.floor(random() * 8)), ...(server ? { server } : {}) }, index);
    return { tool, hash: contentHash(tool) };
  });
}

/** Runs `build` on a clock that ends every slice, and says whether a callback queued before it ran during it. */
async function inSlices<T>(build: () => Promise<T>): Promise<{ built: T; othersRan: boolean }> {
  let othersRan = false;
  setImmediate(() => (othersRan = true));
  const built = await withRunningClock(build);
  return { built, othersRan };
}

/** A document as a stored catalog's index reads its row (terms as "term tf ...", no token counts). */
function indexRow(
  { id, server, length, termFreqs }: { id: string; server: string | null; length: number; termFreqs: ReadonlyMap<string, number> },
  tags: string[] = [],
) {
  return {
    name: id,
    length,
    server,
    tags,
    tokens: { anthropic: null, openai: null, as_sent: null },
    terms: [...termFreqs].map(([term, tf]) => `${term} ${tf}`).join(' '),
  };
}

const queries = [['read', 'file'], ['weather'], ['search', 'paper', 'arxiv'], words, ['missing']];

describe('indexes built between time slices', () => {
  it('Bm25Index.packed yields while it packs the postings, and scores exactly as the index built in one piece', async () => {
    const tools = requestTools(3);
    const documents = tools.map(({ tool, hash }) => ({ id: hash, ...documentTerms(tool) }));
    const builder = new Bm25Builder();
    for (const { id, length, termFreqs } of documents) builder.add(id, length, termFreqs);
    const { built, othersRan } = await inSlices(() => Bm25Index.packed(builder, new TimeSlice()));
    expect(othersRan).toBe(true);
    const whole = new Bm25Index(documents);
    expect(built.postingCount).toBe(whole.postingCount);
    expect(built.termCount).toBe(whole.termCount);
    for (const query of queries) {
      expect(built.search(query)).toEqual(whole.search(query));
      expect(built.search(query)).toEqual(scoreBm25(documents, query));
    }
  });

  it("the selector's request list: its tools' and servers' indexes, from terms in hand and computed ones alike", async () => {
    const tools = requestTools(5);
    // Half the tools arrive never seen (their terms computed while parsing), the rest from the cache.
    const fresh: FreshTool[] = tools
      .filter((_, index) => index % 2 === 0)
      .map((entry) => ({ entry, document: termsDocument(entry.tool, entry.hash), key: entry.hash }));
    const { built, othersRan } = await inSlices(() => indexTools(tools, fresh, new TimeSlice()));
    expect(othersRan).toBe(true);
    const documents = tools.map(({ tool, hash }) => ({ id: hash, server: tool.server, ...documentTerms(tool) }));
    const servers = serverDocuments(documents);
    expect(servers.members.size).toBeGreaterThan(3);
    expect(built.servers.members).toEqual(servers.members);
    // Tied tools go by name (a request's list of hashes ranks as its tools stored in a catalog).
    const byName = byScoreThenKey((hash) => tools.find((entry) => entry.hash === hash)!.tool.name);
    for (const query of queries) {
      expect(built.bm25.search(query)).toEqual(scoreBm25(documents, query).sort(byName));
      expect(built.servers.bm25.search(query)).toEqual(scoreBm25(servers.documents, query));
    }
  });

  it("a stored catalog's index: its tools' and servers' indexes as from the same documents in one piece", async () => {
    const tools = requestTools(7);
    const documents = tools.map(({ tool }) => ({ id: tool.name, server: tool.server, ...documentTerms(tool) }));
    const rows = documents.map((document) => indexRow(document));
    const { built, othersRan } = await inSlices(() => CatalogIndex.build(1, 1, rows));
    expect(othersRan).toBe(true);
    const servers = serverDocuments(documents);
    expect(built.servers.members).toEqual(servers.members);
    for (const { id, server } of documents) expect(built.servers.serverOf.get(id)).toBe(server ?? undefined);
    expect(built.servers.serverOf.get('no_such_tool')).toBeUndefined();
    for (const query of queries) {
      const weights = new Map(query.map((term) => [term, 1]));
      expect(built.search(weights, 100)).toEqual(scoreBm25(documents, query));
      expect(built.servers.bm25.search(query)).toEqual(scoreBm25(servers.documents, query));
    }
  });

  it("a stored catalog's index from rows as the store reads them: tfs of several digits, terms with digits, a tool without terms, none at all", async () => {
    const documents = [
      { id: 'convert_mp3', server: 'audio', terms: 'convert 2 mp3 12 audio 1' },
      { id: 'play_mp3', server: 'audio', terms: 'play 2 mp3 2' },
      { id: 'silent', server: 'audio', terms: '' },
      { id: 'weather_now', server: null, terms: 'weather 10 now 2' },
      { id: 'forecast', server: 'weather', terms: 'forecast 2 weather 1 mp3 1' },
    ].map(({ id, server, terms }) => {
      const termFreqs = new Map<string, number>();
      const parts = terms ? terms.split(' ') : [];
      for (let i = 0; i < parts.length; i += 2) termFreqs.set(parts[i]!, Number(parts[i + 1]));
      const length = [...termFreqs.values()].reduce((sum, tf) => sum + tf, 0);
      return { id, server, length, termFreqs, row: { name: id, length, server, tags: [], terms, tokens: { anthropic: null, openai: null, as_sent: null } } };
    });
    const built = await CatalogIndex.build(
      1,
      1,
      documents.map(({ row }) => row),
    );
    const servers = serverDocuments(documents);
    expect(built.servers.members).toEqual(servers.members);
    expect(built.bm25.postingCount).toBe(10);
    for (const query of [['mp3'], ['weather', 'mp3'], ['audio', 'forecast', 'now'], ['silent']]) {
      expect(built.search(new Map(query.map((term) => [term, 1])), 100)).toEqual(scoreBm25(documents, query));
      expect(built.servers.bm25.search(query)).toEqual(scoreBm25(servers.documents, query));
    }
    const empty = await CatalogIndex.build(1, 1, []);
    expect(empty.search(new Map([['mp3', 1]]), 10)).toEqual([]);
    expect(empty.servers.bm25.size).toBe(0);
  });
  it("a tag filter's servers for a query's terms alone score as the tagged tools' whole server documents", async () => {
    const tools = requestTools(11);
    const documents = tools.map(({ tool }, i) => ({ id: tool.name, server: tool.server, tags: [['Ops', 'web', 'mail'][i % 3]!], ...documentTerms(tool) }));
    const rows = documents.map((document) => indexRow(document, document.tags));
    const built = await CatalogIndex.build(1, 1, rows);
    for (const tags of [['ops'], ['WEB', 'mail']]) {
      const wanted = new Set(tags.map((tag) => tag.toLowerCase()));
      const reference = serverDocuments(documents.filter((doc) => doc.tags.some((tag) => wanted.has(tag.toLowerCase()))));
      const whole = built.serversCarrying(tags);
      expect(whole.members).toEqual(reference.members);
      for (const query of queries) {
        const part = built.serversCarrying(tags, query);
        expect(part.members, `${tags}: ${query}`).toEqual(reference.members);
        expect(part.bm25.search(query), `${tags}: ${query}`).toEqual(scoreBm25(reference.documents, query));
        expect(part.bm25.search(query)).toEqual(whole.bm25.search(query));
      }
    }
  });
});
