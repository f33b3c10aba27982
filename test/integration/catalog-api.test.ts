import { readFileSync } from 'node:fs';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { contentHash } from '../../src/catalog/content-hash.js';
import { normalizeTool } from '../../src/catalog/tool-formats.js';
import { queryRows } from '../../src/store/database.js';
import { startTestApp, type TestApp, type TestResponse } from '../helpers/app.js';
import { uniqueName } from '../helpers/database.js';
import { expectError } from '../helpers/assertions.js';

const livemcp = readFileSync(new URL('../../../shared/eval/livemcpbench/catalog.jsonl', import.meta.url), 'utf8')
  .trim()
  .split('\n')
  .map((line) => JSON.parse(line));

const expectedMigrations = (JSON.parse(readFileSync(new URL('../../migrations/meta/_journal.json', import.meta.url), 'utf8')) as { entries: unknown[] }).entries
  .length;

/** A small MCP tool; `suffix` makes its content (and so its hash) unique to this run. */
function mcpTool(name: string, description = `Does ${name}.`, properties: Record<string, unknown> = { q: { type: 'string' } }) {
  return { name, description, inputSchema: { type: 'object', properties } };
}

/** Asserts the one error shape, with X-Request-Id echoing error.request_id. */

/** Every tool of a catalog, walking the pages. */
async function allTools(app: TestApp, catalog: string, query = ''): Promise<any[]> {
  const tools: any[] = [];
  let cursor: string | null = null;
  do {
    const params = new URLSearchParams(query);
    params.set('limit', '1000');
    if (cursor) params.set('cursor', cursor);
    const page = await app.request('GET', `/v1/catalogs/${catalog}/tools?${params}`);
    expect(page.status, page.text).toBe(200);
    tools.push(...page.body.tools);
    cursor = page.body.next_cursor;
  } while (cursor);
  return tools;
}

async function catalogHashes(app: TestApp, tenant: string, catalog: string): Promise<string[]> {
  const rows = await queryRows<{ hash: string }>(
    app.deps.database.db,
    sql`select ct.hash from catalog_tools ct join catalogs c on c.id = ct.catalog_id
        where c.tenant = ${tenant} and c.name = ${catalog} order by ct.name collate "C"`,
  );
  return rows.map((row) => row.hash);
}

describe('catalog ingestion over REST', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(() => app.close());

  it('stores the 527-tool livemcpbench catalog sent as an MCP tools/list body and reads it back', async () => {
    const name = uniqueName('live');
    const body = {
      tools: livemcp.map((tool) => ({
        name: tool.name,
        description: tool.description,
        inputSchema: tool.input_schema ?? { type: 'object' },
        tags: tool.tags,
        server: tool.server,
      })),
    };
    const put = await app.request('PUT', `/v1/catalogs/${name}`, body);
    expect(put.status).toBe(200);
    expect(put.body.catalog.tool_count).toBe(527);
    const get = await app.request('GET', `/v1/catalogs/${name}`);
    expect(get.body).toMatchObject({ name, tool_count: 527 });
  });

  it('stores the livemcpbench catalog sent as OpenAI Chat tools as the same 527 documents as MCP', async () => {
    const asMcp = uniqueName('live-mcp');
    const asOpenai = uniqueName('live-openai');
    const mcp = livemcp.map((tool) => ({
      name: tool.name,
      description: tool.description,
      inputSchema: tool.input_schema,
      tags: tool.tags,
      server: tool.server,
    }));
    const openai = livemcp.map((tool) => ({
      type: 'function',
      function: { name: tool.name, description: tool.description, parameters: tool.input_schema },
      tags: tool.tags,
      server: tool.server,
    }));
    expect((await app.request('PUT', `/v1/catalogs/${asMcp}`, { tools: mcp })).status).toBe(200);
    const put = await app.request('PUT', `/v1/catalogs/${asOpenai}`, openai);
    expect(put.status, put.text).toBe(200);
    expect(put.body.catalog).toMatchObject({ name: asOpenai, tool_count: 527 });
    expect(put.body.tools_written).toBe(527);
    // Same content in another shape: no new documents, one shared row per tool.
    expect(put.body.new_documents).toBe(0);
    const openaiHashes = await catalogHashes(app, 'default', asOpenai);
    expect(openaiHashes).toHaveLength(527);
    expect(openaiHashes).toEqual(await catalogHashes(app, 'default', asMcp));

    const tools = await allTools(app, asOpenai, 'detail=full');
    expect(tools.map((tool) => tool.name).sort()).toEqual(livemcp.map((tool) => tool.name).sort());
    const sent = new Map(openai.map((tool) => [tool.function.name, tool]));
    for (const tool of tools) expect(tool.definition).toEqual(sent.get(tool.name));
  });

  it('replaces a catalog atomically: one malformed tool rejects the whole PUT and the old catalog stays', async () => {
    const name = uniqueName('atomic');
    const original = [mcpTool('alpha'), mcpTool('beta'), mcpTool('gamma')];
    expect((await app.request('PUT', `/v1/catalogs/${name}`, { tools: original })).status).toBe(200);
    const before = await app.request('GET', `/v1/catalogs/${name}`);
    const toolsBefore = await allTools(app, name, 'detail=full');

    const replacement = [mcpTool('delta'), mcpTool('epsilon'), { name: 'broken', inputSchema: 'not a schema' }, mcpTool('zeta')];
    const put = await app.request('PUT', `/v1/catalogs/${name}`, { tools: replacement });
    const error = expectError(put, 400, 'invalid_tool');
    expect(error.message).toMatch(/^tools\[2\] \("broken"\): /);
    expect(error.details).toEqual([expect.objectContaining({ index: 2, name: 'broken' })]);

    const after = await app.request('GET', `/v1/catalogs/${name}`);
    expect(after.body).toEqual(before.body);
    expect(after.body.tool_count).toBe(3);
    expect(await allTools(app, name, 'detail=full')).toEqual(toolsBefore);
    expect(toolsBefore.map((tool) => tool.name)).toEqual(['alpha', 'beta', 'gamma']);
  });

  it('rejects a NUL character in a description with 400, not a database error, and keeps the old catalog', async () => {
    const name = uniqueName('nul');
    await app.request('PUT', `/v1/catalogs/${name}`, [mcpTool('kept')]);
    const put = await app.request('PUT', `/v1/catalogs/${name}`, [mcpTool('new'), mcpTool('nul', 'a\u0000b')]);
    // Caught before any tool is parsed (every body is checked for NUL, depth and lone surrogates), naming where.
    expect(expectError(put, 400, 'validation_failed').message).toMatch(/\[1\]\.description: contains a NUL/);
    expect((await allTools(app, name)).map((tool) => tool.name)).toEqual(['kept']);
  });

  it('names every bad tool by index when several are malformed', async () => {
    const put = await app.request('PUT', `/v1/catalogs/${uniqueName('bad')}`, {
      tools: [mcpTool('ok'), 42, { type: 'web_search' }, { name: '', inputSchema: {} }],
    });
    const error = expectError(put, 400, 'invalid_tool');
    expect(error.message).toMatch(/^tools\[1\]: .*\(and 2 more problems\)$/);
    expect(error.details.map((problem: { index: number }) => problem.index)).toEqual([1, 2, 3]);
  });

  it('PUT replaces the whole catalog: tools missing from the new body are gone', async () => {
    const name = uniqueName('replace');
    await app.request('PUT', `/v1/catalogs/${name}`, { tools: [mcpTool('keep'), mcpTool('drop'), mcpTool('change')] });
    const put = await app.request('PUT', `/v1/catalogs/${name}`, {
      tools: [mcpTool('keep'), mcpTool('change', 'Changed description.'), mcpTool('added')],
    });
    expect(put.status).toBe(200);
    expect(put.body.catalog.tool_count).toBe(3);
    expect(put.body.catalog.revision).toBe(2);
    const tools = await allTools(app, name);
    expect(tools.map((tool) => tool.name)).toEqual(['added', 'change', 'keep']);
    expect(tools.find((tool) => tool.name === 'change').description).toBe('Changed description.');
    expectError(await app.request('GET', `/v1/catalogs/${name}/tools/drop`), 404, 'not_found');
  });

  it('PUT with an empty list empties the catalog but keeps it', async () => {
    const name = uniqueName('empty');
    await app.request('PUT', `/v1/catalogs/${name}`, [mcpTool('one')]);
    const put = await app.request('PUT', `/v1/catalogs/${name}`, { tools: [] });
    expect(put.status).toBe(200);
    expect(put.body.catalog.tool_count).toBe(0);
    expect(await allTools(app, name)).toEqual([]);
  });

  it('POST upserts: creates the catalog when missing, adds new tools and replaces same-named ones', async () => {
    const name = uniqueName('upsert');
    expectError(await app.request('GET', `/v1/catalogs/${name}`), 404, 'not_found');
    const created = await app.request('POST', `/v1/catalogs/${name}/tools`, { tools: [mcpTool('first'), mcpTool('second')] });
    expect(created.status, created.text).toBe(200);
    expect(created.body.catalog).toMatchObject({ name, tool_count: 2, revision: 1 });

    const upserted = await app.request('POST', `/v1/catalogs/${name}/tools`, {
      jsonrpc: '2.0',
      id: 7,
      result: { tools: [mcpTool('second', 'Second, replaced.'), { type: 'function', function: { name: 'third' } }] },
    });
    expect(upserted.status, upserted.text).toBe(200);
    expect(upserted.body.catalog).toMatchObject({ tool_count: 3, revision: 2 });
    expect(upserted.body.tools_written).toBe(2);

    const tools = await allTools(app, name, 'detail=full');
    expect(tools.map((tool) => [tool.name, tool.description])).toEqual([
      ['first', 'Does first.'],
      ['second', 'Second, replaced.'],
      ['third', ''],
    ]);
    expect(tools[1].definition).toEqual(mcpTool('second', 'Second, replaced.'));
  });

  it('POST with a malformed tool writes nothing', async () => {
    const name = uniqueName('upsert-bad');
    await app.request('PUT', `/v1/catalogs/${name}`, [mcpTool('one')]);
    const post = await app.request('POST', `/v1/catalogs/${name}/tools`, [mcpTool('two'), { name: 'three', description: 3 }]);
    expect(expectError(post, 400, 'invalid_tool').message).toMatch(/^tools\[1\] \("three"\)/);
    expect((await allTools(app, name)).map((tool) => tool.name)).toEqual(['one']);
  });

  it('re-pushing an identical catalog changes neither revision nor updated_at; a real change does', async () => {
    const name = uniqueName('same');
    const first = await app.request('PUT', `/v1/catalogs/${name}`, [mcpTool('a'), mcpTool('b')]);
    const again = await app.request('PUT', `/v1/catalogs/${name}`, [mcpTool('b'), mcpTool('a')]);
    expect(again.body.catalog).toMatchObject({ revision: 1, updated_at: first.body.catalog.updated_at });
    const upsertSame = await app.request('POST', `/v1/catalogs/${name}/tools`, [mcpTool('a')]);
    expect(upsertSame.body.catalog.revision).toBe(1);
    const changed = await app.request('PUT', `/v1/catalogs/${name}`, [mcpTool('a', 'A new description.'), mcpTool('b')]);
    expect(changed.body.catalog.revision).toBe(2);
  });

  it('DELETE removes one tool (204, then 404) and the catalog count drops', async () => {
    const name = uniqueName('del-tool');
    await app.request('PUT', `/v1/catalogs/${name}`, [mcpTool('a'), mcpTool('b'), mcpTool('c')]);
    const deleted = await app.request('DELETE', `/v1/catalogs/${name}/tools/b`);
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe('');
    expectError(await app.request('GET', `/v1/catalogs/${name}/tools/b`), 404, 'not_found');
    expectError(await app.request('DELETE', `/v1/catalogs/${name}/tools/b`), 404, 'not_found');
    const catalog = await app.request('GET', `/v1/catalogs/${name}`);
    expect(catalog.body).toMatchObject({ tool_count: 2, revision: 2 });
    expect((await allTools(app, name)).map((tool) => tool.name)).toEqual(['a', 'c']);
  });

  it('DELETE removes a catalog (204, then 404 for it and its tools)', async () => {
    const name = uniqueName('del-cat');
    await app.request('PUT', `/v1/catalogs/${name}`, [mcpTool('a')]);
    const deleted = await app.request('DELETE', `/v1/catalogs/${name}`);
    expect(deleted.status).toBe(204);
    expectError(await app.request('GET', `/v1/catalogs/${name}`), 404, 'not_found');
    expectError(await app.request('GET', `/v1/catalogs/${name}/tools`), 404, 'not_found');
    expectError(await app.request('GET', `/v1/catalogs/${name}/tools/a`), 404, 'not_found');
    expectError(await app.request('DELETE', `/v1/catalogs/${name}`), 404, 'not_found');
    const list = await app.request('GET', '/v1/catalogs');
    expect(list.body.catalogs.map((catalog: { name: string }) => catalog.name)).not.toContain(name);
  });

  it('answers 404 in the error shape for an unknown catalog, tool or route', async () => {
    const missing = uniqueName('missing');
    const existing = uniqueName('exists');
    await app.request('PUT', `/v1/catalogs/${existing}`, [mcpTool('a')]);
    expect(expectError(await app.request('GET', `/v1/catalogs/${missing}`), 404, 'not_found').message).toContain(missing);
    expectError(await app.request('GET', `/v1/catalogs/${missing}/tools`), 404, 'not_found');
    expectError(await app.request('DELETE', `/v1/catalogs/${missing}/tools/a`), 404, 'not_found');
    expect(expectError(await app.request('GET', `/v1/catalogs/${existing}/tools/nope`), 404, 'not_found').message).toContain('nope');
    expect(expectError(await app.request('GET', '/v1/nothing-here'), 404, 'not_found').message).toBe('no route for GET /v1/nothing-here');
    expectError(await app.request('GET', '/nothing'), 404, 'not_found');
    expectError(await app.request('PATCH', `/v1/catalogs/${existing}/tools`, {}), 404, 'not_found');
    expectError(await app.request('PATCH', `/v1/catalogs/${missing}`, { code_mode: false }), 404, 'not_found');
  });

  it('keeps a sane caller X-Request-Id and replaces a bad one', async () => {
    const kept = await app.request('GET', `/v1/catalogs/${uniqueName('rid')}`, undefined, { 'x-request-id': 'gw-123:abc' });
    expect(expectError(kept, 404, 'not_found')).toMatchObject({ request_id: 'gw-123:abc' });
    const replaced = await app.request('GET', `/v1/catalogs/${uniqueName('rid')}`, undefined, { 'x-request-id': 'bad id <script>' });
    expect(expectError(replaced, 404, 'not_found').request_id).not.toBe('bad id <script>');
  });

  it('pages with limit and cursor through every tool exactly once, in name order', async () => {
    const name = uniqueName('pages');
    const names = ['kilo', 'Alpha', 'echo', 'bravo', 'Zulu', 'delta', 'charlie'];
    await app.request(
      'PUT',
      `/v1/catalogs/${name}`,
      names.map((tool) => mcpTool(tool)),
    );
    const expected = [...names].sort();
    for (const limit of [1, 2, 3, 7, 8]) {
      const seen: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const page: TestResponse = await app.request(
          'GET',
          `/v1/catalogs/${name}/tools?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
        );
        expect(page.status, page.text).toBe(200);
        expect(page.body.tools.length).toBeLessThanOrEqual(limit);
        seen.push(...page.body.tools.map((tool: { name: string }) => tool.name));
        cursor = page.body.next_cursor;
        pages += 1;
      } while (cursor);
      expect(seen, `limit ${limit}`).toEqual(expected);
      expect(pages).toBe(Math.ceil(names.length / limit));
    }
  });

  it('rejects a bad cursor or limit with 400', async () => {
    const name = uniqueName('cursor');
    await app.request('PUT', `/v1/catalogs/${name}`, [mcpTool('a'), mcpTool('b')]);
    for (const query of ['cursor=!!!', 'cursor=', 'cursor=YQ%3D%3D', 'limit=0', 'limit=1001', 'limit=abc', 'detail=verbose']) {
      expectError(await app.request('GET', `/v1/catalogs/${name}/tools?${query}`), 400, 'validation_failed');
    }
  });

  it('answers detail=brief with the first sentence and parameter names, detail=full with the definition as sent', async () => {
    const name = uniqueName('detail');
    // Keys deliberately out of alphabetical order, at every depth.
    const sentText =
      '{"name":"lookup","inputSchema":{"type":"object","properties":{"zip":{"type":"string"},"city":{"type":"string"}},"required":["zip"]},' +
      '"description":"Looks up a place. Returns coordinates.","tags":["geo"],"server":"maps","annotations":{"readOnlyHint":true}}';
    const put = await app.request('PUT', `/v1/catalogs/${name}`, `{"tools":[${sentText}]}`, { 'content-type': 'application/json' });
    expect(put.status, put.text).toBe(200);

    const brief = await app.request('GET', `/v1/catalogs/${name}/tools/lookup`);
    expect(brief.body).toEqual({
      name: 'lookup',
      tags: ['geo'],
      server: 'maps',
      description: 'Looks up a place.',
      parameters: ['zip', 'city'],
    });
    const briefList = await app.request('GET', `/v1/catalogs/${name}/tools?detail=brief`);
    expect(briefList.body.tools).toEqual([brief.body]);

    const full = await app.request('GET', `/v1/catalogs/${name}/tools/lookup?detail=full`);
    expect(full.body).toMatchObject({ name: 'lookup', description: 'Looks up a place. Returns coordinates.', tags: ['geo'], server: 'maps' });
    expect(full.body.parameters).toBeUndefined();
    // Byte for byte, so key order counts.
    expect(JSON.stringify(full.body.definition)).toBe(sentText);
    const fullList = await app.request('GET', `/v1/catalogs/${name}/tools?detail=full`);
    expect(JSON.stringify(fullList.body.tools[0].definition)).toBe(sentText);
  });

  it('rejects invalid JSON with 400 invalid_json', async () => {
    const put = await app.request('PUT', `/v1/catalogs/${uniqueName('json')}`, '{"tools": [', { 'content-type': 'application/json' });
    expectError(put, 400, 'invalid_json');
  });

  it('rejects a body that is not JSON with 415', async () => {
    const name = uniqueName('media');
    const put = await app.request('PUT', `/v1/catalogs/${name}`, 'tools=a', { 'content-type': 'application/x-www-form-urlencoded' });
    expectError(put, 415, 'unsupported_media_type');
    const text = await app.request('POST', `/v1/catalogs/${name}/tools`, JSON.stringify([mcpTool('a')]), { 'content-type': 'text/plain' });
    expectError(text, 415, 'unsupported_media_type');
    expectError(await app.request('GET', `/v1/catalogs/${name}`), 404, 'not_found');
  });

  it('answers a DELETE as without its body: one not JSON, not UTF-8 or malformed is never read', async () => {
    const name = uniqueName('delete-body');
    expect((await app.request('PUT', `/v1/catalogs/${name}`, { tools: [mcpTool('a'), mcpTool('b')] })).status).toBe(200);
    const tool = await app.request('DELETE', `/v1/catalogs/${name}/tools/a`, '{"name": "a', { 'content-type': 'application/json; charset=latin1' });
    expect(tool.status).toBe(204);
    expectError(await app.request('GET', `/v1/catalogs/${name}/tools/a`), 404, 'not_found');
    expect((await app.request('DELETE', `/v1/catalogs/${name}`, 'x'.repeat(2048), { 'content-type': 'text/plain' })).status).toBe(204);
    expectError(await app.request('GET', `/v1/catalogs/${name}`), 404, 'not_found');
    // A body-taking method still refuses a declared type other than JSON, even with an empty body.
    expectError(await app.request('POST', `/v1/catalogs/${name}/search`, '', { 'content-type': 'text/plain' }), 415, 'unsupported_media_type');
  });

  it('rejects a body without a tool list with 400', async () => {
    const json = { 'content-type': 'application/json' };
    for (const body of ['{}', '{"tools":"a"}', '{"result":{}}', '']) {
      const put = await app.request('PUT', `/v1/catalogs/${uniqueName('nolist')}`, body, json);
      expect(expectError(put, 400, 'validation_failed').message).toMatch(/expected \{"tools": \[\.\.\.\]\}/);
    }
    // express.json is strict: a bare JSON scalar is not a request body.
    for (const body of ['null', '"tools"']) {
      expectError(await app.request('PUT', `/v1/catalogs/${uniqueName('nolist')}`, body, json), 400, 'invalid_json');
    }
  });

  it('rejects a bad catalog name with 400', async () => {
    for (const name of ['bad%20name', 'x'.repeat(65), 'semi%3Bcolon', '%C3%A9t%C3%A9']) {
      const error = expectError(await app.request('PUT', `/v1/catalogs/${name}`, [mcpTool('a')]), 400, 'validation_failed');
      expect(error.message).toMatch(/catalog/);
    }
    const longest = `${uniqueName('max')}.`.padEnd(64, 'x');
    expect(longest).toHaveLength(64);
    expect((await app.request('PUT', `/v1/catalogs/${longest}`, [mcpTool('a')])).status).toBe(200);
  });

  it('rejects duplicate tool names with 400 naming the index', async () => {
    const name = uniqueName('dupes');
    const put = await app.request('PUT', `/v1/catalogs/${name}`, [
      mcpTool('same'),
      mcpTool('other'),
      { name: 'same', description: 'Same name, Anthropic shape.', input_schema: {} },
    ]);
    const error = expectError(put, 400, 'invalid_tool');
    expect(error.message).toBe('tools[2] ("same"): duplicate tool name "same" (first at index 0)');
    expectError(await app.request('GET', `/v1/catalogs/${name}`), 404, 'not_found');
  });

  it('stores the same tool in two catalogs, in two shapes, as one tool_documents row', async () => {
    const a = uniqueName('share-a');
    const b = uniqueName('share-b');
    const toolName = uniqueName('shared_tool');
    const mcp = mcpTool(toolName, 'A tool shared by two catalogs.', { id: { type: 'integer' }, verbose: { type: 'boolean' } });
    const anthropic = {
      input_schema: { properties: { verbose: { type: 'boolean' }, id: { type: 'integer' } }, type: 'object' },
      description: mcp.description,
      name: toolName,
    };
    const first = await app.request('PUT', `/v1/catalogs/${a}`, [mcp]);
    expect(first.body.new_documents).toBe(1);
    const second = await app.request('PUT', `/v1/catalogs/${b}`, [anthropic]);
    expect(second.body.new_documents).toBe(0);

    const hash = contentHash(normalizeTool(mcp));
    expect(await catalogHashes(app, 'default', a)).toEqual([hash]);
    expect(await catalogHashes(app, 'default', b)).toEqual([hash]);
    const documents = await queryRows<{ n: number }>(app.deps.database.db, sql`select count(*)::int as n from tool_documents where name = ${toolName}`);
    expect(documents[0]?.n).toBe(1);
    // Each catalog still returns its own definition as sent.
    expect((await app.request('GET', `/v1/catalogs/${b}/tools/${toolName}?detail=full`)).body.definition).toEqual(anthropic);
    expect((await app.request('GET', `/v1/catalogs/${a}/tools/${toolName}?detail=full`)).body.definition).toEqual(mcp);
  });

  it('lists the tenant catalogs', async () => {
    const name = uniqueName('listed');
    await app.request('PUT', `/v1/catalogs/${name}`, [mcpTool('a'), mcpTool('b')]);
    const list = await app.request('GET', '/v1/catalogs');
    expect(list.status).toBe(200);
    expect(list.body.catalogs).toContainEqual(expect.objectContaining({ name, tool_count: 2, revision: 1 }));
  });

  it('answers /healthz and /readyz with the database ready and every migration applied', async () => {
    const health = await app.request('GET', '/healthz');
    expect(health.status).toBe(200);
    expect(health.body).toEqual({ status: 'ok' });
    const ready = await app.request('GET', '/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body.status).toBe('ready');
    expect(ready.body.components.database).toMatchObject({
      status: 'ok',
      kind: app.deps.database.kind,
      migrations: { applied: expectedMigrations, expected: expectedMigrations },
    });
    expect(expectedMigrations).toBeGreaterThanOrEqual(3);
  });
});

describe('request body limit', () => {
  let small: TestApp;
  beforeAll(async () => {
    small = await startTestApp({ BODY_LIMIT: '2kb' });
  });
  afterAll(() => small.close());

  it('answers 413 in the error shape when the body exceeds BODY_LIMIT, and accepts one under it', async () => {
    const name = uniqueName('limit');
    const big = [mcpTool('big', 'x'.repeat(3000))];
    const error = expectError(await small.request('PUT', `/v1/catalogs/${name}`, big), 413, 'payload_too_large');
    expect(error.message).toMatch(/2048 bytes/);
    expectError(await small.request('GET', `/v1/catalogs/${name}`), 404, 'not_found');
    expect((await small.request('PUT', `/v1/catalogs/${name}`, [mcpTool('small')])).status).toBe(200);
  });
});

describe('tenants and API keys', () => {
  let secured: TestApp;
  const t1 = { authorization: 'Bearer k1' };
  const t2 = { 'x-api-key': 'k2' };
  beforeAll(async () => {
    secured = await startTestApp({ API_KEYS: 'k1:t1,k2:t2' });
  });
  afterAll(() => secured.close());

  it('refuses a missing or wrong key with 401 in the error shape', async () => {
    const name = uniqueName('auth');
    expect(expectError(await secured.request('GET', '/v1/catalogs'), 401, 'unauthorized').message).toMatch(/missing API key/);
    expectError(await secured.request('PUT', `/v1/catalogs/${name}`, [mcpTool('a')]), 401, 'unauthorized');
    expect(expectError(await secured.request('GET', '/v1/catalogs', undefined, { authorization: 'Bearer nope' }), 401, 'unauthorized').message).toMatch(
      /invalid API key/,
    );
    expectError(await secured.request('GET', '/v1/catalogs', undefined, { 'x-api-key': 'k3' }), 401, 'unauthorized');
    expectError(await secured.request('GET', '/v1/catalogs', undefined, { authorization: 'Basic k1' }), 401, 'unauthorized');
    // An unknown route under /v1 is still behind the key.
    expectError(await secured.request('GET', '/v1/nothing'), 401, 'unauthorized');
  });

  it('accepts both Authorization: Bearer and X-API-Key', async () => {
    expect((await secured.request('GET', '/v1/catalogs', undefined, t1)).status).toBe(200);
    expect((await secured.request('GET', '/v1/catalogs', undefined, t2)).status).toBe(200);
    expect((await secured.request('GET', '/v1/catalogs', undefined, { 'x-api-key': 'k1' })).status).toBe(200);
  });

  it('keeps each tenant to its own catalogs, even under the same name', async () => {
    const name = uniqueName('tenant');
    const put = await secured.request('PUT', `/v1/catalogs/${name}`, [mcpTool('t2_only')], t2);
    expect(put.status, put.text).toBe(200);

    expectError(await secured.request('GET', `/v1/catalogs/${name}`, undefined, t1), 404, 'not_found');
    expectError(await secured.request('GET', `/v1/catalogs/${name}/tools`, undefined, t1), 404, 'not_found');
    expectError(await secured.request('GET', `/v1/catalogs/${name}/tools/t2_only`, undefined, t1), 404, 'not_found');
    expectError(await secured.request('DELETE', `/v1/catalogs/${name}/tools/t2_only`, undefined, t1), 404, 'not_found');
    expectError(await secured.request('DELETE', `/v1/catalogs/${name}`, undefined, t1), 404, 'not_found');
    const list = await secured.request('GET', '/v1/catalogs', undefined, t1);
    expect(list.body.catalogs.map((catalog: { name: string }) => catalog.name)).not.toContain(name);

    // t1 makes its own catalog of that name; t2's is untouched.
    expect((await secured.request('PUT', `/v1/catalogs/${name}`, [mcpTool('t1_a'), mcpTool('t1_b')], t1)).status).toBe(200);
    expect((await secured.request('GET', `/v1/catalogs/${name}`, undefined, t1)).body.tool_count).toBe(2);
    const theirs = await secured.request('GET', `/v1/catalogs/${name}/tools`, undefined, t2);
    expect(theirs.body.tools.map((tool: { name: string }) => tool.name)).toEqual(['t2_only']);
    expect(await catalogHashes(secured, 't2', name)).toHaveLength(1);
    expect(await catalogHashes(secured, 't1', name)).toHaveLength(2);
    expect(await catalogHashes(secured, 'default', name)).toHaveLength(0);
  });

  it('keeps /healthz and /readyz open without a key', async () => {
    expect((await secured.request('GET', '/healthz')).status).toBe(200);
    const ready = await secured.request('GET', '/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body.status).toBe('ready');
  });
});
