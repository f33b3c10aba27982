/**
 * The MCP Inspector's CLI (`npx @modelcontextprotocol/inspector --cli`, installed from npm) against
 * a running toolsift, non-interactively: what a developer does to check an MCP server by hand.
 */
import { execFile, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { uniqueName } from '../helpers/database.js';
import { freePort, startEverything, writeFilesystemUpstreams } from '../helpers/process.js';

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

describe('the MCP Inspector CLI runs a code-mode program over two upstreams', () => {
  let app: TestApp;
  let everything: ChildProcess;
  let folder: string;
  const files = uniqueName('insp-files');
  const web = uniqueName('insp-web');
  beforeAll(async () => {
    folder = mkdtempSync(join(tmpdir(), 'toolsift-inspector-'));
    writeFileSync(join(folder, 'a.txt'), 'alpha\nbeta\ngamma\n');
    writeFileSync(join(folder, 'b.txt'), 'delta\n');
    const upstreamsFile = join(folder, 'upstreams.json');
    writeFilesystemUpstreams(upstreamsFile, { filesystem: { folder, catalog: files } });
    const port = await freePort();
    everything = await startEverything(port);
    // Keyless (the Inspector sends no headers): the default tenant, which the UPSTREAMS_FILE server joins.
    app = await startTestApp({ CODE_MODE: 'on', UPSTREAMS_FILE: upstreamsFile, UPSTREAM_ALLOW: '127.0.0.1/32' });
    expect((await app.request('PUT', `/v1/catalogs/${web}/upstreams/everything`, { url: `http://127.0.0.1:${port}/mcp` })).status).toBe(200);
    for (let tries = 0; ; tries++) {
      const listed = await app.request('GET', `/v1/catalogs/${files}/upstreams`);
      if (listed.body?.upstreams?.[0]?.tool_count > 0) break;
      if (tries > 300) throw new Error(`filesystem did not sync: ${listed.text}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }, 120_000);
  afterAll(async () => {
    await app?.close();
    everything?.kill();
    rmSync(folder, { recursive: true, force: true });
  });

  it('lists run_code and runs a program calling server-filesystem (stdio) and server-everything (HTTP)', async () => {
    const listed = (await inspector(`${app.url}/mcp`, '--transport', 'http', '--method', 'tools/list')) as { tools: Array<{ name: string }> };
    expect(listed.tools.map((tool) => tool.name)).toContain('run_code');
    const code = [
      `const paths: string[] = ${JSON.stringify([join(folder, 'a.txt'), join(folder, 'b.txt')])};`,
      'let lines = 0;',
      `for (const path of paths) lines += (await tools[${JSON.stringify(files)}].read_text_file({ path })).content.trim().split("\\n").length;`,
      `return await callTool(${JSON.stringify(`${web}/echo`)}, { message: "lines " + lines });`,
    ].join('\n');
    const called = (await inspector(
      `${app.url}/mcp`,
      '--transport',
      'http',
      '--method',
      'tools/call',
      '--tool-name',
      'run_code',
      '--tool-arg',
      `code=${code}`,
    )) as {
      isError?: boolean;
      structuredContent: { result: unknown; calls: number };
    };
    expect(called.isError, JSON.stringify(called)).toBeFalsy();
    expect(called.structuredContent.result).toBe('Echo: lines 4');
    expect(called.structuredContent.calls).toBe(3);
  }, 120_000);
});
