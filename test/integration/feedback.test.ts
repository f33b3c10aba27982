/**
 * Learning from use (issue 72) over the real app and store: POST /v1/feedback and the MCP
 * correlation (search_tools, then call_tool, through the official SDK client) change the next
 * similar search's order; nothing crosses tenants; a changed definition, DELETE and LEARNING=off
 * take it back. The test apps rank with BM25 (no model): the learned list's words alone.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { uniqueName } from '../helpers/database.js';
import { KEEP_SHARE, LEARNED_REFRESH_MS, LearnedCache } from '../../src/search/learned-cache.js';
import { distinctTerms } from '../../src/ranking/bm25.js';
import { queryTerms } from '../../src/ranking/search-text.js';
import { getCatalog } from '../../src/store/catalog-store.js';
import { feedbackStart, loadFeedback } from '../../src/store/feedback-store.js';
import { queryRows } from '../../src/store/database.js';
import { sql } from 'drizzle-orm';
import { LEARNED_EVENTS_PER_TOOL } from '../../src/ranking/learned.js';

const KEYS = 'ka1:alpha,ka2:alpha,kb:beta';
const as = (key: string) => ({ authorization: `Bearer ${key}` });
const TOOLS = [
  {
    name: 'open_ticket_viewer',
    description: 'Open the ticket viewer to look at an open ticket.',
    inputSchema: { type: 'object', properties: { id: { type: 'string' } } },
  },
  { name: 'create_ticket', description: 'Create a ticket in the issue tracker.', inputSchema: { type: 'object', properties: { title: { type: 'string' } } } },
  { name: 'send_email', description: 'Send an email message.', inputSchema: { type: 'object', properties: { to: { type: 'string' } } } },
];
const QUERY = 'open a ticket';

async function order(app: TestApp, catalog: string, key: string, query = QUERY): Promise<string[]> {
  const found = await app.request('POST', `/v1/catalogs/${catalog}/search`, { query, top_k: 3, explain: true }, as(key));
  expect(found.status).toBe(200);
  return found.body.results.map((tool: { name: string }) => tool.name);
}

async function until(check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('learning from use', () => {
  let app: TestApp;
  let off: TestApp;
  beforeAll(async () => {
    [app, off] = await Promise.all([startTestApp({ API_KEYS: KEYS }), startTestApp({ API_KEYS: KEYS, LEARNING: 'off' })]);
  });
  afterAll(async () => {
    await Promise.all([app?.close(), off?.close()]);
  });

  it('POST /v1/feedback with a search_id reorders the next similar search, for this tenant only', async () => {
    const catalog = uniqueName('learn-rest');
    for (const key of ['ka1', 'kb']) expect((await app.request('PUT', `/v1/catalogs/${catalog}`, { tools: TOOLS }, as(key))).status).toBe(200);
    const before = await app.request('POST', `/v1/catalogs/${catalog}/search`, { query: QUERY, top_k: 3, explain: true }, as('ka1'));
    expect(before.body.results[0].name).toBe('open_ticket_viewer');
    expect(before.body.results.every((tool: { explain: { learned: unknown } }) => tool.explain.learned === null)).toBe(true);
    const searchId = before.body.search_id as string;
    expect(searchId).toMatch(/^s_[0-9a-f]{24}$/);

    // Tenant beta can neither quote alpha's search nor reach alpha's catalog: its own same-named catalog is another.
    const foreign = await app.request('POST', '/v1/feedback', { catalog, search_id: searchId, used: ['create_ticket'] }, as('kb'));
    expect(foreign.status).toBe(404);
    expect(foreign.body.error.message).toContain('not known here');

    for (const key of ['ka1', 'ka2']) {
      const sent = await app.request('POST', '/v1/feedback', { catalog, search_id: searchId, used: ['create_ticket', 'no_such_tool'] }, as(key));
      expect(sent.status).toBe(200);
      expect(sent.body).toEqual({ recorded: ['create_ticket'], unknown: ['no_such_tool'], learning: 'on' });
    }
    const after = await app.request('POST', `/v1/catalogs/${catalog}/search`, { query: 'Open ticket', top_k: 3, explain: true }, as('ka1'));
    expect(after.body.results[0].name).toBe('create_ticket');
    expect(after.body.results[0].explain.learned).toEqual({ rank: 1, events: 2, vote: expect.any(Number) });
    // Unlike queries are not touched, and beta's catalog of the same name learned nothing.
    expect((await order(app, catalog, 'ka1', 'send an email'))[0]).toBe('send_email');
    expect((await order(app, catalog, 'kb'))[0]).toBe('open_ticket_viewer');

    // Forgetting takes it back.
    const forgotten = await app.request('DELETE', `/v1/catalogs/${catalog}/feedback`, undefined, as('ka1'));
    expect(forgotten.status).toBe(200);
    expect(forgotten.body).toEqual({ deleted: 2 });
    expect((await order(app, catalog, 'ka1'))[0]).toBe('open_ticket_viewer');
  });

  it('a tool whose definition changed loses what was learned for the old one', async () => {
    const catalog = uniqueName('learn-changed');
    expect((await app.request('PUT', `/v1/catalogs/${catalog}`, { tools: TOOLS }, as('ka1'))).status).toBe(200);
    for (const key of ['ka1', 'ka2']) {
      expect((await app.request('POST', '/v1/feedback', { catalog, query: QUERY, used: ['create_ticket'] }, as(key))).status).toBe(200);
    }
    expect((await order(app, catalog, 'ka1'))[0]).toBe('create_ticket');
    const changed = TOOLS.map((tool) => (tool.name === 'create_ticket' ? { ...tool, description: 'Create a ticket in the new issue tracker.' } : tool));
    expect((await app.request('PUT', `/v1/catalogs/${catalog}`, { tools: changed }, as('ka1'))).status).toBe(200);
    expect((await order(app, catalog, 'ka1'))[0]).toBe('open_ticket_viewer');
  });

  it('refuses bad feedback with a 400 naming the field, and a catalog it does not know with a 404', async () => {
    const catalog = uniqueName('learn-bad');
    expect((await app.request('PUT', `/v1/catalogs/${catalog}`, { tools: TOOLS }, as('ka1'))).status).toBe(200);
    const cases: [unknown, number, string][] = [
      [{ catalog, used: ['create_ticket'] }, 400, 'query'],
      [{ catalog, query: QUERY, used: [] }, 400, 'used'],
      [{ catalog, query: '   ', used: ['create_ticket'] }, 400, 'query'],
      [{ catalog, query: QUERY, used: ['create_ticket'], extra: 1 }, 400, 'extra'],
      [{ catalog: '..', query: QUERY, used: ['create_ticket'] }, 400, 'catalog'],
      [{ catalog: 'no-such-catalog', query: QUERY, used: ['create_ticket'] }, 404, 'no-such-catalog'],
    ];
    for (const [body, status, mentions] of cases) {
      const answer = await app.request('POST', '/v1/feedback', body, as('ka1'));
      expect(answer.status, JSON.stringify(body)).toBe(status);
      expect(answer.body.error.message).toContain(mentions);
    }
    expect((await app.request('DELETE', '/v1/catalogs/no-such-catalog/feedback', undefined, as('ka1'))).status).toBe(404);
  });

  it('another replica on the same store sees the events within its refresh interval', async () => {
    const catalog = uniqueName('learn-replica');
    expect((await app.request('PUT', `/v1/catalogs/${catalog}`, { tools: TOOLS }, as('ka1'))).status).toBe(200);
    const replica = await startTestApp({ API_KEYS: KEYS });
    try {
      expect((await order(replica, catalog, 'ka1'))[0]).toBe('open_ticket_viewer');
      for (const key of ['ka1', 'ka2']) {
        expect((await app.request('POST', '/v1/feedback', { catalog, query: QUERY, used: ['create_ticket'] }, as(key))).status).toBe(200);
      }
      // Its copy is read again at most LEARNED_REFRESH_MS after its last read (a generous bound here: CI machines are loaded).
      await until(async () => (await order(replica, catalog, 'ka1'))[0] === 'create_ticket', 5 * LEARNED_REFRESH_MS);
    } finally {
      await replica.close();
    }
  });

  it('learns from a request in other words where the catalog is in process, and only from near-repeats where it ranks in SQL', async () => {
    const storePath = await startTestApp({ API_KEYS: KEYS, CATALOG_INDEX_MEMORY: '0' });
    try {
      for (const target of [app, storePath]) {
        const catalog = uniqueName('learn-loose');
        expect((await target.request('PUT', `/v1/catalogs/${catalog}`, { tools: TOOLS }, as('ka1'))).status).toBe(200);
        for (const key of ['ka1', 'ka2']) {
          const sent = await target.request('POST', '/v1/feedback', { catalog, query: 'open a ticket for the login bug', used: ['create_ticket'] }, as(key));
          expect(sent.status).toBe(200);
        }
        // A near-repeat is learned on both paths.
        expect((await order(target, catalog, 'ka1', 'open a ticket for the login bug'))[0]).toBe('create_ticket');
        // Alike in part (the ticket, the bug), not a repeat: held to the word that tied it to create_ticket ("ticket"), which this
        // request keeps. In process once the catalog's index is read (a catalog's first searches rank in SQL while it is).
        const loose = () => order(target, catalog, 'ka1', 'open a ticket for the checkout bug');
        if (target === app) await until(async () => (await loose())[0] === 'create_ticket');
        else expect((await loose())[0]).toBe('open_ticket_viewer');
      }
    } finally {
      await storePath.close();
    }
  });

  it('learns which of two alike tools agents chose where it knows what they were shown (a quoted search_id, MCP), not from `used` alone', async () => {
    const schema = { type: 'object', properties: { title: { type: 'string' } } };
    const alike = [
      { name: 'github_create_issue', description: 'Create a new issue in the tracker of a repository.', inputSchema: schema },
      { name: 'jira_create_issue', description: 'Create a new issue in the tracker of a project.', inputSchema: schema },
      { name: 'send_email', description: 'Send an email message.', inputSchema: schema },
    ];
    // Twins share at least three of the words in play (LEARNED_TWIN_MIN_SHARED): these share four.
    const query = 'create a new issue in the tracker';
    for (const how of ['used', 'search_id', 'mcp'] as const) {
      const catalog = uniqueName(`learn-alike-${how}`);
      expect((await app.request('PUT', `/v1/catalogs/${catalog}`, { tools: alike }, as('ka1'))).status).toBe(200);
      // Twins are told by the catalog's words: ranked in process.
      await app.deps.search.catalogIndexes!.get((await getCatalog(app.deps.search.db, 'alpha', catalog))!);
      const [first, second] = await order(app, catalog, 'ka1', query);
      expect([first, second].sort()).toEqual(['github_create_issue', 'jira_create_issue']);
      for (const key of ['ka1', 'ka2']) {
        if (how === 'mcp') {
          const client = new Client({ name: 'toolsift-test', version: '1.0.0' });
          await client.connect(new StreamableHTTPClientTransport(new URL(`${app.url}/mcp/${catalog}`), { requestInit: { headers: as(key) } }));
          try {
            expect((await client.callTool({ name: 'search_tools', arguments: { query, limit: 3 } })).isError).toBeFalsy();
            await client.callTool({ name: 'call_tool', arguments: { name: second, arguments: { title: 'x' } } });
          } finally {
            await client.close();
          }
          continue;
        }
        const searched = await app.request('POST', `/v1/catalogs/${catalog}/search`, { query, top_k: 3 }, as(key));
        const body = how === 'used' ? { catalog, query, used: [second] } : { catalog, search_id: searched.body.search_id, used: [second] };
        expect((await app.request('POST', '/v1/feedback', body, as(key))).status).toBe(200);
      }
      if (how === 'used') {
        // Told only what was used, two tools alike in every word of the query are twins: the group keeps the order the words gave it.
        await new Promise((resolve) => setTimeout(resolve, 300));
        const after = await app.request('POST', `/v1/catalogs/${catalog}/search`, { query, top_k: 3, explain: true }, as('ka1'));
        expect(after.body.results.map((tool: { name: string }) => tool.name).slice(0, 2)).toEqual([first, second]);
        expect(after.body.results.some((tool: { explain: { learned: unknown } }) => tool.explain.learned !== null)).toBe(true);
      } else await until(async () => (await order(app, catalog, 'ka1', query))[0] === second);
    }
  });

  it('does not take two tools alike in two words of the request alone for twins: agents’ use alone orders them', async () => {
    const schema = { type: 'object', properties: { title: { type: 'string' } } };
    const catalog = uniqueName('learn-few-words');
    const tools = [
      { name: 'github_create_issue', description: 'Create an issue in a repository.', inputSchema: schema },
      { name: 'jira_create_issue', description: 'Create an issue in a project.', inputSchema: schema },
      { name: 'send_email', description: 'Send an email message.', inputSchema: schema },
    ];
    expect((await app.request('PUT', `/v1/catalogs/${catalog}`, { tools }, as('ka1'))).status).toBe(200);
    await app.deps.search.catalogIndexes!.get((await getCatalog(app.deps.search.db, 'alpha', catalog))!);
    const [, second] = await order(app, catalog, 'ka1', 'create an issue');
    for (const key of ['ka1', 'ka2'])
      expect((await app.request('POST', '/v1/feedback', { catalog, query: 'create an issue', used: [second] }, as(key))).status).toBe(200);
    // "create" and "issue" are all they share of the words in play: fewer than LEARNED_TWIN_MIN_SHARED.
    await until(async () => (await order(app, catalog, 'ka1', 'create an issue'))[0] === second);
  });

  it('keeps of what was shown the first 20 names not used, and of those only the tools the catalog holds', async () => {
    const catalog = uniqueName('learn-shown');
    expect((await app.request('PUT', `/v1/catalogs/${catalog}`, { tools: TOOLS }, as('ka1'))).status).toBe(200);
    const junk = Array.from({ length: 30 }, (_, i) => `junk_${i}`);
    const shown = ['create_ticket', 'no_such_tool', 'send_email', ...junk.slice(0, 18), 'open_ticket_viewer', ...junk.slice(18)];
    const sent = await app.request('POST', '/v1/feedback', { catalog, query: QUERY, used: ['create_ticket'], shown }, as('ka1'));
    expect(sent.status).toBe(200);
    const row = (await getCatalog(app.deps.search.db, 'alpha', catalog))!;
    const stored = await loadFeedback(app.deps.search.db, row.id, { afterId: 0, sinceSeconds: 3600, model: null, limit: 10 });
    // open_ticket_viewer is the 21st name not used: past the head kept.
    expect(stored.map((event) => [event.toolName, event.passedOver])).toEqual([['create_ticket', ['send_email']]]);
  });

  it('stores of each caller only its newest events of a tool, as many as a tool window holds: a flood is bounded, the other callers keep theirs', async () => {
    const catalog = uniqueName('learn-bound');
    expect((await app.request('PUT', `/v1/catalogs/${catalog}`, { tools: TOOLS }, as('ka1'))).status).toBe(200);
    const send = (key: string, query: string, used: string[]) => app.request('POST', '/v1/feedback', { catalog, query, used }, as(key));
    for (let i = 0; i < 3; i++) expect((await send('ka2', `open a ticket ${i}`, ['create_ticket'])).status).toBe(200);
    for (let i = 0; i < LEARNED_EVENTS_PER_TOOL + 8; i++) expect((await send('ka1', `flood ${i}`, ['create_ticket', 'send_email'])).status).toBe(200);
    const row = (await getCatalog(app.deps.search.db, 'alpha', catalog))!;
    const stored = await loadFeedback(app.deps.search.db, row.id, { afterId: 0, sinceSeconds: 3600, model: null, limit: 1000 });
    const of = (tool: string, caller: (name: string) => boolean) => stored.filter((event) => event.toolName === tool && caller(event.query));
    const flood = (query: string) => query.startsWith('flood');
    expect(of('create_ticket', flood)).toHaveLength(LEARNED_EVENTS_PER_TOOL);
    expect(of('send_email', flood)).toHaveLength(LEARNED_EVENTS_PER_TOOL);
    // The newest are the ones kept.
    expect(of('send_email', flood)[0]!.query).toBe('flood 8');
    expect(of('create_ticket', (query) => !flood(query)).map((event) => event.query)).toEqual(['open a ticket 0', 'open a ticket 1', 'open a ticket 2']);
  });

  it('sweeps the events of a definition its catalog no longer holds (changed or removed): a tenant changing its tools again and again stores no more', async () => {
    const catalog = uniqueName('learn-sweep');
    for (const key of ['ka1', 'kb']) expect((await app.request('PUT', `/v1/catalogs/${catalog}`, { tools: TOOLS }, as(key))).status).toBe(200);
    const stored = async (tenant: string) => {
      const row = (await getCatalog(app.deps.search.db, tenant, catalog))!;
      const rows = await queryRows<{ tool: string; n: number }>(
        app.deps.search.db,
        sql`select tool_name as tool, count(*)::int as n from feedback_events where catalog_id = ${row.id} group by tool_name order by tool_name`,
      );
      return Object.fromEntries(rows.map((entry) => [entry.tool, entry.n]));
    };
    let tools = TOOLS;
    for (let round = 0; round < 3; round++) {
      for (const key of ['ka1', 'ka2', 'kb']) {
        const sent = await app.request('POST', '/v1/feedback', { catalog, query: `${QUERY} ${round}`, used: ['create_ticket', 'send_email'] }, as(key));
        expect(sent.status).toBe(200);
      }
      // Alpha changes create_ticket each round; beta's catalog of the same name keeps its tools.
      tools = tools.map((tool) => (tool.name === 'create_ticket' ? { ...tool, description: `${tool.description} Round ${round}.` } : tool));
      expect((await app.request('PUT', `/v1/catalogs/${catalog}`, { tools }, as('ka1'))).status).toBe(200);
    }
    expect(await stored('alpha')).toEqual({ create_ticket: 6, send_email: 6 });
    await app.deps.documentSweeper.sweep();
    // Alpha's create_ticket events judged definitions it no longer holds; send_email's and beta's stay.
    expect(await stored('alpha')).toEqual({ send_email: 6 });
    expect(await stored('beta')).toEqual({ create_ticket: 3, send_email: 3 });
    // Removed: its events go at the next sweep too; a use of the definition held stays.
    expect((await app.request('PUT', `/v1/catalogs/${catalog}`, { tools: tools.filter((tool) => tool.name !== 'send_email') }, as('ka1'))).status).toBe(200);
    expect((await app.request('POST', '/v1/feedback', { catalog, query: QUERY, used: ['create_ticket'] }, as('ka1'))).status).toBe(200);
    await app.deps.documentSweeper.sweep();
    expect(await stored('alpha')).toEqual({ create_ticket: 1 });
  });

  it('LEARNING=off records nothing and ranks as before', async () => {
    const catalog = uniqueName('learn-off');
    expect((await off.request('PUT', `/v1/catalogs/${catalog}`, { tools: TOOLS }, as('ka1'))).status).toBe(200);
    for (const key of ['ka1', 'ka2']) {
      const sent = await off.request('POST', '/v1/feedback', { catalog, query: QUERY, used: ['create_ticket'] }, as(key));
      expect(sent.body).toEqual({ recorded: [], unknown: [], learning: 'off' });
    }
    expect((await order(off, catalog, 'ka1'))[0]).toBe('open_ticket_viewer');
  });

  it('over MCP, search_tools followed by call_tool from two callers reorders the next similar search; the other tenant sees nothing', async () => {
    const catalog = uniqueName('learn-mcp');
    for (const key of ['ka1', 'kb']) expect((await app.request('PUT', `/v1/catalogs/${catalog}`, { tools: TOOLS }, as(key))).status).toBe(200);
    for (const key of ['ka1', 'ka2']) {
      const client = new Client({ name: 'toolsift-test', version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL(`${app.url}/mcp/${catalog}`), { requestInit: { headers: as(key) } }));
      try {
        const found = await client.callTool({ name: 'search_tools', arguments: { query: QUERY, limit: 3 } });
        expect(found.isError).toBeFalsy();
        // Not a tool this process can run (pushed, no upstream): the agent chose it all the same.
        await client.callTool({ name: 'call_tool', arguments: { name: 'create_ticket', arguments: { title: 'x' } } });
      } finally {
        await client.close();
      }
    }
    await until(async () => (await order(app, catalog, 'ka1'))[0] === 'create_ticket');
    expect((await order(app, catalog, 'kb'))[0]).toBe('open_ticket_viewer');
    // A call with no search before it (beta's) teaches nothing.
    const client = new Client({ name: 'toolsift-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${app.url}/mcp/${catalog}`), { requestInit: { headers: as('kb') } }));
    await client.callTool({ name: 'call_tool', arguments: { name: 'create_ticket', arguments: { title: 'x' } } });
    await client.close();
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect((await order(app, catalog, 'kb'))[0]).toBe('open_ticket_viewer');
  });

  it('keeps of one catalog’s learned index alone past LEARNED_MEMORY its newest events within the budget, as it grows', async () => {
    const catalog = uniqueName('learn-big');
    expect((await app.request('PUT', `/v1/catalogs/${catalog}`, { tools: TOOLS }, as('ka1'))).status).toBe(200);
    const send = async (from: number, to: number) => {
      for (let i = from; i < to; i++) {
        const used = [TOOLS[i % TOOLS.length]!.name];
        expect((await app.request('POST', '/v1/feedback', { catalog, query: `request number ${i} for the tracker`, used }, as('ka1'))).status).toBe(200);
      }
    };
    await send(0, 30);
    const row = (await getCatalog(app.deps.search.db, 'alpha', catalog))!;
    await until(async () => (await loadFeedback(app.deps.search.db, row.id, { afterId: 0, sinceSeconds: 86_400, model: null, limit: 100 })).length === 30);
    const stored = await loadFeedback(app.deps.search.db, row.id, { afterId: 0, sinceSeconds: 86_400, model: null, limit: 100 });
    // A first read can start at the newest few: the id before them.
    const start = await feedbackStart(app.deps.search.db, row.id, 5);
    expect(start).toBe(stored[24]!.id);
    expect(await feedbackStart(app.deps.search.db, row.id, 30)).toBe(0);
    const whole = (await new LearnedCache({ retentionSeconds: 86_400, halfLifeSeconds: 86_400, refreshMs: 0 }).forSearch(app.deps.search.db, row, null))!;
    expect(whole.eventCount).toBe(30);
    // A budget of 40% of it: the newest events that fit in KEEP_SHARE of the budget.
    const budget = Math.floor(whole.bytes * 0.4);
    const cache = new LearnedCache({ retentionSeconds: 86_400, halfLifeSeconds: 86_400, refreshMs: 0, memoryBytes: budget });
    const held = (await cache.forSearch(app.deps.search.db, row, null))!;
    expect(cache.bytes).toBeLessThanOrEqual(budget * KEEP_SHARE);
    expect(held.eventCount).toBeGreaterThan(4);
    expect(held.eventCount).toBeLessThan(13);
    const counts = (index: typeof held, i: number) =>
      (index
        .list([TOOLS[i % TOOLS.length]!.name], distinctTerms(queryTerms(`request number ${i} for the tracker`)), undefined, Date.now() / 1000)
        .events.get(TOOLS[i % TOOLS.length]!.name) ?? 0) > 0;
    expect(counts(held, 29)).toBe(true);
    expect(counts(held, 0)).toBe(false);
    // Events keep coming: the index stays within the budget and holds the newest.
    await send(30, 60);
    await until(async () => (await loadFeedback(app.deps.search.db, row.id, { afterId: 0, sinceSeconds: 86_400, model: null, limit: 100 })).length === 60);
    cache.changed(row.id);
    const later = (await cache.forSearch(app.deps.search.db, row, null))!;
    expect(cache.bytes).toBeLessThanOrEqual(budget);
    expect(counts(later, 59)).toBe(true);
    expect(counts(later, 29)).toBe(false);
  });

  it('lets the least recently searched catalogs’ learned indexes go past LEARNED_MEMORY, and reads one again when searched', async () => {
    const catalogs = [uniqueName('learn-mem'), uniqueName('learn-mem')];
    for (const catalog of catalogs) {
      expect((await app.request('PUT', `/v1/catalogs/${catalog}`, { tools: TOOLS }, as('ka1'))).status).toBe(200);
      for (const key of ['ka1', 'ka2'])
        expect((await app.request('POST', '/v1/feedback', { catalog, query: QUERY, used: ['create_ticket'] }, as(key))).status).toBe(200);
    }
    const [first, second] = await Promise.all(catalogs.map(async (name) => (await getCatalog(app.deps.search.db, 'alpha', name))!));
    // A budget one index fills: each search keeps its own catalog's index and lets the other go.
    const one = await new LearnedCache({ retentionSeconds: 86_400, halfLifeSeconds: 86_400, refreshMs: LEARNED_REFRESH_MS }).forSearch(
      app.deps.search.db,
      first!,
      null,
    );
    const cache = new LearnedCache({ retentionSeconds: 86_400, halfLifeSeconds: 86_400, refreshMs: LEARNED_REFRESH_MS, memoryBytes: one!.bytes });
    expect((await cache.forSearch(app.deps.search.db, first!, null))?.eventCount).toBe(2);
    expect(cache.catalogs).toBe(1);
    expect((await cache.forSearch(app.deps.search.db, second!, null))?.eventCount).toBe(2);
    expect(cache.catalogs).toBe(1);
    expect(cache.remembered(first!.id)).toBeUndefined();
    expect(cache.remembered(second!.id)?.eventCount).toBe(2);
    // Searched again, the first is read again from the store, whole.
    expect((await cache.forSearch(app.deps.search.db, first!, null))?.eventCount).toBe(2);
    expect(cache.remembered(second!.id)).toBeUndefined();
    // With room for both, both stay.
    const roomy = new LearnedCache({ retentionSeconds: 86_400, halfLifeSeconds: 86_400, refreshMs: LEARNED_REFRESH_MS, memoryBytes: 2 * one!.bytes });
    for (const row of [first!, second!]) await roomy.forSearch(app.deps.search.db, row, null);
    expect(roomy.catalogs).toBe(2);
  });
});
