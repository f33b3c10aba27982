/**
 * The draft MCP proposals behind MCP_DRAFTS=on (src/mcp/drafts.ts), spoken to as a raw JSON-RPC
 * client would: plain POSTs to /mcp, legacy (2025-11-25, no initialize needed on the stateless
 * endpoint) and 2026-07-28 (the per-request `_meta` envelope and standard headers). Answers are
 * checked against the official SDK's runtime schemas (@modelcontextprotocol/sdk types: Tool,
 * ListToolsResult, CallToolResult) where the draft reuses MCP's types, and against SEP-2636's
 * ToolCatalogEntry transcribed as a JSON Schema where it adds its own.
 */
import { createHash } from 'node:crypto';
import { CallToolResultSchema, ListToolsResultSchema, ToolSchema } from '@modelcontextprotocol/sdk/types.js';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rpcAnswer, startTestApp, type TestApp } from '../helpers/app.js';
import { uniqueName } from '../helpers/database.js';

const files = [
  {
    name: 'read_file',
    title: 'Read a file',
    description: 'Read the complete contents of a file from disk. Fails if it does not exist.',
    inputSchema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
    outputSchema: { type: 'object', properties: { text: { type: 'string' } } },
    annotations: { readOnlyHint: true },
    server: 'filesystem',
    tags: ['files'],
  },
  {
    name: 'write_file',
    description: 'Create a new file or overwrite an existing one.',
    inputSchema: { type: 'object', properties: { path: { type: 'string' }, content: { type: 'string' } } },
    server: 'filesystem',
  },
];
const dev = [
  {
    name: 'git_commit',
    description: 'Record staged changes in the repository with a message.',
    inputSchema: { type: 'object', properties: { message: { type: 'string' } } },
  },
  { name: 'git_status', description: 'Show the working tree status of the repository.', inputSchema: { type: 'object', properties: {} } },
  {
    name: 'web_search',
    description: 'Search the web for pages about a topic.',
    inputSchema: { type: 'object', properties: { query: { type: 'string' } } },
    tags: ['web'],
  },
  {
    name: 'fetch_url',
    description: 'Download a web page and return it as markdown.',
    inputSchema: { type: 'object', properties: { url: { type: 'string' } } },
  },
];
/** More tools than one page (200) holds. */
const many = Array.from({ length: 230 }, (_, i) => ({
  name: `ledger_${String(i).padStart(3, '0')}`,
  description: `Look up ledger entry ${i}.`,
  inputSchema: { type: 'object', properties: {} },
}));

/**
 * SEP-2636's ToolCatalogEntry (revision of 2026-04-23, §2), transcribed: name, title?, summary
 * (SHOULD be under 200 characters), tags?, schemaHash (hex SHA-256), annotations?; no other field
 * ("The server MUST NOT include inputSchema, outputSchema, or any field other than those defined").
 */
const catalogEntrySchema = {
  type: 'object',
  required: ['name', 'summary', 'schemaHash'],
  additionalProperties: false,
  properties: {
    name: { type: 'string', minLength: 1 },
    title: { type: 'string' },
    summary: { type: 'string', maxLength: 200 },
    tags: { type: 'array', items: { type: 'string' } },
    schemaHash: { type: 'string', pattern: '^[0-9a-f]{64}$' },
    annotations: { type: 'object' },
  },
};
const catalogResultSchema = {
  type: 'object',
  required: ['tools'],
  properties: { tools: { type: 'array', items: catalogEntrySchema }, nextCursor: { type: 'string' } },
};
const validateCatalog = new Ajv2020({ strict: true }).compile(catalogResultSchema);

/** RFC 8785 for the JSON values a Tool holds, written here apart from the server's canonical JSON. */
function jcs(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(jcs).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, item]) => item !== undefined);
    return `{${entries
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([key, item]) => `${JSON.stringify(key)}:${jcs(item)}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}

type Era = 'legacy' | 'modern';
interface RpcAnswer {
  status: number;
  result?: any;
  error?: { code: number; message: string; data?: any };
}

let nextId = 1;
/** One JSON-RPC request as a plain POST; the answer may come as JSON or as one SSE event. */
async function rpc(app: TestApp, path: string, method: string, params: Record<string, unknown>, options: { era?: Era; key?: string } = {}): Promise<RpcAnswer> {
  const modern = options.era === 'modern';
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    authorization: `Bearer ${options.key ?? 'dk1'}`,
    'mcp-protocol-version': modern ? '2026-07-28' : '2025-11-25',
    ...(modern ? { 'mcp-method': method } : {}),
    ...(modern && method === 'tools/call' && typeof params.name === 'string' ? { 'mcp-name': params.name } : {}),
  };
  const envelope = {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientCapabilities': {},
    'io.modelcontextprotocol/clientInfo': { name: 'raw-json-rpc', version: '1.0.0' },
  };
  const body = { jsonrpc: '2.0', id: nextId++, method, params: modern ? { ...params, _meta: envelope } : params };
  const response = await app.request('POST', path, body, headers);
  const message = rpcAnswer(response);
  expect(message.jsonrpc).toBe('2.0');
  return { status: response.status, ...(message.error ? { error: message.error } : { result: message.result }) };
}

describe('MCP drafts on /mcp (MCP_DRAFTS=on), raw JSON-RPC', () => {
  let app: TestApp;
  const filesCatalog = uniqueName('drafts-files');
  const devCatalog = uniqueName('drafts-dev');
  const manyCatalog = uniqueName('drafts-many');
  const otherCatalog = uniqueName('drafts-other');

  beforeAll(async () => {
    app = await startTestApp({ API_KEYS: `dk1:${uniqueName('drafts-t1')},dk2:${uniqueName('drafts-t2')}`, MCP_DRAFTS: 'on' });
    for (const [catalog, tools, key] of [
      [filesCatalog, files, 'dk1'],
      [devCatalog, dev, 'dk1'],
      [manyCatalog, many, 'dk1'],
      [otherCatalog, [{ name: 'secret_tool', description: 'Read secret files of tenant two.', inputSchema: { type: 'object' } }], 'dk2'],
    ] as const) {
      expect((await app.request('PUT', `/v1/catalogs/${catalog}`, { tools }, { authorization: `Bearer ${key}` })).status).toBe(200);
    }
  }, 120_000);
  afterAll(() => app.close());

  const pages = async (params: Record<string, unknown>, era: Era = 'legacy') => {
    const entries: any[] = [];
    let cursor: string | undefined;
    let count = 0;
    do {
      const { result, error } = await rpc(app, '/mcp', 'tools/catalog', { ...params, ...(cursor ? { cursor } : {}) }, { era });
      expect(error).toBeUndefined();
      expect(validateCatalog(result), JSON.stringify(validateCatalog.errors)).toBe(true);
      entries.push(...result.tools);
      cursor = result.nextCursor;
      count++;
    } while (cursor);
    return { entries, count };
  };

  it('advertises the drafts in both eras, and lists the AgentCore-style search tool', async () => {
    const init = await rpc(app, '/mcp', 'initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } });
    expect(init.result.capabilities.tools).toMatchObject({ progressiveDisclosure: true, filtering: { supported: ['namePatterns'] } });
    const discover = await rpc(app, '/mcp', 'server/discover', {}, { era: 'modern' });
    expect(discover.result.capabilities.tools).toMatchObject({ progressiveDisclosure: true, filtering: { supported: ['namePatterns'] } });
    for (const era of ['legacy', 'modern'] as const) {
      const { result } = await rpc(app, '/mcp', 'tools/list', {}, { era });
      const listed = ListToolsResultSchema.parse(result);
      expect(listed.tools.map((tool) => tool.name)).toEqual(['search_tools', 'get_tool_details', 'list_tools', 'call_tool', 'x_amz_bedrock_agentcore_search']);
    }
  });

  it('SEP-2564: tools/list keeps the tools a name pattern matches; an empty or unknown filter keeps all', async () => {
    for (const era of ['legacy', 'modern'] as const) {
      const { result } = await rpc(app, '/mcp', 'tools/list', { filter: { namePatterns: ['search_*', 'call_?ool'] } }, { era });
      expect(ListToolsResultSchema.parse(result).tools.map((tool) => tool.name)).toEqual(['search_tools', 'call_tool']);
    }
    for (const filter of [{}, { namePatterns: [] }, { 'com.example/team': ['x'] }]) {
      expect((await rpc(app, '/mcp', 'tools/list', { filter })).result.tools).toHaveLength(5);
    }
    expect((await rpc(app, '/mcp', 'tools/list', { filter: { namePatterns: ['nothing_*'] } })).result.tools).toEqual([]);
  });

  it('SEP-2636: tools/catalog lists every tool of the scope as entries, a page at a time, each hash that of its tools/describe Tool', async () => {
    const { entries, count } = await pages({});
    expect(count).toBe(2);
    expect(entries).toHaveLength(files.length + dev.length + many.length);
    const names = entries.map((entry) => entry.name);
    expect(names).toEqual([...names].sort());
    expect(names).toContain(`${filesCatalog}/read_file`);
    expect(names.some((name) => name.includes('secret_tool'))).toBe(false);
    const readFile = entries.find((entry) => entry.name === `${filesCatalog}/read_file`);
    expect(readFile).toEqual({
      name: `${filesCatalog}/read_file`,
      title: 'Read a file',
      summary: 'Read the complete contents of a file from disk.',
      tags: ['files'],
      schemaHash: expect.any(String),
      annotations: { readOnlyHint: true },
    });
    const sample = [readFile.name, `${devCatalog}/git_commit`, `${manyCatalog}/ledger_007`];
    const described = (await rpc(app, '/mcp', 'tools/describe', { names: sample })).result.tools;
    for (const [index, tool] of described.entries()) {
      const entry = entries.find((candidate) => candidate.name === sample[index]);
      expect(createHash('sha256').update(jcs(tool)).digest('hex'), tool.name).toBe(entry.schemaHash);
    }
    // At /mcp/{catalog}, bare names.
    const one = await rpc(app, `/mcp/${devCatalog}`, 'tools/catalog', {});
    expect(one.result.tools.map((entry: { name: string }) => entry.name)).toEqual(['fetch_url', 'git_commit', 'git_status', 'web_search']);
  });

  it('SEP-2636 with SEP-2564: namePatterns narrow tools/catalog, and a cursor holds to its filter', async () => {
    const git = await pages({ filter: { namePatterns: ['*/git_*'] } });
    expect(git.entries.map((entry) => entry.name)).toEqual([`${devCatalog}/git_commit`, `${devCatalog}/git_status`]);
    const ledgers = await pages({ filter: { namePatterns: [`${manyCatalog}/ledger_1??`, `${manyCatalog}/ledger_2*`] } });
    expect(ledgers.entries).toHaveLength(130);
    const first = await rpc(app, '/mcp', 'tools/catalog', {});
    expect(first.result.nextCursor).toEqual(expect.any(String));
    const changed = await rpc(app, '/mcp', 'tools/catalog', { cursor: first.result.nextCursor, filter: { namePatterns: ['*'] } });
    expect(changed.error).toMatchObject({ code: -32602, message: 'Filter parameters must not change between paginated requests' });
    const forged = await rpc(app, '/mcp', 'tools/catalog', { cursor: 'not-a-cursor' });
    expect(forged.error).toMatchObject({ code: -32602, message: expect.stringMatching(/invalid cursor/) });
  });

  it("SEP-2636: tools/catalog with a query answers by search_tools' ranking, in both eras", async () => {
    const query = 'download a web page';
    const searched = await rpc(app, '/mcp', 'tools/call', { name: 'search_tools', arguments: { query, limit: 5 } });
    const ranked = CallToolResultSchema.parse(searched.result).structuredContent!.results as { name: string }[];
    expect(ranked[0]!.name).toBe(`${devCatalog}/fetch_url`);
    for (const era of ['legacy', 'modern'] as const) {
      const { result } = await rpc(app, '/mcp', 'tools/catalog', { query, limit: 5 }, { era });
      expect(validateCatalog(result), JSON.stringify(validateCatalog.errors)).toBe(true);
      expect(result.tools.map((entry: { name: string }) => entry.name)).toEqual(ranked.map((tool) => tool.name));
      expect(result.nextCursor).toBeUndefined();
    }
    // A pattern filter keeps the ranking's order among the tools it lets through.
    const filtered = await rpc(app, '/mcp', 'tools/catalog', { query, limit: 5, filter: { namePatterns: [`${devCatalog}/*`] } });
    const devRanked = filtered.result.tools.map((entry: { name: string }) => entry.name);
    expect(devRanked.length).toBeGreaterThan(0);
    for (const name of devRanked) expect(name.startsWith(`${devCatalog}/`)).toBe(true);
    expect(devRanked[0]).toBe(`${devCatalog}/fetch_url`);
  });

  it("narrows the ranking before its cut: a pattern's (or search_tools' server's) tools come back however far the others outrank them", async () => {
    const deep = uniqueName('drafts-deep');
    const invoices = Array.from({ length: 12 }, (_, i) => ({
      name: `invoice_${String(i).padStart(2, '0')}`,
      description: 'Create an invoice for a customer order and email it.',
      inputSchema: { type: 'object', properties: {} },
    }));
    const mail = { name: 'send_email', description: 'Send an email message.', inputSchema: { type: 'object', properties: {} }, server: 'mail' };
    expect((await app.request('PUT', `/v1/catalogs/${deep}`, { tools: [...invoices, mail] }, { authorization: 'Bearer dk1' })).status).toBe(200);
    try {
      const query = 'create an invoice for a customer order and email it';
      const ranked = (path: string, args: Record<string, unknown>) =>
        rpc(app, path, 'tools/call', { name: 'search_tools', arguments: { query, ...args } }).then((answer) =>
          (CallToolResultSchema.parse(answer.result).structuredContent!.results as { name: string }[]).map((tool) => tool.name),
        );
      // Unfiltered, send_email ranks below every invoice tool: a cut at five times the limit before filtering would miss it.
      expect((await ranked(`/mcp/${deep}`, { limit: 13 })).indexOf('send_email')).toBe(12);
      const filtered = await rpc(app, `/mcp/${deep}`, 'tools/catalog', { query, limit: 1, filter: { namePatterns: ['send_*'] } });
      expect(filtered.result.tools.map((entry: { name: string }) => entry.name)).toEqual(['send_email']);
      expect(await ranked(`/mcp/${deep}`, { limit: 1, server: 'mail' })).toEqual(['send_email']);
    } finally {
      await app.request('DELETE', `/v1/catalogs/${deep}`, undefined, { authorization: 'Bearer dk1' });
    }
  });

  it('SEP-2636: tools/describe gives MCP Tools in the order asked, and names every unknown name in one error', async () => {
    for (const era of ['legacy', 'modern'] as const) {
      const names = [`${devCatalog}/web_search`, `${filesCatalog}/read_file`];
      const { result } = await rpc(app, '/mcp', 'tools/describe', { names }, { era });
      const tools = result.tools.map((tool: unknown) => ToolSchema.parse(tool));
      expect(tools.map((tool: { name: string }) => tool.name)).toEqual(names);
      expect(result.tools[1]).toEqual({
        name: `${filesCatalog}/read_file`,
        title: 'Read a file',
        description: files[0]!.description,
        inputSchema: files[0]!.inputSchema,
        outputSchema: files[0]!.outputSchema,
        annotations: { readOnlyHint: true },
      });
    }
    // Bare names at /mcp/{catalog}.
    const bare = await rpc(app, `/mcp/${filesCatalog}`, 'tools/describe', { names: ['write_file'] });
    expect(ToolSchema.parse(bare.result.tools[0]).name).toBe('write_file');
    // Unknown, another tenant's, and a bare name at /mcp are all unknown: no partial answer.
    const unknown = await rpc(app, '/mcp', 'tools/describe', { names: [`${devCatalog}/git_status`, 'no_such_tool', `${otherCatalog}/secret_tool`] });
    expect(unknown.status).toBe(200);
    expect(unknown.error).toMatchObject({
      code: -32602,
      message: 'Unknown tool names',
      data: { unknownNames: ['no_such_tool', `${otherCatalog}/secret_tool`] },
    });
    const tooMany = await rpc(app, '/mcp', 'tools/describe', {
      names: Array.from({ length: 51 }, (_, i) => `${manyCatalog}/ledger_${String(i).padStart(3, '0')}`),
    });
    expect(tooMany.error).toMatchObject({ code: -32602, data: { maxNames: 50 } });
  });

  it('tools/call takes the address tools/catalog gives, through call_tool (meta-tools as ever)', async () => {
    for (const era of ['legacy', 'modern'] as const) {
      // A pushed tool has no upstream to run it: call_tool's own answer, not "tool not found".
      const pushed = CallToolResultSchema.parse(
        (await rpc(app, '/mcp', 'tools/call', { name: `${devCatalog}/fetch_url`, arguments: { url: 'https://example.com' } }, { era })).result,
      );
      expect(pushed.isError).toBe(true);
      expect((pushed.content[0] as { text: string }).text).toMatch(/has no upstream MCP server registered/);
      const unknown = CallToolResultSchema.parse((await rpc(app, '/mcp', 'tools/call', { name: 'nowhere/none', arguments: {} }, { era })).result);
      expect((unknown.content[0] as { text: string }).text).toMatch(/unknown tool "nowhere\/none"/);
      const meta = CallToolResultSchema.parse((await rpc(app, '/mcp', 'tools/call', { name: 'list_tools', arguments: {} }, { era })).result);
      expect(meta.isError).toBeFalsy();
      expect((meta.structuredContent as { names: string[] }).names).toContain(`${devCatalog}/git_commit`);
    }
  });

  it("x_amz_bedrock_agentcore_search: AgentCore's shape, {query} in and {tools: [Tool]} out, by search_tools' ranking", async () => {
    const query = 'record my staged changes';
    const searched = (await rpc(app, '/mcp', 'tools/call', { name: 'search_tools', arguments: { query, limit: 10 } })).result;
    for (const era of ['legacy', 'modern'] as const) {
      const answer = CallToolResultSchema.parse(
        (await rpc(app, '/mcp', 'tools/call', { name: 'x_amz_bedrock_agentcore_search', arguments: { query } }, { era })).result,
      );
      const tools = (answer.structuredContent as { tools: unknown[] }).tools.map((tool) => ToolSchema.parse(tool));
      expect(tools[0]!.name).toBe(`${devCatalog}/git_commit`);
      expect(tools.map((tool) => tool.name)).toEqual(searched.structuredContent.results.map((tool: { name: string }) => tool.name));
      expect(tools[0]!.inputSchema).toEqual(dev[0]!.inputSchema);
      // The text block carries the same JSON, for clients that read text only.
      expect(JSON.parse((answer.content[0] as { text: string }).text)).toEqual(answer.structuredContent);
    }
    const missing = CallToolResultSchema.parse((await rpc(app, '/mcp', 'tools/call', { name: 'x_amz_bedrock_agentcore_search', arguments: {} })).result);
    expect(missing.isError).toBe(true);
  });

  it('answers bad input with a JSON-RPC error (-32602), never a 5xx', async () => {
    const bad: [string, Record<string, unknown>][] = [
      ['tools/catalog', { query: 5 }],
      ['tools/catalog', { query: '' }],
      ['tools/catalog', { query: 'a\u0000b' }],
      ['tools/catalog', { cursor: 7 }],
      ['tools/catalog', { limit: 0 }],
      ['tools/catalog', { query: 'x', limit: 51 }],
      ['tools/catalog', { filter: { namePatterns: 'git_*' } }],
      ['tools/catalog', { filter: { namePatterns: Array.from({ length: 101 }, () => '*') } }],
      ['tools/catalog', { filter: { namePatterns: ['x'.repeat(257)] } }],
      ['tools/list', { filter: { namePatterns: [7] } }],
      ['tools/describe', {}],
      ['tools/describe', { names: [] }],
      ['tools/describe', { names: 'read_file' }],
      ['tools/describe', { names: [5] }],
      ['tools/call', { name: 7 }],
      ['tools/call', { name: 'x', arguments: [] }],
    ];
    for (const era of ['legacy', 'modern'] as const) {
      for (const [method, params] of bad) {
        const answer = await rpc(app, '/mcp', method, params, { era });
        expect(answer.status, `${era} ${method} ${JSON.stringify(params)}`).toBeLessThan(500);
        expect(answer.error?.code, `${era} ${method} ${JSON.stringify(params)}`).toBe(-32602);
      }
    }
  });
});

describe('MCP drafts off (the default)', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ API_KEYS: `dk1:${uniqueName('drafts-off')}` });
  });
  afterAll(() => app.close());

  it('neither advertises nor answers the draft methods, and lists the four meta-tools', async () => {
    const init = await rpc(app, '/mcp', 'initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } });
    expect(init.result.capabilities.tools.progressiveDisclosure).toBeUndefined();
    for (const method of ['tools/catalog', 'tools/describe']) expect((await rpc(app, '/mcp', method, { names: ['x'] })).error?.code).toBe(-32601);
    const { result } = await rpc(app, '/mcp', 'tools/list', { filter: { namePatterns: ['search_*'] } });
    expect(result.tools.map((tool: { name: string }) => tool.name)).toEqual(['search_tools', 'get_tool_details', 'list_tools', 'call_tool']);
  });
});
