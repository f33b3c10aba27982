/**
 * One rule for a query's length on every interface (src/lib/query-length.ts): up to 10,000
 * characters everywhere; past that a 400 naming the field (MCP: an isError result), except the
 * gateway selector, which promises never to fail closed and cuts the query instead.
 */
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cutQuery, QUERY_CHARS_MAX } from '../../src/lib/query-length.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { uniqueName } from '../helpers/database.js';

const TOOLS = [
  { name: 'read_file', description: 'Read a text file.', inputSchema: { type: 'object' } },
  { name: 'get_weather', description: 'Weather forecast for a city.', inputSchema: { type: 'object' } },
];

describe('query length', () => {
  let app: TestApp;
  let client: Client;
  const catalog = uniqueName('qlen');
  const atLimit = `weather ${'x'.repeat(QUERY_CHARS_MAX - 8)}`;
  const overLimit = `${atLimit}y`;
  beforeAll(async () => {
    app = await startTestApp();
    expect((await app.request('PUT', `/v1/catalogs/${catalog}`, { tools: TOOLS })).status).toBe(200);
    client = new Client({ name: 'query-length', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${app.url}/mcp/${catalog}`)));
  });
  afterAll(async () => {
    await client?.close();
    await app?.close();
  });

  it('cuts at the limit, never inside a surrogate pair', () => {
    expect(cutQuery('short')).toBe('short');
    expect(cutQuery(overLimit)).toHaveLength(QUERY_CHARS_MAX);
    const emoji = `${'a'.repeat(QUERY_CHARS_MAX - 1)}😀`;
    expect(cutQuery(emoji)).toBe('a'.repeat(QUERY_CHARS_MAX - 1));
  });

  it('REST search and tool-search take 10,000 characters and refuse one more, naming the field', async () => {
    for (const [path, body] of [
      [`/v1/catalogs/${catalog}/search`, (query: string) => ({ query })],
      ['/v1/tool-search', (query: string) => ({ query, catalog })],
    ] as const) {
      expect((await app.request('POST', path, body(atLimit))).status, path).toBe(200);
      const refused = await app.request('POST', path, body(overLimit));
      expect(refused.status, path).toBe(400);
      expect(refused.text).toContain('query');
    }
  });

  it('MCP search_tools takes the same 10,000 characters and refuses one more as an isError result', async () => {
    const taken = await client.callTool({ name: 'search_tools', arguments: { query: atLimit } });
    expect(taken.isError).toBeFalsy();
    const refused = await client.callTool({ name: 'search_tools', arguments: { query: overLimit } });
    expect(refused.isError).toBe(true);
  });

  it('the gateway selector cuts a longer query and still answers', async () => {
    const answer = await app.request('POST', '/v1/tool-discovery/search', { pattern: `weather ${'x'.repeat(20_000)}`, top_k: 1, tools: TOOLS });
    expect(answer.status).toBe(200);
    expect(answer.body.selected_names).toEqual(['get_weather']);
    const stored = await app.request('POST', '/v1/tool-discovery/search', { query: `weather ${'x'.repeat(20_000)}`, max_tools: 1, catalog });
    expect(stored.status).toBe(200);
    expect(stored.body.selected_names).toEqual(['get_weather']);
  });
});
