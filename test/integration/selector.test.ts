import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'drizzle-orm';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { TokenCounter } from '../../src/catalog/tokens.js';
import { contentHash } from '../../src/catalog/content-hash.js';
import { normalizeRequestTool } from '../../src/search/selector.js';
import { queryTerms, TERMS_VERSION } from '../../src/ranking/search-text.js';
import { byScoreThenId, byScoreThenKey, distinctTerms } from '../../src/ranking/bm25.js';
import { queryRows } from '../../src/store/database.js';
import { storedListSource } from '../../src/search/corpus-source.js';
import { rankCorpus } from '../../src/search/hybrid-search.js';
import { searchBm25, searchServersBm25 } from '../../src/store/search-store.js';
import { NO_TERMS, storeDocuments } from '../../src/store/tool-store.js';
import type { RequestTool } from '../../src/search/selector.js';
import { toDocument, uniqueTools } from '../helpers/queue.js';
import { startTestApp, type TestApp, type TestResponse } from '../helpers/app.js';
import { testEmbedder } from '../helpers/embedder.js';
import type { Embedder } from '../../src/embed/embedder.js';
import { uniqueName } from '../helpers/database.js';
import { expectError, until } from '../helpers/assertions.js';

const SEARCH = '/v1/tool-discovery/search';
/** Where gateways >= 0.5.3 post (`<base>/api/compress/tool-discovery/`, trailing slash included). */
const COMPRESR = '/api/compress/tool-discovery/';

/** Byte-for-byte what each gateway version posts (see test/fixtures/README.md). */
const fixture = (name: string) => readFileSync(new URL(`../fixtures/${name}`, import.meta.url), 'utf8');
const v052Body = fixture('gateway-v0.5.2-request.json');
const v053Body = fixture('gateway-v0.5.3-request.json');
const v052 = JSON.parse(v052Body) as { top_k: number; always_keep: string[]; tools: { name: string }[] };
const v053 = JSON.parse(v053Body) as { max_tools: number; always_keep: string[]; tools: { name: string; description: string; parameters: object }[] };

const toolbench = readFileSync(new URL('../../../shared/eval/toolbench_stable/catalog.jsonl', import.meta.url), 'utf8')
  .trim()
  .split('\n')
  .map((line) => JSON.parse(line) as { name: string; description: string; input_schema: Record<string, unknown>; server: string });

interface WireTool {
  name: string;
  description?: string;
  definition?: Record<string, unknown>;
  parameters?: Record<string, unknown>;
}

/** A gateway <= 0.5.2 tool: wrapper plus the provider's definition (Anthropic shape here). */
function wrapped(name: string, description: string, properties: Record<string, unknown> = { input: { type: 'string' } }): WireTool {
  const inputSchema = { type: 'object', properties };
  return { name, description, definition: { name, description, input_schema: inputSchema } };
}

/** The gateway's view of a turn: mixed local tools and MCP tools prefixed with their server. */
const workspaceTools: WireTool[] = [
  wrapped('read_file', 'Read a file from the workspace and return its contents.', { path: { type: 'string' } }),
  wrapped('write_file', 'Create or overwrite a file in the workspace.', { path: { type: 'string' }, content: { type: 'string' } }),
  wrapped('search_code', 'Find a regular expression in the source files of the workspace.', { pattern: { type: 'string' } }),
  wrapped('web_search', 'Search the web and return the top results with title, URL and snippet.', { query: { type: 'string' } }),
  wrapped('run_shell', 'Run a shell command and return its output and exit code.', { command: { type: 'string' } }),
  wrapped('github__create_issue', 'Create a new issue in a GitHub repository.', { title: { type: 'string' } }),
  wrapped('filesystem__read_file', 'Read the complete contents of a file from the file system.', { path: { type: 'string' } }),
  wrapped('git__read_file', 'Show a file at a given git revision.', { rev: { type: 'string' } }),
  // Servers whose tool is called "search" but that have nothing to do with the web.
  wrapped('jira__search', 'Find Jira tickets with a JQL expression.', { jql: { type: 'string' } }),
  wrapped('slack__search', 'Find messages in Slack channels and direct messages.', { text: { type: 'string' } }),
];
const workspaceNames = workspaceTools.map((tool) => tool.name);

/**
 * Checks the one body both gateway generations read (`selected_names`; `success` + `data.relevant_tools`)
 * and what the gateway keeps of it: names exactly as sent, within the budget, never empty for tools.
 */
function expectSelection(response: TestResponse, sentNames: string[], budget: number): string[] {
  expect(response.status, response.text).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^application\/json/);
  const names = response.body.selected_names as string[];
  expect(Array.isArray(names)).toBe(true);
  expect(response.body.success).toBe(true);
  expect(response.body.data.relevant_tools).toEqual(names);
  expect(new Set(names).size).toBe(names.length);
  for (const name of names) expect(sentNames).toContain(name);
  expect(names.length).toBeLessThanOrEqual(budget);
  if (sentNames.length > 0) expect(names.length).toBeGreaterThan(0);
  return names;
}

async function select(app: TestApp, body: unknown, headers: Record<string, string> = {}, path = SEARCH): Promise<TestResponse> {
  return app.request('POST', path, body, headers);
}

/** With API keys set, /metrics takes this token (it names tenants and upstreams). */
const METRICS_TOKEN = 'tests-metrics-token-0001';
describe('tool selection for the Context Gateway', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ EMBED_MODEL: 'use-lite' });
  });
  afterAll(() => app.close());

  it('posts the fixtures as Go marshals them: compact, HTML characters escaped', () => {
    for (const body of [v052Body, v053Body]) {
      expect(body).not.toMatch(/[<>&\n]/);
      expect(body).toContain('\\u003c');
      expect(body).toContain('\\u0026');
    }
    expect(Object.keys(JSON.parse(v052Body))).toEqual(['pattern', 'top_k', 'always_keep', 'tools']);
    expect(Object.keys(JSON.parse(v053Body))).toEqual(['query', 'always_keep', 'tools', 'max_tools', 'compression_model_name', 'source']);
  });

  it('answers what a 0.5.2 gateway posts, readable by both gateway generations', async () => {
    const sent = v052.tools.map((tool) => tool.name);
    const names = expectSelection(await select(app, v052Body, { authorization: 'Bearer anything' }), sent, v052.top_k);
    // always_keep ["Bash", "read_file"]: the one present comes first, the absent one never appears.
    expect(names[0]).toBe('read_file');
    expect(names).not.toContain('Bash');
    // "read the contents of a file at a git revision"
    expect(names).toContain('git__read_file');
  });

  it('answers what a 0.5.3 gateway posts, at its own path and at ours', async () => {
    const sent = v053.tools.map((tool) => tool.name);
    for (const path of [COMPRESR, '/api/compress/tool-discovery', SEARCH]) {
      const names = expectSelection(await select(app, v053Body, { 'x-api-key': 'anything' }, path), sent, v053.max_tools);
      expect(names[0]).toBe('read_file');
      expect(names).not.toContain('TodoWrite');
      // "open a GitHub issue about the failing build & attach the <stderr> output"
      expect(names).toContain('github__create_issue');
    }
  });

  it('gives the dense list the words a pattern misspells: embedded again for a new list, at once for a remembered one', async () => {
    const tools = [
      { name: 'read_file', description: 'Read the complete contents of a file from disk.' },
      { name: 'web_search', description: 'Search the web for pages matching a query.' },
      { name: 'send_email', description: 'Send an email message to a recipient.' },
      { name: 'get_weather', description: 'Current weather forecast for a city.' },
    ];
    const embedder = app.deps.search.embedder!;
    const embedQuery = embedder.embedQuery.bind(embedder);
    const seen: string[] = [];
    const spy = vi.spyOn(embedder, 'embedQuery').mockImplementation((text) => {
      seen.push(text);
      return embedQuery(text);
    });
    // The texts asked of the query cache, each a model call (the query started early, http/early-query.ts, shares it).
    const texts = () => [...new Set(seen)];
    // Earlier tests' lists are stored first: the early query guesses with the list remembered last.
    await app.deps.selector.background.settled();
    try {
      const body = { pattern: 'wether forcast', top_k: 1, tools };
      expect((await select(app, body)).body.selected_names).toEqual(['get_weather']);
      expect(texts()).toEqual(['wether forcast', 'wether forcast weather forecast']);
      await app.deps.selector.background.settled(); // the list is remembered once stored
      seen.length = 0;
      expect((await select(app, body)).body.selected_names).toEqual(['get_weather']);
      expect(texts()).toEqual(['wether forcast weather forecast']);
    } finally {
      spy.mockRestore();
    }
  });

  it('defaults top_k to 5 and honours top_k and max_tools', async () => {
    expect(expectSelection(await select(app, { pattern: 'file', tools: workspaceTools }), workspaceNames, 5)).toHaveLength(5);
    expect(expectSelection(await select(app, { query: 'file', tools: workspaceTools }), workspaceNames, 5)).toHaveLength(5);
    expect(expectSelection(await select(app, { pattern: 'file', top_k: 2, tools: workspaceTools }), workspaceNames, 2)).toHaveLength(2);
    expect(expectSelection(await select(app, { query: 'file', max_tools: 7, tools: workspaceTools }), workspaceNames, 7)).toHaveLength(7);
    // More than there are tools: every tool, once.
    expect(expectSelection(await select(app, { pattern: 'file', top_k: 50, tools: workspaceTools }), workspaceNames, 50)).toHaveLength(workspaceNames.length);
  });

  it('includes the always_keep names present in tools within the budget and ignores absent ones', async () => {
    const body = { pattern: 'search the web', top_k: 3, always_keep: ['run_shell', 'NotATool', 'write_file'], tools: workspaceTools };
    const names = expectSelection(await select(app, body), workspaceNames, 3);
    expect(names.slice(0, 2)).toEqual(['run_shell', 'write_file']);
    expect(names).not.toContain('NotATool');
    // More always_keep than budget: the budget wins, in always_keep order.
    const tight = { pattern: 'search the web', top_k: 2, always_keep: ['run_shell', 'write_file', 'read_file'], tools: workspaceTools };
    expect(expectSelection(await select(app, tight), workspaceNames, 2)).toEqual(['run_shell', 'write_file']);
    const only = { query: 'anything', max_tools: 4, always_keep: ['Bash', 'TodoWrite'], tools: workspaceTools };
    expect(expectSelection(await select(app, only), workspaceNames, 4)).toHaveLength(4);
  });

  it('puts an exact tool name first', async () => {
    for (const name of ['git__read_file', 'search_code', 'slack__search', 'write_file']) {
      const names = expectSelection(await select(app, { pattern: name, tools: workspaceTools }), workspaceNames, 5);
      expect(names[0]).toBe(name);
    }
    const mentioned = expectSelection(await select(app, { pattern: 'use `github__create_issue` for the crash', tools: workspaceTools }), workspaceNames, 5);
    expect(mentioned[0]).toBe('github__create_issue');
  });

  it('selects a server tool by its bare name, and every server tool sharing it', async () => {
    const bare = expectSelection(await select(app, { pattern: 'create_issue', tools: workspaceTools }), workspaceNames, 5);
    expect(bare[0]).toBe('github__create_issue');
    const withoutLocal = workspaceTools.filter((tool) => tool.name !== 'read_file');
    const shared = expectSelection(await select(app, { pattern: 'read_file', tools: withoutLocal }), workspaceNames, 5);
    expect(new Set(shared.slice(0, 2))).toEqual(new Set(['filesystem__read_file', 'git__read_file']));
    const search = expectSelection(await select(app, { pattern: 'search', tools: workspaceTools }), workspaceNames, 5);
    expect(new Set(search.slice(0, 2))).toEqual(new Set(['jira__search', 'slack__search']));
  });

  it('does not force *__search tools first for prose that contains the word search', async () => {
    const names = expectSelection(await select(app, { pattern: 'search the web', tools: workspaceTools }), workspaceNames, 5);
    expect(names[0]).toBe('web_search');
    const prose = expectSelection(
      await select(app, { query: 'search the web for the latest Node.js release notes', tools: workspaceTools }),
      workspaceNames,
      5,
    );
    expect(prose[0]).toBe('web_search');
  });

  it('never answers a name that was not sent', async () => {
    const body = { pattern: 'delete_everything or format_disk', top_k: 10, always_keep: ['delete_everything'], tools: workspaceTools.slice(0, 4) };
    const names = expectSelection(await select(app, body), workspaceNames.slice(0, 4), 10);
    expect(names).toHaveLength(4);
    expect(names).not.toContain('delete_everything');
    expect(names).not.toContain('format_disk');
  });

  it('answers a blank pattern with always_keep, then the request order', async () => {
    for (const blank of ['', '   ']) {
      const names = expectSelection(await select(app, { pattern: blank, top_k: 3, always_keep: ['run_shell'], tools: workspaceTools }), workspaceNames, 3);
      expect(names).toEqual(['run_shell', 'read_file', 'write_file']);
      const newer = expectSelection(await select(app, { query: blank, max_tools: 2, tools: workspaceTools }, {}, COMPRESR), workspaceNames, 2);
      expect(newer).toEqual(['read_file', 'write_file']);
    }
  });

  it('answers an empty tool list with an empty list', async () => {
    for (const body of [
      { pattern: 'read a file', top_k: 5, tools: [] },
      { query: 'read a file', max_tools: 5, tools: [], compression_model_name: 'tdc_coldbrew_v1' },
    ]) {
      const response = await select(app, body);
      expect(response.status, response.text).toBe(200);
      expect(response.body).toEqual({ selected_names: [], success: true, data: { relevant_tools: [] } });
    }
  });

  it('puts the names a regular-expression pattern matches first', async () => {
    const names = expectSelection(await select(app, { pattern: 'read_.*', top_k: 5, tools: workspaceTools }), workspaceNames, 5);
    expect(new Set(names.slice(0, 3))).toEqual(new Set(['read_file', 'filesystem__read_file', 'git__read_file']));
    const anchored = expectSelection(await select(app, { pattern: '^(jira|slack)__', top_k: 3, tools: workspaceTools }), workspaceNames, 3);
    expect(new Set(anchored.slice(0, 2))).toEqual(new Set(['jira__search', 'slack__search']));
    // Metacharacters that do not compile are just text to the ranker.
    expectSelection(await select(app, { pattern: 'read_(file [src', tools: workspaceTools }), workspaceNames, 5);
  });

  it('ranks a tool whose definition is in an unknown shape by its name and description', async () => {
    const tools = [
      ...workspaceTools.filter((tool) => tool.name !== 'web_search'),
      {
        name: 'web_search',
        description: 'Search the web for current information.',
        definition: { type: 'web_search_20250305', name: 'web_search', max_uses: 5 },
      },
      { name: 'computer', definition: { type: 'computer_20250124', name: 'computer', display_width_px: 1024, display_height_px: 768 } },
    ];
    const sent = tools.map((tool) => tool.name);
    const names = expectSelection(await select(app, { pattern: 'look something up on the web', top_k: 3, tools }), sent, 3);
    expect(names).toContain('web_search');
    expect(expectSelection(await select(app, { pattern: 'computer', top_k: 3, tools }), sent, 3)[0]).toBe('computer');
  });
});

describe('selector keys, tenants and the content-hash cache', () => {
  let app: TestApp;
  const t1 = { authorization: 'Bearer k1' };
  const t2 = { 'x-api-key': 'k2' };
  beforeAll(async () => {
    app = await startTestApp({ API_KEYS: 'k1:t1,k2:t2', EMBED_MODEL: 'use-lite', METRICS_TOKEN });
    // At start the queue resumes every stored document of the shared database still lacking a
    // vector (earlier test files, earlier runs): let that finish so the counts below are ours.
    await app.deps.queue!.whenIdle();
  }, 600_000);
  afterAll(() => app.close());

  /** Never-seen tools for this run, in the 0.5.2 wrapper shape and the 0.5.3 parameters shape. */
  function freshTools(): { v052: WireTool[]; v053: WireTool[]; hashes: string[] } {
    const run = uniqueName('sel');
    const specs = [
      ['read_file', `Read a file from the workspace (${run}).`],
      ['web_search', `Search the web for pages (${run}).`],
      ['github__create_issue', `Create an issue in a GitHub repository (${run}).`],
      ['git__read_file', `Show a file at a git revision (${run}).`],
    ] as const;
    const properties = { input: { type: 'string', description: 'What to act on' } };
    const v052Tools = specs.map(([name, description]) => wrapped(name, description, properties));
    const v053Tools = specs.map(([name, description]) => ({ name, description, parameters: { type: 'object', properties } }));
    const hashes = v052Tools.map((tool, index) => contentHash(normalizeRequestTool(tool, index)));
    // Both shapes are the same content: one document each.
    expect(v053Tools.map((tool, index) => contentHash(normalizeRequestTool(tool, index)))).toEqual(hashes);
    return { v052: v052Tools, v053: v053Tools, hashes };
  }

  async function documentCount(hashes: string[]): Promise<number> {
    const rows = await queryRows<{ count: number }>(
      app.deps.database.db,
      sql`select count(*)::int as count from tool_documents where hash = any(${sql.param(hashes)}::text[])`,
    );
    return rows[0]!.count;
  }

  async function vectorsPerHash(hashes: string[]): Promise<Map<string, number>> {
    const rows = await queryRows<{ hash: string; count: number }>(
      app.deps.database.db,
      sql`select hash, count(*)::int as count from tool_embeddings
          where hash = any(${sql.param(hashes)}::text[]) and model = ${app.deps.embedder!.modelId} group by hash`,
    );
    return new Map(rows.map((row) => [row.hash, row.count]));
  }

  /** Waits until the queue has written a vector for each hash (the request does not await its enqueue). */
  async function embedded(hashes: string[]): Promise<void> {
    const deadline = Date.now() + 30_000;
    while ((await vectorsPerHash(hashes)).size < hashes.length && Date.now() < deadline) await sleep(50);
  }

  /** The queue once every job, including ones enqueued without being awaited, has finished. */
  async function settledStatus() {
    await sleep(100);
    await app.deps.queue!.whenIdle();
    return app.deps.queue!.status();
  }

  it('refuses a missing or wrong key with 401 in the error shape, on both paths', async () => {
    const body = { pattern: 'read', tools: [{ name: 'read_file' }] };
    for (const path of [SEARCH, COMPRESR]) {
      expect(expectError(await select(app, body, {}, path), 401, 'unauthorized').message).toMatch(/missing API key/);
      expect(expectError(await select(app, body, { authorization: 'Bearer nope' }, path), 401, 'unauthorized').message).toMatch(/invalid API key/);
      expectError(await select(app, body, { 'x-api-key': 'k3' }, path), 401, 'unauthorized');
      expectError(await select(app, body, { authorization: 'k1' }, path), 401, 'unauthorized');
    }
    // Refused before the body is read: a malformed body with no key is still a 401.
    expectError(await select(app, '{not json', {}), 401, 'unauthorized');
  });

  it('accepts Authorization: Bearer (gateway <= 0.5.2) and X-API-Key (gateway >= 0.5.3)', async () => {
    expectSelection(
      await select(app, v052Body, t1),
      v052.tools.map((tool) => tool.name),
      v052.top_k,
    );
    expectSelection(
      await select(app, v053Body, t2, COMPRESR),
      v053.tools.map((tool) => tool.name),
      v053.max_tools,
    );
    expectSelection(
      await select(app, v053Body, { authorization: 'Bearer k2' }, COMPRESR),
      v053.tools.map((tool) => tool.name),
      v053.max_tools,
    );
  });

  it('keeps catalogs to their tenant', async () => {
    const name = uniqueName('sel-tenant');
    const put = await app.request(
      'PUT',
      `/v1/catalogs/${name}`,
      v053.tools.map(({ name: tool, description, parameters }) => ({ name: tool, description, inputSchema: parameters })),
      t2,
    );
    expect(put.status, put.text).toBe(200);
    expect((await app.request('GET', `/v1/catalogs/${name}`, undefined, t2)).status).toBe(200);
    expectError(await app.request('GET', `/v1/catalogs/${name}`, undefined, t1), 404, 'not_found');
    expectError(await app.request('GET', `/v1/catalogs/${name}/tools`, undefined, t1), 404, 'not_found');
    expectError(await app.request('GET', `/v1/catalogs/${name}`), 401, 'unauthorized');
  });

  it('selects from a stored catalog instead of inline tools: its tenant only, always_keep first, never empty, one of the two', async () => {
    const name = uniqueName('sel-catalog');
    const tools = [
      { name: 'read_file', description: 'Read the complete contents of a file from disk.' },
      { name: 'web_search', description: 'Search the web for pages matching a query.' },
      { name: 'send_email', description: 'Send an email message to a recipient.' },
      { name: 'get_weather', description: 'Current weather forecast for a city.' },
    ];
    expect((await app.request('PUT', `/v1/catalogs/${name}`, tools, t1)).status).toBe(200);
    for (const path of [SEARCH, COMPRESR]) {
      const found = await select(
        app,
        { query: 'what is the weather forecast in Paris', max_tools: 2, always_keep: ['send_email', 'not_in_catalog'], catalog: name },
        t1,
        path,
      );
      expect(found.status, found.text).toBe(200);
      expect(found.body).toEqual({ selected_names: ['send_email', 'get_weather'], success: true, data: { relevant_tools: ['send_email', 'get_weather'] } });
    }
    // Typos too: the catalog search's ranking.
    expect((await select(app, { pattern: 'wether forcast', top_k: 1, catalog: name }, t1)).body.selected_names).toEqual(['get_weather']);
    // A blank pattern, or one nothing matches, still answers top_k names of the catalog.
    expect((await select(app, { pattern: '   ', top_k: 3, catalog: name }, t1)).body.selected_names).toHaveLength(3);
    expect((await select(app, { pattern: 'zzzz qqqq', top_k: 4, catalog: name }, t1)).body.selected_names.sort()).toEqual(
      tools.map((tool) => tool.name).sort(),
    );
    // Another tenant's catalog does not exist for this key; a bad name or both sources is a 400.
    // Each answer's time per stage is in /metrics (endpoint selector_catalog), every stage once per answer.
    const stages = Object.fromEntries(
      (await (await fetch(`${app.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text())
        .split('\n')
        .filter((row) => row.startsWith('toolsift_search_stage_duration_seconds_count{endpoint="selector_catalog"'))
        .map((row) => [/stage="([a-z_]+)"/.exec(row)![1], Number(row.split(' ').at(-1))]),
    );
    expect(Object.keys(stages).sort()).toEqual(['fusion', 'lookup', 'padding', 'query_embedding', 'retrieval']);
    expect(new Set(Object.values(stages)).size).toBe(1);
    expect(stages.lookup).toBeGreaterThanOrEqual(5);
    expectError(await select(app, { pattern: 'weather', catalog: name }, t2), 404, 'not_found');
    expectError(await select(app, { pattern: 'weather', catalog: 'no/such' }, t1), 400, 'validation_failed');
    expectError(await select(app, { pattern: 'weather', catalog: name, tools: [{ name: 'x' }] }, t1), 400, 'validation_failed');
    expectError(await select(app, { pattern: 'weather' }, t1), 400, 'validation_failed');
  });

  it('stores each never-seen tool once, embeds it once, and re-sent tools enqueue nothing', async () => {
    const { v052: tools, hashes } = freshTools();
    const sent = tools.map((tool) => tool.name);
    expect(await documentCount(hashes)).toBe(0);

    expectSelection(await select(app, { pattern: 'read a file', top_k: 2, tools }, t1), sent, 2);
    // Documents and terms are written by the request once it has answered; the vectors come from the queue.
    await app.deps.selector.background.settled();
    expect(await documentCount(hashes)).toBe(hashes.length);
    await embedded(hashes);
    const idle = await settledStatus();
    const vectors = await vectorsPerHash(hashes);
    expect([...vectors.keys()].sort()).toEqual([...hashes].sort());
    for (const count of vectors.values()) expect(count).toBe(1);

    // Same bytes again: no new document, nothing enqueued, still one vector each.
    expectSelection(await select(app, { pattern: 'search the web', top_k: 2, tools }, t1), sent, 2);
    expect(await settledStatus()).toEqual(idle);
    expect(await documentCount(hashes)).toBe(hashes.length);
    expect(await vectorsPerHash(hashes)).toEqual(vectors);
  });

  it('lets a second tenant, and the other gateway shape, reuse the same documents and vectors', async () => {
    const { v052: tools, v053: newer, hashes } = freshTools();
    const sent = tools.map((tool) => tool.name);
    expectSelection(await select(app, { pattern: 'open an issue', top_k: 3, tools }, t1), sent, 3);
    await embedded(hashes);
    const idle = await settledStatus();
    const vectors = await vectorsPerHash(hashes);
    expect(vectors.size).toBe(hashes.length);

    // The same bytes from another tenant.
    expectSelection(await select(app, { pattern: 'open an issue', top_k: 3, tools }, t2), sent, 3);
    // The same tools as a 0.5.3 gateway sends them: other bytes, so parsed and hashed again, same content.
    const answer = expectSelection(await select(app, { query: 'github__create_issue', max_tools: 3, tools: newer }, t2, COMPRESR), sent, 3);
    expect(answer[0]).toBe('github__create_issue');
    expect(await settledStatus()).toEqual(idle);
    expect(await documentCount(hashes)).toBe(hashes.length);
    expect(await vectorsPerHash(hashes)).toEqual(vectors);
  });
});

describe('selector limits and malformed bodies', () => {
  // No model here: these are about parsing, size and time. The documents this block creates are
  // removed afterwards, or every later app with a model would spend minutes embedding them.
  let app: TestApp;
  const created = new Set<string>();
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(async () => {
    // The requests' writes finish after their answers: let them land before removing what they wrote.
    await app.deps.selector.background.settled();
    if (created.size > 0) {
      await app.deps.database.db.execute(
        sql`delete from tool_documents d where d.hash = any(${sql.param([...created])}::text[])
            and not exists (select 1 from catalog_tools ct where ct.hash = d.hash)`,
      );
    }
    await app.close();
  });

  /** Notes which of these tools' documents do not exist yet, so afterAll removes only those. */
  async function track(tools: WireTool[]): Promise<void> {
    const hashes = tools.map((tool, index) => contentHash(normalizeRequestTool(tool, index)));
    const rows = await queryRows<{ hash: string }>(app.deps.database.db, sql`select hash from tool_documents where hash = any(${sql.param(hashes)}::text[])`);
    const existing = new Set(rows.map((row) => row.hash));
    for (const hash of hashes) if (!existing.has(hash)) created.add(hash);
  }

  it('answers a catastrophic regular expression against 1,000 long names quickly', async () => {
    const tools = Array.from({ length: 1000 }, (_, index) => ({ name: `${'a'.repeat(60)}!${index}`, description: `Long-named tool ${index}.` }));
    const sent = tools.map((tool) => tool.name);
    await track(tools);
    // First sight stores 1,000 documents; the timed request measures the pattern, not the insert.
    expectSelection(await select(app, { pattern: 'long named tool', tools }), sent, 5);
    const started = performance.now();
    const response = await select(app, { pattern: '(a+)+$', tools });
    const elapsed = performance.now() - started;
    expectSelection(response, sent, 5);
    expect(elapsed).toBeLessThan(2000);
    const newerStarted = performance.now();
    expectSelection(await select(app, { query: '(a+)+$', max_tools: 5, tools }, {}, COMPRESR), sent, 5);
    expect(performance.now() - newerStarted).toBeLessThan(2000);
  });

  it('accepts 1,000 tools with full schemas under the default body limit', async () => {
    const tools = toolbench.slice(0, 1000).map((tool) => ({
      name: tool.name,
      description: tool.description,
      definition: { name: tool.name, description: tool.description, input_schema: tool.input_schema },
    }));
    await track(tools);
    const body = JSON.stringify({ pattern: 'get the current weather forecast for a city', top_k: 5, always_keep: [tools[999]!.name], tools });
    expect(Buffer.byteLength(body)).toBeGreaterThan(500_000);
    expect(Buffer.byteLength(body)).toBeLessThan(25 * 1024 * 1024);
    const names = expectSelection(
      await select(app, body),
      tools.map((tool) => tool.name),
      5,
    );
    expect(names[0]).toBe(tools[999]!.name);
    // The same 1,000 in the 0.5.3 shape.
    const newer = {
      query: 'get the current weather forecast for a city',
      max_tools: 8,
      tools: toolbench.slice(0, 1000).map(({ name, description, input_schema }) => ({ name, description, parameters: input_schema })),
    };
    expectSelection(
      await select(app, newer, {}, COMPRESR),
      tools.map((tool) => tool.name),
      8,
    );
  });

  it('refuses malformed bodies with 400 and a message that says what is wrong', async () => {
    const tools = [{ name: 'read_file', description: 'Read a file.' }];
    const notJson = expectError(await select(app, '{"pattern": "read", "tools": [', { 'content-type': 'application/json' }), 400, 'invalid_json');
    expect(notJson.message).toMatch(/not valid JSON/);
    expect(expectError(await select(app, { pattern: 'read' }), 400, 'validation_failed').message).toMatch(/exactly one of tools .* and catalog/);
    expect(expectError(await select(app, { pattern: 'read', tools: { read_file: {} } }), 400, 'validation_failed').message).toMatch(/tools must be an array/);
    expect(expectError(await select(app, { pattern: 'read', tools: 'read_file' }), 400, 'validation_failed').message).toMatch(/tools must be an array/);
    expect(expectError(await select(app, { tools }), 400, 'validation_failed').message).toMatch(/pattern .*or query .*is required/);
    expect(expectError(await select(app, { pattern: 5, tools }), 400, 'validation_failed').message).toMatch(/pattern/);
    expect(expectError(await select(app, [{ pattern: 'read', tools }]), 400, 'validation_failed').message).toMatch(/body/);
    for (const topK of [0, '5', 1.5, -1, null]) {
      const error = expectError(await select(app, { pattern: 'read', top_k: topK, tools }), 400, 'validation_failed');
      expect(error.message).toMatch(/top_k/);
      expect(expectError(await select(app, { query: 'read', max_tools: topK, tools }), 400, 'validation_failed').message).toMatch(/max_tools/);
    }
    const nameless = expectError(await select(app, { pattern: 'read', tools: [...tools, { description: 'no name' }] }), 400, 'invalid_tool');
    expect(nameless.message).toMatch(/^tools\[1\]: .*name/);
    expect(expectError(await select(app, { pattern: 'read', tools: [{ name: '', description: 'x' }] }), 400, 'invalid_tool').message).toMatch(/tools\[0\]/);
    expect(expectError(await select(app, { pattern: 'read', tools: ['read_file'] }), 400, 'invalid_tool').message).toMatch(/tools\[0\]/);
    expectError(await select(app, 'pattern=read', { 'content-type': 'application/x-www-form-urlencoded' }), 415, 'unsupported_media_type');
    const utf16 = expectError(
      await select(app, JSON.stringify({ pattern: 'read', tools }), { 'content-type': 'application/json; charset=utf-16' }),
      415,
      'unsupported_media_type',
    );
    expect(utf16.message).toMatch(/UTF-16/);
    expect(await select(app, JSON.stringify({ pattern: 'read', tools }), { 'content-type': 'application/json; charset=UTF-8' })).toMatchObject({ status: 200 });
    expect(expectError(await select(app, 'null', { 'content-type': 'application/json' }), 400, 'invalid_json').message).toMatch(/top level/);
  });
});

describe('the selector tool-list cache', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ EMBED_MODEL: 'none' });
  });
  afterAll(() => app.close());

  it('answers from the tools each request carries, however the lists alternate', async () => {
    const first = [
      { name: 'alpha_reader', description: 'Reads alpha files' },
      { name: 'alpha_writer', description: 'Writes alpha files' },
    ];
    const second = [
      { name: 'beta_reader', description: 'Reads beta files' },
      { name: 'beta_writer', description: 'Writes beta files' },
    ];
    for (const [tools, pattern] of [
      [first, 'reads files'],
      [second, 'reads files'],
      [first, 'writes files'],
      [second, 'writes files'],
    ] as const) {
      const response = await app.request('POST', '/v1/tool-discovery/search', { pattern, top_k: 1, tools });
      expect(response.status).toBe(200);
      const expected = tools.find((tool) => tool.name.endsWith(pattern.startsWith('read') ? 'reader' : 'writer'))!.name;
      expect(response.body.selected_names).toEqual([expected]);
    }
  });

  /** BM25 rows of the documents behind `hashes`: each one's terms_version and count of term rows, in hash order. */
  const termsOf = (hashes: string[]) =>
    queryRows<{ hash: string; version: number; terms: number }>(
      app.deps.database.db,
      sql`select d.hash, d.terms_version as version, (select count(*)::int from tool_terms t where t.hash = d.hash) as terms
          from tool_documents d where d.hash = any(${sql.param(hashes)}::text[]) order by d.hash collate "C"`,
    );

  /** Stores a list's documents as a catalog write does, with their terms, so the SQL ranking can read them. */
  const storeWithTerms = async (tools: RequestTool[]) => {
    await storeDocuments(
      app.deps.database.db,
      tools.map(({ tool, hash }) => toDocument(tool, hash)),
    );
    for (const row of await termsOf(tools.map(({ hash }) => hash))) expect(row.version).toBe(TERMS_VERSION);
  };

  it("stores a request's never-seen tools without their BM25 terms; a catalog that includes some writes theirs", async () => {
    const tools = uniqueTools(6, 'termless');
    const response = await app.request('POST', '/v1/tool-discovery/search', { pattern: 'handles request number 4', top_k: 3, tools });
    expect(response.status).toBe(200);
    expect(response.body.selected_names[0]).toBe('termless_4');
    await app.deps.selector.background.settled();
    const hashes = tools.map((raw, index) => contentHash(normalizeRequestTool(raw, index)));
    expect((await termsOf(hashes)).map(({ version, terms }) => ({ version, terms }))).toEqual(hashes.map(() => ({ version: NO_TERMS, terms: 0 })));
    // A catalog of two of them: their terms land with it, the other four stay as they were.
    const catalog = uniqueName('termless');
    expect((await app.request('PUT', `/v1/catalogs/${catalog}`, { tools: tools.slice(0, 2) })).status).toBe(200);
    const after = new Map((await termsOf(hashes)).map((row) => [row.hash, row]));
    hashes.forEach((hash, index) => {
      const row = after.get(hash)!;
      if (index < 2) {
        expect(row.version).toBe(TERMS_VERSION);
        expect(row.terms).toBeGreaterThan(0);
      } else {
        expect(row).toEqual({ hash, version: NO_TERMS, terms: 0 });
      }
    });
    // The catalog's BM25 (in SQL and in its index) finds them by their words.
    const search = await app.request('POST', `/v1/catalogs/${catalog}/search`, { query: 'handles request number 1', top_k: 2, mode: 'bm25' });
    expect(search.status).toBe(200);
    expect(search.body.results.map((tool: { name: string }) => tool.name)).toEqual(['termless_1', 'termless_0']);
  });

  it('ranks BM25 in process exactly as Postgres ranks the documents the request stored', async () => {
    const tools = toolbench.slice(0, 150).map(({ name, description, input_schema }) => ({ name, description, parameters: input_schema }));
    const patterns = toolbench.slice(150, 170).map(({ name, description }) => `${description} ${name}`.slice(0, 200));
    const compact = JSON.stringify(tools);
    const body = (pattern: string) => `{"pattern":${JSON.stringify(pattern)},"top_k":20,"tools":${compact}}`;
    const response = await app.request('POST', '/v1/tool-discovery/search', body(patterns[0]!), { 'content-type': 'application/json' });
    expectSelection(
      response,
      tools.map(({ name }) => name),
      20,
    );
    await app.deps.selector.background.settled();
    const list = app.deps.selector.toolListCache.get(createHash('sha256').update(compact).digest('base64'));
    expect(list, 'the list is remembered once its tools are stored').toBeDefined();
    const hashes = list!.tools.map(({ hash }) => hash);
    await storeWithTerms(list!.tools);
    const nameOf = new Map(list!.tools.map(({ hash, tool }) => [hash, tool.name]));
    for (const pattern of patterns) {
      const terms = distinctTerms(queryTerms(pattern));
      const inProcess = list!.bm25.search(terms, 20).map(([hash]) => hash);
      // The request's list orders ties by name (the store's ids are hashes): Postgres's whole list, ties by name, cut.
      const byPostgres = await searchBm25(app.deps.database.db, { kind: 'hashes', hashes }, { terms, weights: terms.map(() => 1) }, hashes.length);
      expect(inProcess, pattern).toEqual(
        byPostgres
          .sort(byScoreThenKey((hash) => nameOf.get(hash)!))
          .slice(0, 20)
          .map(([hash]) => hash),
      );
    }
  });

  it('ranks with server votes in process exactly as the store does, for tools that name their server', async () => {
    // MCP tools carrying their server; 150 tools on ~50 servers.
    const tools = toolbench.slice(300, 450).map(({ name, description, input_schema, server }) => ({ name, description, inputSchema: input_schema, server }));
    const patterns = toolbench.slice(450, 470).map(({ description, name }) => `${description} ${name.split('_for_')[1]}`.slice(0, 200));
    const compact = JSON.stringify(tools);
    const body = (pattern: string) => `{"pattern":${JSON.stringify(pattern)},"top_k":20,"tools":${compact}}`;
    await app.request('POST', '/v1/tool-discovery/search', body(patterns[0]!), { 'content-type': 'application/json' });
    await app.deps.selector.background.settled();
    const list = app.deps.selector.toolListCache.get(createHash('sha256').update(compact).digest('base64'))!;
    expect(list.servers.members.size).toBeGreaterThan(20);
    const hashes = list.tools.map(({ hash }) => hash);
    await storeWithTerms(list.tools);
    const nameOf = new Map(list.tools.map(({ hash, tool }) => [hash, tool.name]));
    let voted = 0;
    for (const pattern of patterns) {
      const terms = distinctTerms(queryTerms(pattern));
      const servers = await searchServersBm25(app.deps.database.db, { kind: 'hashes', hashes }, { terms, weights: terms.map(() => 1) }, 3);
      expect(
        list.servers.bm25.search(terms, 3).map(([server]) => server),
        pattern,
      ).toEqual(servers.ranked.map(([server]) => server));
      // The whole ranking: the selector's (in process) against the store's (SQL), top 20.
      const response = await app.request('POST', '/v1/tool-discovery/search', body(pattern), { 'content-type': 'application/json' });
      // Ranked deeper than 20: tools of equal score go in name order, as the selector answers them (the
      // store's ids are hashes), so a tie across the 20th place is cut by name too.
      const byStore = await rankCorpus({ embedder: null }, storedListSource(app.deps.database.db, hashes), { query: pattern, topK: 50, mode: 'hybrid' });
      const byName = byStore.tools
        .map(({ id, score }): [string, number] => [nameOf.get(id)!, score])
        .sort(byScoreThenId)
        .slice(0, 20);
      // (The selector fills a short ranking up with request order; compare the ranked part.)
      expect(response.body.selected_names.slice(0, byName.length), pattern).toEqual(byName.map(([name]) => name));
      voted += byStore.tools.slice(0, 20).filter((tool) => tool.explain.server_vote > 0).length;
    }
    expect(voted, 'server votes took part').toBeGreaterThan(20);
  });
});

describe('the query started while the tools arrive (http/early-query.ts)', () => {
  /** Texts that reached the model (beneath the query cache), per app. */
  const asked = { shared: [] as string[], unshared: [] as string[] };
  let app: TestApp;
  let unshared: TestApp;
  beforeAll(async () => {
    const model = await testEmbedder();
    const counting = (into: string[]): Embedder => ({
      modelId: model.modelId,
      dimension: model.dimension,
      embedDocuments: (texts) => model.embedDocuments(texts),
      embedQuery: (text) => {
        into.push(text);
        return model.embedQuery(text);
      },
      close: async () => {},
    });
    app = await startTestApp({}, { embedder: counting(asked.shared) });
    // No query cache: nothing could share a call, so nothing starts early.
    unshared = await startTestApp({ QUERY_CACHE_SIZE: '0' }, { embedder: counting(asked.unshared) });
  });
  afterAll(async () => {
    await app.close();
    await unshared.close();
  });

  /** Posts `head`, waits for `between`, then posts `rest`: a body arriving in two parts. */
  async function postInTwoParts(target: TestApp, head: string, rest: string, between: () => Promise<void>): Promise<{ status: number; body: any }> {
    const { request } = await import('node:http');
    return new Promise((resolve, reject) => {
      const req = request(
        `${target.url}${SEARCH}`,
        { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(head + rest)) } },
        (res) => {
          let text = '';
          res.on('data', (chunk) => (text += chunk));
          res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text) }));
        },
      );
      req.on('error', reject);
      req.write(head);
      between().then(
        () => req.end(rest),
        (error: unknown) => {
          req.destroy();
          reject(error);
        },
      );
    });
  }

  it('embeds the query from the first bytes while the rest arrives, one model call a turn, the same answer', async () => {
    const tools = toolbench.slice(0, 60).map((tool) => wrapped(tool.name, tool.description));
    const toolsJson = JSON.stringify(tools);
    // The list is remembered first, as a gateway's is after its first turn.
    expect((await select(app, { pattern: 'warm up', top_k: 5, tools })).status).toBe(200);
    await app.deps.selector.background.settled();
    const pattern = `weather forecast for a city ${Date.now()}`;
    asked.shared.length = 0;
    const answer = await postInTwoParts(app, `{"pattern":${JSON.stringify(pattern)},"top_k":5,"tools":`, `${toolsJson}}`, () =>
      until('the model is asked before the body is complete', () => asked.shared.includes(pattern)),
    );
    expect(answer.status).toBe(200);
    expect(asked.shared).toEqual([pattern]);
    // The same turn on a service that starts nothing early: the same names, the same one model call.
    expect((await select(unshared, { pattern: 'warm up', top_k: 5, tools })).status).toBe(200);
    await unshared.deps.selector.background.settled();
    asked.unshared.length = 0;
    const plain = await postInTwoParts(unshared, `{"pattern":${JSON.stringify(pattern)},"top_k":5,"tools":`, `${toolsJson}}`, async () => {
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(asked.unshared).toEqual([]);
    });
    expect(plain.body.selected_names).toEqual(answer.body.selected_names);
    expect(asked.unshared).toEqual([pattern]);
  });

  it('answers from the whole body when the first bytes guessed wrong (a later key wins), at one model call more', async () => {
    const tools = toolbench.slice(60, 120).map((tool) => wrapped(tool.name, tool.description));
    const stamp = Date.now();
    const [guessed, meant] = [`send an email ${stamp}`, `create a calendar event ${stamp}`];
    asked.shared.length = 0;
    const body = `{"query":${JSON.stringify(guessed)},"max_tools":5,"tools":${JSON.stringify(tools)},"pattern":${JSON.stringify(meant)}}`;
    const answer = await select(app, body);
    expect(answer.status).toBe(200);
    // The guess (as the last list's words would expand it) and the query the body meant.
    expect(asked.shared.some((text) => text.startsWith(guessed))).toBe(true);
    expect(asked.shared).toContain(meant);
    expect(answer.body.selected_names).toEqual((await select(app, { pattern: meant, top_k: 5, tools })).body.selected_names);
  });
});

describe('the selector latency budget (SELECTOR_BUDGET_MS)', () => {
  let app: TestApp;
  beforeAll(async () => {
    // 0: never wait for the model. What a request gets when the model is busy past its budget.
    app = await startTestApp({ EMBED_MODEL: 'use-lite', SELECTOR_BUDGET_MS: '0' });
  });
  afterAll(() => app.close());

  const fallbacks = async (reason: string): Promise<number> => {
    const text = await (await fetch(`${app.url}/metrics`)).text();
    const line = text.split('\n').find((row) => row.startsWith(`toolsift_selector_fallbacks_total{reason="${reason}"}`));
    return line ? Number(line.split(' ').at(-1)) : 0;
  };

  it('answers from BM25 when the query embedding is not ready, and the embedding is not lost', async () => {
    const pattern = `read the notes file ${Date.now()}`;
    const before = await fallbacks('embedder_busy');
    const first = expectSelection(await select(app, { pattern, top_k: 3, tools: workspaceTools }), workspaceNames, 3);
    expect(first).toHaveLength(3);
    expect(await fallbacks('embedder_busy')).toBe(before + 1);
    // The model call was not cancelled: it completes into the query cache ...
    await app.deps.embedder!.embedQuery(pattern);
    // ... so the next turn with the same pattern ranks with its vector, within the same budget.
    expectSelection(await select(app, { pattern, top_k: 3, tools: workspaceTools }), workspaceNames, 3);
    expect(await fallbacks('embedder_busy')).toBe(before + 1);
  });
});

describe('the selector after its answer', () => {
  let app: TestApp;
  const lines: { level: number; msg: string }[] = [];
  beforeAll(async () => {
    app = await startTestApp({ EMBED_MODEL: 'none' }, { logger: pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) }) });
  });
  afterAll(() => app.close());

  it('a token count that fails after the answer is a warning, not an unhandled rejection', async () => {
    // Counting fails from now on, when new tools are stored and after the answer (the real counter
    // falls back to this thread when its own thread fails; this is what is left if that fails too).
    const failing = { countTexts: async () => Promise.reject(new Error('tokenizer gone')) };
    app.deps.selector.tokenCounter = failing;
    app.deps.selector.tokens = new TokenCounter(failing);
    const tools = workspaceTools.map((tool) => ({ ...tool, description: `${tool.description} (${Date.now()})` }));
    expectSelection(
      await select(app, { pattern: 'read a file', top_k: 3, tools }),
      tools.map((tool) => tool.name),
      3,
    );
    await vi.waitFor(() => expect(lines.some((line) => line.msg.includes('after the answer failed'))).toBe(true), { timeout: 10_000 });
    // The service answers the next turn as before.
    expectSelection(
      await select(app, { pattern: 'search the web', top_k: 3, tools }),
      tools.map((tool) => tool.name),
      3,
    );
  });
});
