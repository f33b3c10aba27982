/**
 * POST /v1/tool-search: one ranking, six answer formats (openai with namespaces too), inline candidates or a stored catalog,
 * token estimates and budgets, unmatched query terms, and tenants.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, untilEmbedded, type TestApp } from '../helpers/app.js';
import { until } from '../helpers/assertions.js';
import { uniqueName } from '../helpers/database.js';

const anthropicTools = [
  {
    name: 'get_weather',
    description: 'Get the current weather and the forecast for a city.',
    input_schema: { type: 'object', properties: { city: { type: 'string', description: 'City name' } }, required: ['city'] },
  },
  {
    name: 'send_email',
    description: 'Send an email to a recipient.',
    input_schema: { type: 'object', properties: { to: { type: 'string' }, body: { type: 'string' } } },
  },
  { name: 'search_web', description: 'Search the web for pages.', input_schema: { type: 'object', properties: { query: { type: 'string' } } }, tags: ['Web'] },
  { name: 'read_file', description: 'Read a file from disk.', input_schema: { type: 'object', properties: { path: { type: 'string' } } } },
];

/** With API keys set, /metrics takes this token (it names tenants and upstreams). */
const METRICS_TOKEN = 'tests-metrics-token-0001';
describe('POST /v1/tool-search', () => {
  let app: TestApp;
  const catalog = uniqueName('toolsearch');
  const auth = { authorization: 'Bearer ts1' };
  beforeAll(async () => {
    app = await startTestApp({ API_KEYS: 'ts1:ts-tenant,ts2:ts-other', EMBED_MODEL: 'use-lite', METRICS_TOKEN });
    expect((await app.request('PUT', `/v1/catalogs/${catalog}`, { tools: anthropicTools }, auth)).status).toBe(200);
    // Queries below that share no word with their tool need the vectors (a loaded CI machine took
    // over 60 s once: the model's threads run at a lower priority than the other test files').
    await untilEmbedded(app, catalog, auth);
  }, 180_000);
  afterAll(() => app.close());

  const search = (body: unknown, headers: Record<string, string> = auth) => app.request('POST', '/v1/tool-search', body, headers);

  it('names: ranked tools with scores, estimated tokens and the saving, from inline tools', async () => {
    const { status, body } = await search({ query: 'what is the weather in Paris tomorrow', tools: anthropicTools, max_results: 2 });
    expect(status).toBe(200);
    expect(body.results[0]).toMatchObject({ name: 'get_weather' });
    expect(body.results.length).toBeLessThanOrEqual(2);
    for (const result of body.results) expect(result.estimated_tokens).toBeGreaterThan(10);
    expect(body.tokens.offered).toBeGreaterThan(body.tokens.selected);
    expect(body.tokens.selected).toBe(body.results.reduce((sum: number, result: { estimated_tokens: number }) => sum + result.estimated_tokens, 0));
    expect(body.unmatched_terms).toEqual(expect.arrayContaining(['paris']));
  });

  it('anthropic, openai and openrouter answers come from the same ranking', async () => {
    const query = 'send an email to my boss';
    const names = (await search({ query, tools: anthropicTools, max_results: 3 })).body.results.map((result: { name: string }) => result.name);
    expect(names[0]).toBe('send_email');
    const anthropic = (await search({ query, tools: anthropicTools, max_results: 3, format: 'anthropic' })).body;
    expect(anthropic.content).toEqual(names.map((name: string) => ({ type: 'tool_reference', tool_name: name })));
    const openai = (await search({ query, tools: anthropicTools, max_results: 3, format: 'openai', call_id: 'call_42' })).body;
    expect(openai).toMatchObject({ type: 'tool_search_output', execution: 'client', status: 'completed', call_id: 'call_42' });
    expect(openai.tools.map((tool: { name: string }) => tool.name)).toEqual(names);
    expect(openai.tools[0]).toEqual({
      type: 'function',
      name: 'send_email',
      description: 'Send an email to a recipient.',
      parameters: anthropicTools[1]!.input_schema,
      strict: false,
      defer_loading: true,
    });
    expect((await search({ query, tools: anthropicTools, max_results: 3, format: 'openrouter' })).body).toEqual({ tool_names: names });
    expect((await search({ query, tools: anthropicTools, max_results: 3, format: 'openrouter', result_key: 'tools' })).body).toEqual({ tools: names });
  });

  it('openai namespaces, additional_tools and gemini answers come from the same ranking, inline and stored', async () => {
    const query = 'send an email to my boss about the weather';
    const servers: Record<string, string> = { get_weather: 'web', send_email: 'mail', search_web: 'web', read_file: 'mail' };
    const served = anthropicTools.map((tool) => ({ ...tool, server: servers[tool.name] }));
    const ranked = (body: { results: { name: string }[] }) => body.results.map((result) => result.name);
    const names = ranked((await search({ query, tools: served, max_results: 4 })).body);
    expect(names[0]).toBe('send_email');
    // Each server's tools in one namespace, where its best tool ranks; within it, in ranked order.
    const grouped = [...new Set(names.map((name) => servers[name]!))].map((server) => [server, names.filter((name) => servers[name] === server)]);
    const namespaced = { tools: served, max_results: 4, namespaces: true, namespace_descriptions: { mail: 'Mail and files.' } };
    const openai = (await search({ query, ...namespaced, format: 'openai', call_id: 'call_7' })).body;
    expect(openai).toMatchObject({ type: 'tool_search_output', execution: 'client', status: 'completed', call_id: 'call_7' });
    expect(openai.tools.map((tool: { name: string; tools: { name: string }[] }) => [tool.name, tool.tools.map((fn) => fn.name)])).toEqual(grouped);
    for (const namespace of openai.tools as { name: string; description: string }[]) {
      expect(namespace.description).toBe(namespace.name === 'mail' ? 'Mail and files.' : `Tools of the ${namespace.name} server.`);
    }
    expect(openai.tools[0].tools[0]).toEqual({
      type: 'function',
      name: 'send_email',
      description: 'Send an email to a recipient.',
      parameters: anthropicTools[1]!.input_schema,
      strict: false,
      defer_loading: true,
    });
    const additional = (await search({ query, ...namespaced, format: 'openai_additional_tools' })).body;
    expect(additional).toMatchObject({ type: 'additional_tools', role: 'developer' });
    expect(additional.tools.map((tool: { name: string; tools: { name: string }[] }) => [tool.name, tool.tools.map((fn) => fn.name)])).toEqual(grouped);
    expect(JSON.stringify(additional)).not.toContain('defer_loading');
    // Without namespaces: the functions, in ranked order.
    const flat = (await search({ query, tools: served, max_results: 4, format: 'openai_additional_tools' })).body;
    expect(flat.tools.map((tool: { name: string }) => tool.name)).toEqual(names);
    const gemini = (await search({ query, tools: served, max_results: 4, format: 'gemini', call_id: 'gem_1' })).body;
    expect(gemini).toMatchObject({ type: 'tool_search_result', call_id: 'gem_1' });
    expect(gemini.result.map((fn: { name: string }) => fn.name)).toEqual(names);
    expect(gemini.result[0]).toEqual({
      type: 'function',
      name: 'send_email',
      description: 'Send an email to a recipient.',
      parameters: anthropicTools[1]!.input_schema,
    });
    // A stored catalog answers alike.
    const stored = ranked((await search({ query, catalog, max_results: 3 })).body);
    const storedGemini = (await search({ query, catalog, max_results: 3, format: 'gemini', call_id: 'gem_2' })).body;
    expect(storedGemini.result.map((fn: { name: string }) => fn.name)).toEqual(stored);
    // Fields of other formats are refused, and gemini needs the call it answers.
    for (const [body, message] of [
      [{ query, tools: served, format: 'gemini' }, /needs call_id/],
      [{ query, tools: served, namespaces: true }, /belong to the openai/],
      [{ query, tools: served, format: 'openai', namespace_descriptions: { web: 'Web.' } }, /needs namespaces: true/],
      [{ query, tools: served, format: 'openai', namespaces: true, namespace_descriptions: { web: '' } }, /namespace_descriptions/],
    ] as const) {
      const refused = await search(body);
      expect(refused.status, JSON.stringify(body)).toBe(400);
      expect(refused.body.error.message).toMatch(message);
    }
  });

  it("a stored catalog of the caller's tenant, with tags and a token budget", async () => {
    const { status, body } = await search({ query: 'look something up online', catalog, max_results: 4 });
    expect(status).toBe(200);
    expect(body.results[0].name).toBe('search_web');
    // What sending the whole catalog would cost, summed by its writes.
    expect(body.tokens.offered).toBe((await app.request('GET', `/v1/catalogs/${catalog}`, undefined, auth)).body.definition_tokens.as_sent);
    // Tags match case-insensitively: the tool carries "Web".
    const tagged = await search({ query: 'search pages or read a file', catalog, tags: ['web'] });
    expect(tagged.body.results.map((result: { name: string }) => result.name)).toEqual(['search_web']);
    const all = (await search({ query: 'weather email web file', catalog, max_results: 4 })).body.results as Array<{ estimated_tokens: number }>;
    expect(all.length).toBeGreaterThan(1);
    const budget = all[0]!.estimated_tokens + 1;
    const cut = (await search({ query: 'weather email web file', catalog, max_results: 4, budget_tokens: budget })).body;
    expect(cut.results).toHaveLength(1);
    expect((await search({ query: 'weather email web file', catalog, budget_tokens: 1 })).body.results).toHaveLength(1);
    // Another tenant cannot search it.
    expect((await search({ query: 'weather', catalog }, { authorization: 'Bearer ts2' })).status).toBe(404);
  });

  it('a confidence per result and per answer; min_confidence can leave nothing, saying why', async () => {
    const sure = (await search({ query: 'send an email to my boss', tools: anthropicTools, max_results: 4 })).body;
    const confidences = sure.results.map((result: { confidence: number }) => result.confidence);
    for (const value of confidences) expect(value).toBeGreaterThanOrEqual(0), expect(value).toBeLessThanOrEqual(1);
    expect(sure.confidence).toBe(Math.max(...confidences));
    expect(confidences[0]).toBe(Math.max(...confidences));
    // A request nothing fits is less sure than one with an obvious answer.
    const vague = (await search({ query: 'quantum chromodynamics lattice simulation', tools: anthropicTools, max_results: 4 })).body;
    expect(vague.confidence).toBeLessThan(sure.confidence);
    const abstained = (
      await search({ query: 'quantum chromodynamics lattice simulation', tools: anthropicTools, min_confidence: Math.min(0.99, vague.confidence + 0.01) })
    ).body;
    expect(abstained.results).toEqual([]);
    expect(abstained.confidence).toBe(vague.confidence);
    expect(abstained.unmatched_terms).toEqual(expect.arrayContaining(['quantum', 'chromodynamics']));
    // A tool named exactly is certain, from a catalog too.
    const named = (await search({ query: 'call send_email now', catalog })).body;
    expect(named.results[0]).toMatchObject({ name: 'send_email', confidence: 1 });
    expect((await search({ query: 'x', tools: anthropicTools, min_confidence: 2 })).status).toBe(400);
  });

  it('rejects bad requests with what was wrong', async () => {
    expect((await search({ query: 'x' })).body.error.message).toContain('exactly one of');
    expect((await search({ query: 'x', tools: anthropicTools, catalog })).status).toBe(400);
    expect((await search({ query: 'x', tools: anthropicTools, format: 'bard' })).status).toBe(400);
    expect((await search({ query: 'x', tools: anthropicTools, topK: 3 })).status).toBe(400);
    expect((await search({ query: 'x', tools: [{ description: 'no name' }] })).status).toBe(400);
    expect((await search({ query: '', tools: anthropicTools })).status).toBe(400);
    expect((await search({ query: 'x', tools: anthropicTools }, {})).status).toBe(401);
  });

  it("ranks tools that name their server inline as stored, the list's server means computed once", async () => {
    const subjects = ['weather forecast', 'email message', 'file on disk', 'calendar event', 'web page'];
    const served = Array.from({ length: 15 }, (_, i) => ({
      name: `tool_${i}`,
      description: `Works with a ${subjects[i % 5]}, step ${i}.`,
      input_schema: { type: 'object', properties: {} },
      server: `server_${i % 4}`,
    }));
    const stored = uniqueName('served');
    expect((await app.request('PUT', `/v1/catalogs/${stored}`, { tools: served }, auth)).status).toBe(200);
    await untilEmbedded(app, stored, auth);
    const compact = JSON.stringify(served);
    const inline = async (query: string) =>
      (
        await app.request('POST', '/v1/tool-search', `{"query":${JSON.stringify(query)},"max_results":10,"tools":${compact}}`, {
          ...auth,
          'content-type': 'application/json',
        })
      ).body;
    // Until the list's vectors are all read, a turn may rank with some missing.
    const list = () => app.deps.selector.toolListCache.get(createHash('sha256').update(compact).digest('base64'));
    await until("the list's vectors", async () => (await inline('warm up'), list()?.vectors !== undefined));
    for (const query of ['is it going to rain', 'write to my colleague', 'open the page of a site']) {
      const first = await inline(query);
      const means = list()!.serverMeans;
      expect(means?.means.size).toBe(4);
      const again = await inline(query);
      expect(list()!.serverMeans).toBe(means); // kept, not computed again
      const catalog = (await search({ query, catalog: stored, max_results: 10 })).body;
      const ranked = (body: { results: { name: string; score: number }[] }) => body.results.map((result) => result.name);
      expect(ranked(again), query).toEqual(ranked(first));
      expect(ranked(first), query).toEqual(ranked(catalog));
      first.results.forEach((result: { score: number }, i: number) => {
        expect(again.results[i].score).toBe(result.score);
        // The store averages in SQL: the same means to float precision.
        expect(result.score).toBeCloseTo(catalog.results[i].score, 6);
      });
    }
  });

  it('counts the tokens offered and selected in /metrics', async () => {
    const read = async () => {
      const text = await (await fetch(`${app.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text();
      const value = (kind: string) =>
        Number(
          text
            .split('\n')
            .find((line) => line.startsWith(`toolsift_tool_definition_tokens_total{endpoint="tool_search",tenant="ts-tenant",kind="${kind}"}`))
            ?.split(' ')
            .at(-1) ?? 0,
        );
      return { offered: value('offered'), selected: value('selected') };
    };
    const before = await read();
    const { body } = await search({ query: 'weather in a city', tools: anthropicTools, max_results: 1 });
    const after = await read();
    expect(after.offered - before.offered).toBe(body.tokens.offered);
    expect(after.selected - before.selected).toBe(body.tokens.selected);
    expect(body.tokens.selected).toBeGreaterThan(0);
    expect(body.tokens.offered).toBeGreaterThan(body.tokens.selected);
  });
});

describe('POST /v1/tool-search: tied tools', () => {
  let app: TestApp;
  const catalog = uniqueName('ties');
  // 80 tools BM25 scores alike for "lantern" (same description, names of one length): more than a
  // retriever's depth (50) and the answer's cut. No model, so nothing else tells them apart.
  const tools = Array.from({ length: 80 }, (_, i) => ({
    name: `lamp_${String((i * 37) % 80).padStart(2, '0')}`,
    description: 'Reads one lantern record.',
    input_schema: { type: 'object', properties: {} },
  }));
  const byName = tools.map((tool) => tool.name).sort();
  beforeAll(async () => {
    app = await startTestApp();
    expect((await app.request('PUT', `/v1/catalogs/${catalog}`, { tools })).status).toBe(200);
  });
  afterAll(() => app.close());

  it('are cut by name, the same sent inline as stored', async () => {
    for (const max_results of [50, 10]) {
      const inline = (await app.request('POST', '/v1/tool-search', { query: 'lantern', tools, max_results })).body;
      const stored = (await app.request('POST', '/v1/tool-search', { query: 'lantern', catalog, max_results })).body;
      const names = (body: { results: { name: string }[] }) => body.results.map((result) => result.name);
      expect(names(stored)).toEqual(byName.slice(0, max_results));
      expect(names(inline)).toEqual(names(stored));
      expect(inline.results.map((result: { score: number }) => result.score)).toEqual(stored.results.map((result: { score: number }) => result.score));
    }
  });
});

describe('POST /v1/tool-search: unmatched terms of a stored catalog', () => {
  let app: TestApp;
  const catalog = uniqueName('unmatched');
  const tools = [
    { name: 'zebra_counter', description: 'Counts the zebras in a savanna photo.', input_schema: { type: 'object', properties: {} } },
    ...Array.from({ length: 30 }, (_, i) => ({
      name: `ledger_${i}`,
      description: `Writes entry ${i} to the ledger.`,
      input_schema: { type: 'object', properties: {} },
    })),
  ];
  beforeAll(async () => {
    app = await startTestApp();
    expect((await app.request('PUT', `/v1/catalogs/${catalog}`, { tools })).status).toBe(200);
  });
  afterAll(() => app.close());

  it('are the words no tool of the current revision holds, from the store or from the index in hand', async () => {
    const { getCatalog } = await import('../../src/store/catalog-store.js');
    const indexes = app.deps.search.catalogIndexes!;
    const unmatched = async () =>
      (await app.request('POST', '/v1/tool-search', { query: 'count zebras in the ledger with a unicorn', catalog })).body.unmatched_terms;
    const row = async () => (await getCatalog(app.deps.search.db, 'default', catalog))!;
    // Never searched: the index is not in hand, and the store answers.
    expect(indexes.held(await row())).toBeUndefined();
    expect(await unmatched()).toEqual(['count', 'unicorn']);
    await until('the index in hand', async () => indexes.held(await row()) !== undefined);
    expect(await unmatched()).toEqual(['count', 'unicorn']);
    // The zebra tool removed: the index derived for the new revision no longer knows its words.
    expect((await app.request('PUT', `/v1/catalogs/${catalog}`, { tools: tools.slice(1) })).status).toBe(200);
    await until('the index in hand', async () => indexes.held(await row()) !== undefined);
    expect(await unmatched()).toEqual(['count', 'zebras', 'unicorn']);
  });
});

describe('POST /v1/tool-search: tags filter before the ranking', () => {
  let app: TestApp;
  const catalog = uniqueName('tagged');
  // 100 untagged tools about issues; 6 tagged ones that mention issues once in a longer text, two
  // of them carrying both tags asked for. Ranked over all 106, the tagged ones fall below the 50th place.
  const tools = [
    ...Array.from({ length: 100 }, (_, i) => ({
      name: `issue_tool_${i}`,
      description: `Create and update an issue ${i}.`,
      input_schema: { type: 'object', properties: {} },
    })),
    ...Array.from({ length: 6 }, (_, i) => ({
      name: `file_tool_${i}`,
      description: `Write a file to disk; attach it to an issue report number ${i} or to other records kept.`,
      input_schema: { type: 'object', properties: {} },
      tags: i < 2 ? ['Files', 'disk'] : ['files'],
    })),
  ];
  beforeAll(async () => {
    app = await startTestApp();
    expect((await app.request('PUT', `/v1/catalogs/${catalog}`, { tools })).status).toBe(200);
  });
  afterAll(() => app.close());

  const names = (body: { results: { name: string }[] }) => body.results.map((result) => result.name);

  it('inline tools answer as the same tools stored: every tagged tool, boosted per tag, the whole list offered', async () => {
    for (const tags of [['files'], ['FILES', 'disk']]) {
      const inline = (await app.request('POST', '/v1/tool-search', { query: 'create an issue', tools, tags, max_results: 10 })).body;
      const stored = (await app.request('POST', '/v1/tool-search', { query: 'create an issue', catalog, tags, max_results: 10 })).body;
      expect(names(stored).sort()).toEqual(tools.slice(100).map((tool) => tool.name));
      expect(names(inline)).toEqual(names(stored));
      expect(inline.results.map((result: { score: number }) => result.score)).toEqual(stored.results.map((result: { score: number }) => result.score));
      expect(inline.tokens).toEqual(stored.tokens);
      expect(inline.unmatched_terms).toEqual(stored.unmatched_terms);
    }
    // A tool named exactly passes the filter only if it carries a tag asked for, on both paths.
    for (const candidates of [{ tools }, { catalog }]) {
      const named = (await app.request('POST', '/v1/tool-search', { query: 'issue_tool_3 or file_tool_4', ...candidates, tags: ['files'] })).body;
      expect(names(named)[0], JSON.stringify(candidates).slice(0, 12)).toBe('file_tool_4');
      expect(names(named)).not.toContain('issue_tool_3');
    }
    // Two tags asked for: the tools carrying both come first.
    const both = (await app.request('POST', '/v1/tool-search', { query: 'create an issue', tools, tags: ['files', 'disk'] })).body;
    expect(names(both).slice(0, 2).sort()).toEqual(['file_tool_0', 'file_tool_1']);
  });

  it('a tag no tool carries leaves nothing, on both paths', async () => {
    for (const candidates of [{ tools }, { catalog }]) {
      const { status, body } = await app.request('POST', '/v1/tool-search', { query: 'create an issue', ...candidates, tags: ['nowhere'] });
      expect(status).toBe(200);
      expect(body.results).toEqual([]);
      expect(body.tokens.selected).toBe(0);
    }
  });
});

describe('POST /v1/tool-search: a list sent again', () => {
  let app: TestApp;
  // A hook resends the same deferred tools every call: remembered by their bytes, as the selector's.
  const tools = Array.from({ length: 40 }, (_, i) => ({
    name: `hook_tool_${i}`,
    description: i % 4 === 0 ? `Write file number ${i} to the disk.` : `Look up record ${i} in the ledger.`,
    input_schema: { type: 'object', properties: { id: { type: 'string' } } },
    ...(i % 4 === 0 ? { tags: ['files'] } : {}),
  }));
  const compact = JSON.stringify(tools);
  // The same tools in other bytes: never remembered under the first list's key, so parsed and indexed afresh.
  const spaced = JSON.stringify(tools, null, 1);
  const key = createHash('sha256').update(compact).digest('base64');
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(() => app.close());

  const search = (tools: string, rest: Record<string, unknown>) => app.request('POST', '/v1/tool-search', `{"tools":${tools},${JSON.stringify(rest).slice(1)}`);
  const remember = async () => {
    expect((await search(compact, { query: 'ledger record' })).status).toBe(200);
    await until('the list is remembered', () => app.deps.selector.toolListCache.get(key) !== undefined);
  };

  it('is not parsed or indexed again, and answers as the same tools sent afresh', async () => {
    await remember();
    const remembered = app.deps.selector.toolListCache.get(key)!;
    for (const rest of [
      { query: 'ledger record 7', max_results: 3 },
      { query: 'write a file', tags: ['files'] },
      { query: 'write a file', tags: ['FILES'] },
      { query: 'hook_tool_9', format: 'openai', call_id: 'c1' },
    ]) {
      const again = await search(compact, rest);
      const afresh = await search(spaced, rest);
      expect(again.status, JSON.stringify(rest)).toBe(200);
      expect(again.body, JSON.stringify(rest)).toEqual(afresh.body);
    }
    expect(app.deps.selector.toolListCache.get(key)).toBe(remembered);
    // One tag set, however it is spelled: its sub-list is indexed once and kept on the list.
    expect(remembered.tagged?.size).toBe(1);
    // Ten more sets of the 10 tagged tools: the kept sub-lists hold at most as many tools as the list (40).
    for (let i = 0; i < 10; i++) expect((await search(compact, { query: 'write a file', tags: ['files', `other_${i}`] })).status).toBe(200);
    expect(remembered.tagged?.size).toBe(4);
  });

  it('still checks the rest of the body', async () => {
    await remember();
    const unknown = await search(compact, { query: 'ledger', colour: 'red' });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.message).toMatch(/colour/);
    const both = await search(compact, { query: 'ledger', catalog: 'c' });
    expect(both.status).toBe(400);
    expect(both.body.error.message).toMatch(/exactly one of/);
    expect((await search(compact, { query: 'ledger', max_results: 0 })).status).toBe(400);
    const utf16 = await app.request('POST', '/v1/tool-search', `{"tools":${compact},"query":"ledger"}`, { 'content-type': 'application/json; charset=utf-16' });
    expect(utf16.status).toBe(415);
    expect(utf16.body.error.message).toMatch(/UTF-16/);
  });
});
