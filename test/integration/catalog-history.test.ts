/**
 * A catalog's history must not show in its answers. Seeded random histories of writes (PUT, POST,
 * tool and catalog DELETE) over catalogs of two tenants are checked against a model after every
 * step (404 or not, tool count, every page of the tool list), and against a twin: the model's
 * tools pushed in one PUT, in another order, into a new catalog. Both must count the same
 * definition tokens and rank every query alike (names, order, scores, BM25 ranks, server votes,
 * tag boosts), so whatever a write updates in place (token sums, BM25 statistics, the in-process
 * index, server statistics and centroids, cached vectors) ends where a fresh write starts. Two
 * replicas share the database, each with its own caches, and every request goes to either, so a
 * replica's caches must follow writes made through the other. Now and then the MCP surface is
 * asked too (list_tools, search_tools), and the provider tool-search over the catalog and over its
 * tools sent inline.
 *
 *   HISTORY_STEPS=400 HISTORY_SEED=7 npx vitest run test/integration/catalog-history.test.ts
 *   HISTORY_FILLER=2500 HISTORY_STEPS=30 ...   # every PUT also writes 2,500 other tools: HNSW, vectors in process
 */
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seededRandom } from '../../src/eval/seeded-random.js';
import { startTestApp, untilEmbedded, type TestApp, type TestResponse } from '../helpers/app.js';
import { uniqueName } from '../helpers/database.js';

const STEPS = Number(process.env.HISTORY_STEPS ?? 40);
const SEED = Number(process.env.HISTORY_SEED ?? 1);
const FILLER = Number(process.env.HISTORY_FILLER ?? 0);
// A step takes 50-300 ms here (more with the model, which waits for vectors): room for large runs.
const TIMEOUT = 60_000 + STEPS * 1_000;

// Words that only descriptions hold, no two within one edit of each other (typo matching stays out).
const WORDS = ['glacier', 'violin', 'saffron', 'harbor', 'quartz', 'lantern', 'meadow', 'copper', 'thunder', 'orchid', 'zephyr', 'basalt'];
const TAGS = ['Alpha', 'beta', 'GAMMA'];
const SERVERS = [null, 'north', 'south'];
const PARAMETERS = ['path', 'limit', 'mode'];
// The filler's words: none of WORDS, so BM25's matches stay the history's tools.
const FILLER_WORDS = ['invoice', 'printer', 'calendar', 'network', 'weather', 'payroll', 'ticket', 'sensor', 'mailbox', 'ledger'];

type Tool = Record<string, unknown>;
interface Entry {
  raw: Tool;
  description: string;
  tags: string[];
  server: string | null;
}

const pick = <T>(random: () => number, items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
const some = <T>(random: () => number, items: readonly T[], p = 0.4): T[] => items.filter(() => random() < p);
const shuffled = <T>(random: () => number, items: readonly T[]): T[] =>
  items
    .map((item) => [random(), item] as const)
    .sort((a, b) => a[0] - b[0])
    .map(([, item]) => item);

/** A tool named `name` with random content, in one of the shapes a catalog accepts. */
function randomTool(random: () => number, name: string): Entry {
  const description = `${Array.from({ length: 2 + Math.floor(random() * 4) }, () => pick(random, WORDS)).join(' ')} tool`;
  const tags = some(random, TAGS);
  const server = pick(random, SERVERS);
  const properties = Object.fromEntries(some(random, PARAMETERS, 0.5).map((parameter) => [parameter, { type: 'string' }]));
  const schema = { type: 'object', properties };
  const extra = { ...(tags.length || random() < 0.5 ? { tags } : {}), ...(server !== null || random() < 0.5 ? { server } : {}) };
  const shapes: (() => Tool)[] = [
    () => ({ name, description, inputSchema: schema, ...extra }),
    () => ({ type: 'function', function: { name, description, parameters: schema }, ...extra }),
    () => ({ name, description, input_schema: schema, ...extra }),
  ];
  return { raw: pick(random, shapes)(), description, tags, server };
}

/** One tenant's view of the replicas: each request goes to either, with the tenant's key. */
interface Caller {
  headers: Record<string, string>;
  replicas: TestApp[];
  request(method: string, path: string, body?: unknown): Promise<TestResponse>;
  /** One replica, for requests that must meet the same process. */
  replica(): { url: string; request(method: string, path: string, body?: unknown): Promise<TestResponse> };
}

function caller(apps: TestApp[], random: () => number, headers: Record<string, string>): Caller {
  const on = (app: TestApp) => ({ url: app.url, request: (method: string, path: string, body?: unknown) => app.request(method, path, body, headers) });
  return {
    headers,
    replicas: apps,
    request: (method, path, body) => on(pick(random, apps)).request(method, path, body),
    replica: () => on(pick(random, apps)),
  };
}

/**
 * Two tenants: catalogs of the same name under both (`a`) and one under the first (`b`). A tenant's
 * writes never show in the other's answers: each slot has its own model.
 */
async function history(apps: TestApp[], tenants: Record<string, string>[], seed: number, steps: number, embedded: boolean): Promise<void> {
  const random = seededRandom(seed);
  const shared = uniqueName('history-a');
  const slots = [
    { label: `t1/${shared}`, catalog: shared, as: caller(apps, random, tenants[0]!) },
    { label: `t2/${shared}`, catalog: shared, as: caller(apps, random, tenants[1]!) },
    { label: 't1/b', catalog: uniqueName('history-b'), as: caller(apps, random, tenants[0]!) },
  ];
  const names = Array.from({ length: 14 }, (_, i) => `tool_${i}`);
  const model = new Map<string, Map<string, Entry>>();
  const filler = Array.from({ length: FILLER }, (_, i) => {
    const entry = randomTool(random, `filler_${i}`);
    const description = `${Array.from({ length: 3 }, () => pick(random, FILLER_WORDS)).join(' ')} item ${i}`;
    return [
      `filler_${i}`,
      {
        ...entry,
        raw: { ...entry.raw, ...('function' in entry.raw ? { function: { ...(entry.raw.function as Tool), description } } : { description }) },
        description,
      },
    ] as const;
  });
  const trail: string[] = [];
  const where = () => `seed ${seed}, after: ${trail.slice(-6).join('; ')}`;

  const write = async (method: 'PUT' | 'POST', { catalog, as }: (typeof slots)[number], entries: Entry[]) => {
    const response = await as.request(method, `/v1/catalogs/${catalog}${method === 'POST' ? '/tools' : ''}`, { tools: entries.map((entry) => entry.raw) });
    expect(response.status, `${where()}: ${response.text}`).toBe(200);
  };

  for (let step = 0; step < steps; step++) {
    const slot = pick(random, slots);
    const { catalog, as } = slot;
    const tools = model.get(slot.label);
    const roll = random();
    if (roll < 0.3) {
      const entries = [...filler, ...shuffled(random, some(random, names, 0.5)).map((name) => [name, randomTool(random, name)] as const)];
      trail.push(
        `PUT ${slot.label} ${entries
          .slice(filler.length)
          .map(([name]) => name)
          .join(',')}`,
      );
      await write(
        'PUT',
        slot,
        entries.map(([, entry]) => entry),
      );
      model.set(slot.label, new Map(entries));
    } else if (roll < 0.65) {
      const entries = shuffled(random, some(random, names, 0.2))
        .slice(0, 5)
        .map((name) => [name, randomTool(random, name)] as const);
      if (entries.length === 0) continue;
      trail.push(`POST ${slot.label} ${entries.map(([name]) => name).join(',')}`);
      await write(
        'POST',
        slot,
        entries.map(([, entry]) => entry),
      );
      model.set(slot.label, new Map([...(tools ?? []), ...entries]));
    } else if (roll < 0.92) {
      const name = pick(random, names);
      trail.push(`DELETE ${slot.label}/${name}`);
      const response = await as.request('DELETE', `/v1/catalogs/${catalog}/tools/${name}`);
      expect(response.status, `${where()}: ${response.text}`).toBe(tools?.has(name) ? 204 : 404);
      tools?.delete(name);
    } else {
      trail.push(`DELETE ${slot.label}`);
      const response = await as.request('DELETE', `/v1/catalogs/${catalog}`);
      expect(response.status, where()).toBe(tools ? 204 : 404);
      model.delete(slot.label);
    }
    await check(as, random, catalog, model.get(slot.label), where, embedded);
  }
  for (const { label, catalog, as } of slots) if (model.has(label)) await as.request('DELETE', `/v1/catalogs/${catalog}`);
}

/**
 * Rounds of writes sent at once to one catalog, each touching names no other write of its round
 * touches (so every order of commits ends in the same state), with searches among them; after
 * each round, the same checks.
 */
async function concurrentRounds(apps: TestApp[], tenants: Record<string, string>[], seed: number, rounds: number, embedded: boolean): Promise<void> {
  const random = seededRandom(seed);
  const as = caller(apps, random, pick(random, tenants));
  const catalog = uniqueName('history-racing');
  const names = Array.from({ length: 24 }, (_, i) => `tool_${i}`);
  const tools = new Map<string, Entry>();
  const trail: string[] = [];
  const where = () => `seed ${seed}, after: ${trail.slice(-3).join('; ')}`;
  let exists = false;
  for (let round = 0; round < rounds; round++) {
    const groups = shuffled(random, names).reduce<string[][]>((all, name, i) => (all[i % 6]!.push(name), all), [[], [], [], [], [], []]);
    const writes: string[] = [];
    const requests = groups.map((group) => {
      if (random() < 0.6) {
        const entries = group.filter(() => random() < 0.5).map((name) => [name, randomTool(random, name)] as const);
        if (entries.length === 0) return undefined;
        for (const [name, entry] of entries) tools.set(name, entry);
        writes.push(`POST ${entries.map(([name]) => name).join(',')}`);
        return as.request('POST', `/v1/catalogs/${catalog}/tools`, { tools: entries.map(([, entry]) => entry.raw) }).then((answer) => [answer, 200] as const);
      }
      const name = pick(random, group);
      const expected = tools.delete(name) ? 204 : 404;
      writes.push(`DELETE ${name}`);
      return as.request('DELETE', `/v1/catalogs/${catalog}/tools/${name}`).then((answer) => [answer, expected] as const);
    });
    const searches = Array.from({ length: 3 }, () =>
      as.request('POST', `/v1/catalogs/${catalog}/search`, { query: pick(random, WORDS), mode: pick(random, ['hybrid', 'bm25']), top_k: 100 }),
    );
    trail.push(`round ${round}: ${writes.join(' | ')}`);
    for (const [answer, expected] of (await Promise.all(requests)).filter((done) => done !== undefined)) {
      // A DELETE racing the round's first POST may find no catalog yet: 404 either way.
      expect(answer.status, `${where()}: ${answer.text}`).toBe(expected);
    }
    for (const answer of await Promise.all(searches)) {
      expect([200, 404], `${where()}: ${answer.text}`).toContain(answer.status);
      if (answer.status === 200) {
        const found = answer.body.results.map((result: any) => result.name);
        expect(new Set(found).size, where()).toBe(found.length);
        for (const name of found) expect(names, where()).toContain(name);
      }
    }
    // The first POST creates the catalog; deleting every tool leaves it, empty.
    exists ||= writes.some((write) => write.startsWith('POST'));
    await check(as, random, catalog, exists ? tools : undefined, where, embedded);
  }
  await as.request('DELETE', `/v1/catalogs/${catalog}`);
}

async function check(
  as: Caller,
  random: () => number,
  catalog: string,
  tools: Map<string, Entry> | undefined,
  where: () => string,
  embedded: boolean,
): Promise<void> {
  const got = await as.request('GET', `/v1/catalogs/${catalog}`);
  if (!tools) {
    expect(got.status, where()).toBe(404);
    return;
  }
  expect(got.status, where()).toBe(200);
  expect(got.body.tool_count, where()).toBe(tools.size);

  // Every page of the list, at a random page size: the model's tools in name order, as written.
  const listed: unknown[] = [];
  const limit = tools.size > 50 ? 1000 : 1 + Math.floor(random() * 6);
  for (let cursor: string | null = null, pages = 0; pages === 0 || cursor; pages++) {
    const page = await as.request('GET', `/v1/catalogs/${catalog}/tools?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    expect(page.status, where()).toBe(200);
    listed.push(...page.body.tools.map((tool: any) => ({ name: tool.name, description: tool.description, tags: tool.tags, server: tool.server })));
    cursor = page.body.next_cursor;
    expect(pages, where()).toBeLessThan(tools.size / limit + 2);
  }
  // Tags are kept in code-point order (part of a tool's canonical content).
  const expected = [...tools]
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([name, entry]) => ({ name, description: entry.description, tags: [...entry.tags].sort(), server: entry.server }));
  expect(listed, where()).toEqual(expected);

  // The twin: the same tools in one PUT, in another order, into a new catalog.
  const twin = uniqueName('history-twin');
  const put = await as.request('PUT', `/v1/catalogs/${twin}`, { tools: shuffled(random, [...tools.values()]).map((entry) => entry.raw) });
  expect(put.status, put.text).toBe(200);
  try {
    if (embedded) {
      // On every replica: one that counted a catalog pending recounts it for searches at most once
      // a second (catalog/embedding-status.ts), so it may say embeddings_pending that long after
      // the last vector landed; asked for the catalog, it counts at once.
      for (const replica of as.replicas) {
        await untilEmbedded(replica, catalog, as.headers);
        await untilEmbedded(replica, twin, as.headers);
      }
    }
    const twinSummary = await as.request('GET', `/v1/catalogs/${twin}`);
    expect(got.body.definition_tokens, where()).toEqual(twinSummary.body.definition_tokens);

    for (let query = 0; query < 3; query++) {
      const body = {
        query: Array.from({ length: 1 + Math.floor(random() * 3) }, () => pick(random, WORDS)).join(' '),
        mode: pick(random, embedded ? ['hybrid', 'bm25', 'vector'] : ['hybrid', 'bm25']),
        top_k: 100,
        explain: true,
        ...(random() < 0.3
          ? {
              tags: some(
                random,
                TAGS.map((tag) => (random() < 0.5 ? tag.toLowerCase() : tag)),
                0.5,
              ),
            }
          : {}),
      };
      if (body.tags?.length === 0) delete body.tags;
      // One replica for both: the model's vector of a query can differ in its 7th digit between
      // processes (a text embedded in a batch with others), which moves near ties; each replica
      // embeds a query once (its cache).
      const replica = as.replica();
      const [mine, theirs] = await Promise.all([
        replica.request('POST', `/v1/catalogs/${catalog}/search`, body),
        replica.request('POST', `/v1/catalogs/${twin}/search`, body),
      ]);
      const label = `${where()}; search ${JSON.stringify(body)}`;
      expect(mine.status, `${label}: ${mine.text}`).toBe(200);
      expect(theirs.status, `${label}: ${theirs.text}`).toBe(200);
      // Names and ranks exactly; scores within a relative 1e-5. One catalog's dense list may be
      // scanned in SQL and the other's in process (a small catalog's vectors are held once read
      // after a search, per revision): pgvector sums in float32, the scan in process in float64,
      // so cosines differ in their 7th digit, and the fused scores that weigh them too.
      const view = (answer: any) =>
        answer.body.results.map((result: any) => ({
          name: result.name,
          bm25: result.explain.bm25?.rank ?? null,
          vector: result.explain.vector?.rank ?? null,
        }));
      const numbers = (answer: any): number[] =>
        answer.body.results.flatMap((result: any) => [
          result.score,
          result.explain.bm25?.score ?? 0,
          result.explain.vector?.score ?? 0,
          result.explain.server_vote,
          result.explain.tag_boost,
        ]);
      expect(view(mine), label).toEqual(view(theirs));
      const theirNumbers = numbers(theirs);
      numbers(mine).forEach((value, i) => {
        const other = theirNumbers[i]!;
        expect(Math.abs(value - other), `${label}: ${value} against ${other}`).toBeLessThanOrEqual(1e-5 * Math.max(Math.abs(value), Math.abs(other)));
      });
      expect(mine.body.degraded, label).toBe(theirs.body.degraded);
      // BM25 returns exactly the tools holding a query word (and carrying a tag asked for).
      if (body.mode === 'bm25') {
        const words = body.query.split(' ');
        const tags = body.tags?.map((tag) => tag.toLowerCase());
        const matching = [...tools].filter(
          ([, entry]) =>
            words.some((word) => entry.description.split(' ').includes(word)) && (!tags || entry.tags.some((tag) => tags.includes(tag.toLowerCase()))),
        );
        expect(mine.body.results.map((result: any) => result.name).sort(), label).toEqual(matching.map(([name]) => name).sort());
      }
    }

    // Now and then, the MCP surface over the same catalog (the official client at /mcp/{catalog}):
    // list_tools names the model's tools, search_tools ranks as the REST search.
    if (random() < 0.25) {
      const replica = as.replica();
      const client = new Client({ name: 'toolsift-history', version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL(`${replica.url}/mcp/${catalog}`), { requestInit: { headers: as.headers } }));
      try {
        const listed: string[] = [];
        for (let cursor: string | undefined, pages = 0; pages === 0 || cursor; pages++) {
          const page = await client.callTool({ name: 'list_tools', arguments: cursor ? { cursor } : {} });
          expect(page.isError, where()).toBeFalsy();
          const { names, next_cursor } = page.structuredContent as { names: string[]; next_cursor?: string };
          listed.push(...names);
          cursor = next_cursor;
          expect(pages, where()).toBeLessThan(tools.size / 200 + 2);
        }
        expect(listed, where()).toEqual([...tools.keys()].sort());
        const query = pick(random, WORDS);
        const [found, rest] = await Promise.all([
          client.callTool({ name: 'search_tools', arguments: { query, limit: 50 } }),
          replica.request('POST', `/v1/catalogs/${catalog}/search`, { query, top_k: 50 }),
        ]);
        expect(found.isError, where()).toBeFalsy();
        const names = (found.structuredContent as { results: { name: string }[] }).results.map((result) => result.name);
        expect(names, `${where()}; search_tools ${query}`).toEqual(rest.body.results.map((result: any) => result.name));
        // The provider tool-search over the stored catalog, and over the same tools sent inline.
        const stored = await replica.request('POST', '/v1/tool-search', { query, catalog, max_results: 50, format: 'openrouter' });
        expect(stored.status, stored.text).toBe(200);
        expect(stored.body.tool_names, `${where()}; tool-search ${query}`).toEqual(names);
        if (tools.size > 0) {
          const inline = await replica.request('POST', '/v1/tool-search', { query, tools: [...tools.values()].map((entry) => entry.raw), max_results: 50 });
          expect(inline.status, inline.text).toBe(200);
          // A tie across the 50th place (a server's tools sharing its vote) is cut by name on both paths.
          expect(
            inline.body.results.map((result: any) => result.name),
            `${where()}; tool-search inline ${query}`,
          ).toEqual(names);
          // Under a tag filter too: both paths filter before they rank.
          const tags = some(
            random,
            TAGS.map((tag) => (random() < 0.5 ? tag.toLowerCase() : tag)),
            0.5,
          );
          const [taggedStored, taggedInline] = await Promise.all([
            replica.request('POST', '/v1/tool-search', { query, catalog, tags, max_results: 50 }),
            replica.request('POST', '/v1/tool-search', { query, tools: [...tools.values()].map((entry) => entry.raw), tags, max_results: 50 }),
          ]);
          expect([taggedStored.status, taggedInline.status], taggedInline.text).toEqual([200, 200]);
          const tagged = (response: { body: any }) => response.body.results.map((result: any) => result.name);
          expect(tagged(taggedInline), `${where()}; tool-search inline ${query} ${tags}`).toEqual(tagged(taggedStored));
          expect(taggedInline.body.tokens, `${where()}; tool-search inline ${query} ${tags}`).toEqual(taggedStored.body.tokens);
        }
      } finally {
        await client.close();
      }
    }
  } finally {
    await as.request('DELETE', `/v1/catalogs/${twin}`);
  }
}

describe('catalog histories', () => {
  // Tenants of their own (a PostgreSQL test database outlives runs); one by Bearer, one by X-API-Key.
  const keys = `history-k1:${uniqueName('history-t1')},history-k2:${uniqueName('history-t2')}`;
  const tenants: Record<string, string>[] = [{ authorization: 'Bearer history-k1' }, { 'x-api-key': 'history-k2' }];

  // Seeds apart per variant; the model's runs are shorter (each check waits for vectors).
  describe.each([
    ['without a model (BM25 and server votes)', 'none', false, SEED, 1],
    ['with the model (hybrid, vectors, server centroids)', 'use-lite', true, SEED + 1000, 2],
  ] as const)('%s', (_label, model, embedded, seed, share) => {
    let apps: TestApp[] = [];
    beforeAll(async () => {
      apps = [await startTestApp({ EMBED_MODEL: model, API_KEYS: keys }), await startTestApp({ EMBED_MODEL: model, API_KEYS: keys })];
    });
    afterAll(() => Promise.all(apps.map((app) => app.close())));

    it(
      'answer as the same tools written at once',
      async () => {
        await history(apps, tenants, seed, Math.ceil(STEPS / share), embedded);
      },
      TIMEOUT,
    );

    it(
      'answer so after rounds of writes sent at once',
      async () => {
        await concurrentRounds(apps, tenants, seed + 2000, Math.ceil(STEPS / (4 * share)), embedded);
      },
      TIMEOUT,
    );
  });
});
