/**
 * The MCP Inspector's CLI (`npx @modelcontextprotocol/inspector --cli`, installed from npm) against
 * a running toolsift, non-interactively: what a developer does to check an MCP server by hand.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { uniqueName } from '../helpers/database.js';

const run = promisify(execFile);
const root = new URL('../..', import.meta.url).pathname;

async function inspector(...args: string[]): Promise<unknown> {
  const { stdout } = await run('npx', ['--no-install', '@modelcontextprotocol/inspector', '--cli', ...args], { cwd: root, timeout: 90_000 });
  return JSON.parse(stdout);
}

describe('the MCP Inspector CLI against /mcp', () => {
  let app: TestApp;
  const catalog = uniqueName('inspector');
  beforeAll(async () => {
    // The Inspector CLI sends no custom headers: an instance without API_KEYS (one default tenant).
    app = await startTestApp();
    const tools = [
      {
        name: 'read_text_file',
        description: 'Read a text file and return its contents.',
        inputSchema: { type: 'object', properties: { path: { type: 'string' } } },
        server: 'filesystem',
      },
      {
        name: 'get_forecast',
        description: 'Weather forecast for a city.',
        inputSchema: { type: 'object', properties: { city: { type: 'string' } } },
        server: 'weather',
      },
    ];
    expect((await app.request('PUT', `/v1/catalogs/${catalog}`, { tools })).status).toBe(200);
  });
  afterAll(() => app?.close());

  it('lists the meta-tools and calls search_tools', async () => {
    // Inspector 0.15 rewrites any URL whose path does not end in /mcp to /mcp: the all-catalogs endpoint.
    const listed = (await inspector(`${app.url}/mcp`, '--transport', 'http', '--method', 'tools/list')) as { tools: Array<{ name: string }> };
    expect(listed.tools.map((tool) => tool.name)).toEqual(['search_tools', 'get_tool_details', 'list_tools', 'call_tool']);
    const called = (await inspector(
      `${app.url}/mcp`,
      '--transport',
      'http',
      '--method',
      'tools/call',
      '--tool-name',
      'search_tools',
      '--tool-arg',
      'query=read a text file',
      'limit=50',
    )) as {
      structuredContent: { results: Array<{ name: string }> };
      content: Array<{ text: string }>;
    };
    const names = called.structuredContent.results.map((tool) => tool.name);
    expect(names, JSON.stringify(called)).toContain(`${catalog}/read_text_file`);
    expect(names).not.toContain(`${catalog}/get_forecast`);
    expect(called.content[0]!.text).toContain(`${catalog}/read_text_file [filesystem] (path)`);
  }, 120_000);
});
