/**
 * toolsift over MCP with the official SDK clients: v2 (`@modelcontextprotocol/client`, the
 * 2026-07-28 era) and v1 (`@modelcontextprotocol/sdk`, a legacy client that opens with
 * `initialize`), against the real app on a real port, through API keys and tenants.
 */
import { Client } from '@modelcontextprotocol/client';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, untilEmbedded, type TestApp } from '../helpers/app.js';
import { uniqueName } from '../helpers/database.js';

const files = [
  {
    name: 'read_file',
    description: 'Read the complete contents of a file from disk. Fails if it does not exist.',
    inputSchema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
    server: 'filesystem',
  },
  {
    name: 'write_file',
    description: 'Create a new file or overwrite an existing one.',
    inputSchema: { type: 'object', properties: { path: { type: 'string' }, content: { type: 'string' } } },
    server: 'filesystem',
  },
  {
    name: 'list_directory',
    description: 'List the files and folders in a directory.',
    inputSchema: { type: 'object', properties: { path: { type: 'string' } } },
    server: 'filesystem',
  },
];
const web = [
  {
    name: 'web_search',
    description: 'Search the web for pages about a topic.',
    inputSchema: { type: 'object', properties: { query: { type: 'string' } } },
    server: 'search',
    tags: ['web'],
  },
  {
    name: 'fetch_url',
    description: 'Download a web page and return it as markdown.',
    inputSchema: { type: 'object', properties: { url: { type: 'string' } } },
    server: 'fetch',
    tags: ['web'],
  },
  {
    name: 'read_file',
    description: 'Read a file stored in the cloud bucket.',
    inputSchema: { type: 'object', properties: { key: { type: 'string' } } },
    server: 'bucket',
  },
];

async function connect(url: string, key: string): Promise<Client> {
  const client = new Client({ name: 'toolsift-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${key}` } } }));
  return client;
}

describe('the MCP endpoint', () => {
  let app: TestApp;
  const filesCatalog = uniqueName('mcp-files');
  const webCatalog = uniqueName('mcp-web');
  const otherCatalog = uniqueName('mcp-other');
  let client: Client;

  beforeAll(async () => {
    // Tenants of their own: a PostgreSQL test database outlives runs, and /mcp spans every catalog of a tenant.
    app = await startTestApp({ API_KEYS: `k1:${uniqueName('mcp-t1')},k2:${uniqueName('mcp-t2')}`, EMBED_MODEL: 'use-lite' });
    for (const [catalog, tools, key] of [
      [filesCatalog, files, 'k1'],
      [webCatalog, web, 'k1'],
      [otherCatalog, [{ name: 'secret_tool', description: 'Read secret files of tenant two.', server: 'secrets' }], 'k2'],
    ] as const) {
      expect((await app.request('PUT', `/v1/catalogs/${catalog}`, { tools }, { authorization: `Bearer ${key}` })).status).toBe(200);
    }
    // Until every vector is stored the dense list holds only some tools, and ranks them above the rest.
    for (const catalog of [filesCatalog, webCatalog]) await untilEmbedded(app, catalog, { authorization: 'Bearer k1' });
    client = await connect(`${app.url}/mcp`, 'k1');
  }, 120_000);
  afterAll(async () => {
    await client?.close();
    await app?.close();
  });

  it('lists exactly the four meta-tools, with input and output schemas, and teaches the workflow', async () => {
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual(['search_tools', 'get_tool_details', 'list_tools', 'call_tool']);
    for (const tool of tools) expect(tool.inputSchema.type).toBe('object');
    for (const tool of tools.slice(0, 3)) expect(tool.outputSchema?.type).toBe('object');
    expect(client.getInstructions()).toMatch(/search_tools.*get_tool_details.*call_tool/s);
  });

  it("search_tools ranks across the tenant's catalogs, in brief, with structured content and a text block", async () => {
    const result = await client.callTool({ name: 'search_tools', arguments: { query: 'read the contents of a file on disk', limit: 3 } });
    expect(result.isError).toBeFalsy();
    const answer = result.structuredContent as { results: Array<{ name: string; catalog: string; server: string; parameters: string[] }>; hint?: string };
    expect(answer.results[0]).toMatchObject({ name: `${filesCatalog}/read_file`, catalog: filesCatalog, server: 'filesystem', parameters: ['path'] });
    expect(answer.results.length).toBeLessThanOrEqual(3);
    expect(answer.hint).toBeUndefined();
    expect((result.content as Array<{ text: string }>)[0]!.text).toContain(`1. ${filesCatalog}/read_file [filesystem] (path)`);
    // Another tenant's tools never appear.
    const secret = await client.callTool({ name: 'search_tools', arguments: { query: 'secret files of tenant two', limit: 10 } });
    expect(JSON.stringify(secret.structuredContent)).not.toContain('secret_tool');
  });

  it('says so when nothing matches well, filters by server and tag', async () => {
    const vague = await client.callTool({ name: 'search_tools', arguments: { query: 'zzqx vvkj' } });
    expect((vague.structuredContent as { hint?: string }).hint).toBeDefined();
    const byServer = await client.callTool({ name: 'search_tools', arguments: { query: 'read a file', server: 'bucket' } });
    expect((byServer.structuredContent as { results: Array<{ name: string }> }).results.map((tool) => tool.name)).toEqual([`${webCatalog}/read_file`]);
    const byTag = await client.callTool({ name: 'search_tools', arguments: { query: 'web page', tags: ['web'] } });
    expect((byTag.structuredContent as { results: Array<{ catalog: string }> }).results.every((tool) => tool.catalog === webCatalog)).toBe(true);
  });

  it('get_tool_details reports each name: full schemas, brief summaries, ambiguous and unknown names', async () => {
    const result = await client.callTool({ name: 'get_tool_details', arguments: { names: [`${filesCatalog}/read_file`, 'web_search', 'read_file', 'nope'] } });
    expect(result.isError).toBeFalsy();
    const [full, bare, ambiguous, unknown] = (result.structuredContent as { tools: Array<Record<string, unknown>> }).tools;
    expect(full).toMatchObject({ found: true, catalog: filesCatalog, inputSchema: files[0]!.inputSchema });
    expect(bare).toMatchObject({ found: true, catalog: webCatalog, server: 'search' });
    expect(ambiguous).toMatchObject({ found: false });
    expect(String(ambiguous!.error)).toContain('several catalogs');
    expect(unknown).toMatchObject({ found: false });
    const brief = await client.callTool({ name: 'get_tool_details', arguments: { names: ['web_search'], detail: 'brief' } });
    expect((brief.structuredContent as { tools: Array<Record<string, unknown>> }).tools[0]).toMatchObject({
      parameters: ['query'],
      description: 'Search the web for pages about a topic.',
    });
  });

  it('list_tools pages names, and /mcp/{catalog} scopes everything to one catalog with bare names', async () => {
    const all = await client.callTool({ name: 'list_tools', arguments: {} });
    const names = (all.structuredContent as { names: string[] }).names;
    expect(names).toEqual(expect.arrayContaining([`${filesCatalog}/read_file`, `${webCatalog}/web_search`]));
    expect(names).toHaveLength(6);
    const scoped = await connect(`${app.url}/mcp/${filesCatalog}`, 'k1');
    try {
      const list = await scoped.callTool({ name: 'list_tools', arguments: {} });
      expect((list.structuredContent as { names: string[] }).names).toEqual(['list_directory', 'read_file', 'write_file']);
      const search = await scoped.callTool({ name: 'search_tools', arguments: { query: 'search the web' } });
      expect((search.structuredContent as { results: Array<{ catalog: string }> }).results.every((tool) => tool.catalog === filesCatalog)).toBe(true);
      const bad = await scoped.callTool({ name: 'list_tools', arguments: { cursor: 'not-a-cursor' } });
      expect(bad.isError).toBe(true);
    } finally {
      await scoped.close();
    }
  });

  it('call_tool without an upstream is a clear isError result, not a protocol error', async () => {
    const result = await client.callTool({ name: 'call_tool', arguments: { name: `${filesCatalog}/read_file`, arguments: { path: '/etc/hostname' } } });
    expect(result.isError).toBe(true);
    expect((result.content as Array<{ text: string }>)[0]!.text).toContain('no upstream MCP server');
    const unknown = await client.callTool({ name: 'call_tool', arguments: { name: 'nope' } });
    expect(unknown.isError).toBe(true);
  });

  it('serves the catalog index and tool definitions as resources, and the two prompts', async () => {
    const templates = await client.listResourceTemplates();
    expect(templates.resourceTemplates.map((template) => template.uriTemplate)).toEqual(
      expect.arrayContaining(['toolsift://catalogs/{catalog}/index', 'toolsift://catalogs/{catalog}/tools/{name}']),
    );
    const index = await client.readResource({ uri: `toolsift://catalogs/${filesCatalog}/index` });
    expect((index.contents[0] as { text: string }).text.split('\n')).toEqual([
      'list_directory: List the files and folders in a directory.',
      'read_file: Read the complete contents of a file from disk.',
      'write_file: Create a new file or overwrite an existing one.',
    ]);
    const definition = await client.readResource({ uri: `toolsift://catalogs/${filesCatalog}/tools/read_file` });
    expect(JSON.parse((definition.contents[0] as { text: string }).text)).toMatchObject({ name: 'read_file', inputSchema: files[0]!.inputSchema });
    // Another tenant's catalog, an unknown tool, a malformed escape: the client's error (-32602), resource-not-found with the URI.
    for (const [uri, message] of [
      [`toolsift://catalogs/${otherCatalog}/index`, `unknown catalog "${otherCatalog}"`],
      [`toolsift://catalogs/${filesCatalog}/tools/nope`, 'unknown tool "nope"'],
      [`toolsift://catalogs/${otherCatalog}/tools/secret_tool`, `unknown catalog "${otherCatalog}"`],
    ]) {
      await expect(client.readResource({ uri: uri! }), uri).rejects.toMatchObject({ code: -32602, data: { uri }, message: expect.stringContaining(message!) });
    }
    await expect(client.readResource({ uri: `toolsift://catalogs/${filesCatalog}/tools/%ZZ` })).rejects.toMatchObject({
      code: -32602,
      message: expect.stringContaining('malformed percent-escape'),
    });
    const prompts = await client.listPrompts();
    expect(prompts.prompts.map((prompt) => prompt.name)).toEqual(['discover', 'find_tool']);
    const prompt = await client.getPrompt({ name: 'find_tool', arguments: { task: 'rename a file' } });
    expect(JSON.stringify(prompt.messages)).toContain('rename a file');
  });

  it('serves a legacy client that opens with initialize (SDK v1), on the same endpoint', async () => {
    const legacy = new LegacyClient({ name: 'legacy-test', version: '1.0.0' });
    await legacy.connect(new LegacyTransport(new URL(`${app.url}/mcp`), { requestInit: { headers: { 'x-api-key': 'k1' } } }));
    try {
      const { tools } = await legacy.listTools();
      expect(tools.map((tool) => tool.name)).toEqual(['search_tools', 'get_tool_details', 'list_tools', 'call_tool']);
      const result = await legacy.callTool({ name: 'search_tools', arguments: { query: 'download a web page' } });
      expect((result.structuredContent as { results: Array<{ name: string }> }).results[0]!.name).toBe(`${webCatalog}/fetch_url`);
    } finally {
      await legacy.close();
    }
  });

  it("rejects missing keys (401), other tenants' catalogs (404) and foreign browser origins (403)", async () => {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} });
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    expect((await fetch(`${app.url}/mcp`, { method: 'POST', headers, body })).status).toBe(401);
    expect((await fetch(`${app.url}/mcp/${otherCatalog}`, { method: 'POST', headers: { ...headers, authorization: 'Bearer k1' }, body })).status).toBe(404);
    const foreign = await fetch(`${app.url}/mcp`, {
      method: 'POST',
      headers: { ...headers, authorization: 'Bearer k1', origin: 'https://evil.example' },
      body,
    });
    expect(foreign.status).toBe(403);
    expect((await foreign.json()).error.code).toBe('forbidden');
    const local = await fetch(`${app.url}/mcp`, { method: 'POST', headers: { ...headers, authorization: 'Bearer k1', origin: 'http://localhost:3000' }, body });
    expect(local.status).not.toBe(403);
  });

  it("answers a message not declared JSON, empty or not, with the documented 415 (not the transport's own shape)", async () => {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} });
    const base = { accept: 'application/json, text/event-stream', authorization: 'Bearer k1' };
    for (const [type, sent] of [
      ['text/plain', body],
      ['text/plain', ''],
      ['application/x-www-form-urlencoded', ''],
      [undefined, ''],
    ] as const) {
      for (const path of ['/mcp', `/mcp/${filesCatalog}`]) {
        // Through the helper: the answer is checked against openapi.yaml (error shape with request_id).
        const response = type ? await app.request('POST', path, sent, { ...base, 'content-type': type }) : await app.request('POST', path, undefined, base);
        expect(response.status, `${path} ${type}`).toBe(415);
        expect(response.body.error.code).toBe('unsupported_media_type');
        expect(response.body.error.message).toContain(type ?? 'no content type');
      }
    }
  });
});
