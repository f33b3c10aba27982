/**
 * `/mcp` spans every catalog of a tenant: the same tool pushed to several catalogs is one
 * search_tools result (it filled several of the result slots before), and of identical tools the
 * one call_tool can run (synced by an upstream) takes the place of a pushed copy.
 */
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collapseSameTools } from '../../src/mcp/discovery.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { uniqueName } from '../helpers/database.js';

describe('the same tool in several catalogs at /mcp', () => {
  it('keeps the first of each content, a callable twin in its place', () => {
    const tools = [
      { id: 'a-pushed', hash: 'h1', callable: false },
      { id: 'b', hash: 'h2', callable: false },
      { id: 'a-synced', hash: 'h1', callable: true },
      { id: 'c', callable: undefined },
      { id: 'a-again', hash: 'h1', callable: true },
    ];
    expect(collapseSameTools(tools).map((tool) => tool.id)).toEqual(['a-synced', 'b', 'c']);
  });

  describe('over MCP', () => {
    let app: TestApp;
    let client: Client;
    const tenant = uniqueName('same-tool');
    const auth = { authorization: 'Bearer same-tool-key' };
    const catalogs = [uniqueName('one'), uniqueName('two'), uniqueName('three')];
    beforeAll(async () => {
      app = await startTestApp({ API_KEYS: `same-tool-key:${tenant}` });
      const weather = {
        name: 'get_weather',
        description: 'Weather forecast for a city.',
        inputSchema: { type: 'object', properties: { city: { type: 'string' } } },
      };
      for (const [index, catalog] of catalogs.entries()) {
        const tools = [weather, { name: `other_${index}`, description: `Weather station number ${index} readings.`, inputSchema: { type: 'object' } }];
        expect((await app.request('PUT', `/v1/catalogs/${catalog}`, { tools }, auth)).status).toBe(200);
      }
      client = new Client({ name: 'same-tool', version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL(`${app.url}/mcp`), { requestInit: { headers: auth } }));
    });
    afterAll(async () => {
      await client?.close();
      await app?.close();
    });

    it('answers the tool once, leaving the other slots to other tools', async () => {
      const answer = (await client.callTool({ name: 'search_tools', arguments: { query: 'weather forecast', limit: 4 } })) as {
        structuredContent: { results: Array<{ name: string }> };
      };
      const names = answer.structuredContent.results.map((tool) => tool.name);
      expect(names.filter((name) => name.endsWith('/get_weather'))).toHaveLength(1);
      expect(names.filter((name) => name.includes('/other_'))).toHaveLength(3);
    });
  });
});
