/**
 * Management over MCP (issue 76 item 4): a key given `manage` registers a real upstream (an MCP
 * server of the official SDK, run here) through `register_upstream`, finds and calls its tools,
 * reads every upstream's status as a resource and a prompt, and removes it; keys without the scope
 * are offered none of it and are refused a direct call; refusals read as REST's; another tenant's
 * upstreams stay out of sight; a header value never comes back in any answer. Runs on the store the
 * environment selects (PGlite, or PostgreSQL with DATABASE_URL).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { toNodeHandler } from '@modelcontextprotocol/node';
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
import { pino } from 'pino';
import { seededRandom } from '../../src/eval/seeded-random.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { uniqueName } from '../helpers/database.js';
import { HOSTILE_VALUES, mutate } from '../helpers/mutate.js';

const fixture = new URL('../fixtures/changing-mcp-server.mjs', import.meta.url).pathname;
const TOKEN = `tide-token-${uniqueName('v')}`;
const STDIO_SECRET = `stdio-secret-${uniqueName('v')}`;

/** An MCP server of the official SDK over Streamable HTTP on 127.0.0.2, recording the token each request brought. */
async function startTideServer() {
  const state = { extra: false, tokens: [] as (string | undefined)[] };
  const handler = createMcpHandler(() => {
    const server = new McpServer({ name: 'tides', version: '1.0.0' });
    server.registerTool(
      'forecast_tides',
      { description: 'Forecast the tides of a harbour for a day.', inputSchema: z.object({ harbour: z.string() }) },
      async ({ harbour }) => ({ content: [{ type: 'text', text: `high water at ${harbour}: 06:12` }] }),
    );
    server.registerTool('list_harbours', { description: 'List the harbours with tide tables.' }, async () => ({ content: [{ type: 'text', text: 'Brest' }] }));
    if (state.extra)
      server.registerTool('tide_alerts', { description: 'Alert on unusual tides.' }, async () => ({ content: [{ type: 'text', text: 'none' }] }));
    return server;
  });
  const serve = toNodeHandler(handler);
  const server = http.createServer((req, res) => {
    state.tokens.push(req.headers['x-tide-token'] as string | undefined);
    void serve(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.2', resolve));
  const url = `http://127.0.0.2:${(server.address() as AddressInfo).port}/mcp`;
  return { url, state, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

describe('management over MCP', () => {
  let app: TestApp;
  let tides: Awaited<ReturnType<typeof startTideServer>>;
  let dir: string;
  const logs: Record<string, unknown>[] = [];
  /** Every answer an MCP client received here: none may carry a credential's value. */
  const answers: string[] = [];
  const clients: Client[] = [];
  const prefix = uniqueName('mng');
  const tenantA = `${prefix}-ta`;
  const tenantB = `${prefix}-tb`;
  const catalog = `${prefix}-sea`;
  const local = `${prefix}-local`;
  const keys = {
    manager: `manager-${prefix}-0123456789`,
    viewer: `viewer-${prefix}-0123456789`,
    plain: `plain-${prefix}-0123456789`,
    narrow: `narrow-${prefix}-0123456789`,
    other: `other-${prefix}-0123456789`,
    admin: `admin-${prefix}-0123456789`,
  };
  const as = (key: string) => ({ authorization: `Bearer ${key}` });

  async function mcp(key: string, path = '/mcp'): Promise<Client> {
    const client = new Client({ name: 'manage-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${app.url}${path}`), { requestInit: { headers: as(key) } }));
    clients.push(client);
    return client;
  }
  /** A tool call, its answer kept for the credential check. */
  async function call(client: Client, name: string, args: Record<string, unknown>): Promise<any> {
    const result = await client.callTool({ name, arguments: args });
    answers.push(JSON.stringify(result));
    return result;
  }
  async function status(client: Client): Promise<any[]> {
    const read = await client.readResource({ uri: 'toolsift://upstreams/status' });
    answers.push(JSON.stringify(read));
    return JSON.parse((read.contents[0] as { text: string }).text).upstreams;
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'toolsift-manage-'));
    writeFileSync(
      join(dir, 'keys.json'),
      JSON.stringify({
        keys: [
          { key: keys.manager, id: 'manager', tenant: tenantA, manage: true },
          { key: keys.viewer, id: 'viewer', tenant: tenantA, manage: true, write: false },
          { key: keys.plain, id: 'plain', tenant: tenantA },
          { key: keys.narrow, id: 'narrow-manager', tenant: tenantA, manage: true, servers: { deny: ['tides'] } },
          { key: keys.other, id: 'other-tenant', tenant: tenantB, manage: true },
          { key: keys.admin, id: 'admin-b', tenant: tenantB },
        ],
      }),
    );
    // A local server of the operator's, with a credential in its environment: its name is shown, never its value.
    writeFileSync(
      join(dir, 'upstreams.json'),
      JSON.stringify({
        mcpServers: { harbour: { command: process.execPath, args: [fixture], env: { HARBOUR_TOKEN: STDIO_SECRET }, catalog: local, tenant: tenantA } },
      }),
    );
    tides = await startTideServer();
    const logger = pino({ level: 'info' }, { write: (line: string) => void logs.push(JSON.parse(line)) });
    app = await startTestApp(
      {
        API_KEYS_FILE: join(dir, 'keys.json'),
        UPSTREAMS_FILE: join(dir, 'upstreams.json'),
        UPSTREAM_ALLOW: '127.0.0.2/32',
        UPSTREAM_CONNECT_TIMEOUT_MS: '5000',
      },
      { logger },
    );
    // Tenant B has an upstream of the same catalog and name: tenant A's manager must neither see nor remove it.
    const b = await app.request('PUT', `/v1/catalogs/${catalog}/upstreams/tides`, { url: tides.url, trust: 'auto' }, as(keys.admin));
    expect(b.status, b.text).toBe(200);
    for (let tries = 0; ; tries++) {
      const listed = await app.request('GET', `/v1/catalogs/${local}/upstreams`, undefined, as(keys.manager));
      if (listed.body?.upstreams?.[0]?.tool_count > 0) break;
      if (tries > 300) throw new Error(`the stdio fixture did not sync: ${listed.text}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }, 90_000);

  afterAll(async () => {
    await Promise.all(clients.map((client) => client.close().catch(() => {})));
    await app?.close();
    await tides?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('offers the management tools, resource and prompt only to keys given manage, at /mcp', async () => {
    const offered = async (key: string, path = '/mcp') => {
      const client = await mcp(key, path);
      return {
        tools: (await client.listTools()).tools.map((tool) => tool.name),
        resources: (await client.listResources()).resources.map((resource) => resource.uri),
        prompts: (await client.listPrompts()).prompts.map((prompt) => prompt.name),
        instructions: client.getInstructions() ?? '',
      };
    };
    const manager = await offered(keys.manager);
    expect(manager.tools).toEqual(expect.arrayContaining(['register_upstream', 'deregister_upstream']));
    expect(manager.resources).toContain('toolsift://upstreams/status');
    expect(manager.prompts).toContain('upstream_status');
    expect(manager.instructions).toMatch(/register_upstream/);
    // manage without write: the status view, not the changes.
    const viewer = await offered(keys.viewer);
    expect(viewer.tools).not.toContain('register_upstream');
    expect(viewer.tools).not.toContain('deregister_upstream');
    expect(viewer.resources).toContain('toolsift://upstreams/status');
    for (const without of [await offered(keys.plain), await offered(keys.manager, `/mcp/${local}`)]) {
      expect(without.tools).not.toContain('register_upstream');
      expect(without.tools).not.toContain('deregister_upstream');
      expect(without.resources).not.toContain('toolsift://upstreams/status');
      expect(without.prompts).not.toContain('upstream_status');
      expect(without.instructions).not.toMatch(/register_upstream|upstreams\/status/);
    }
  });

  it('refuses a key without manage a direct call, the resource and the prompt; nothing is registered', async () => {
    const client = await mcp(keys.plain);
    const direct = await client
      .callTool({ name: 'register_upstream', arguments: { catalog, name: 'sneaky', url: tides.url } })
      .catch((error: Error) => ({ isError: true, content: [{ type: 'text', text: error.message }] }));
    answers.push(JSON.stringify(direct));
    expect(direct.isError).toBe(true);
    expect(JSON.stringify(direct.content)).toMatch(/register_upstream/);
    const removal = await client
      .callTool({ name: 'deregister_upstream', arguments: { catalog: local, name: 'harbour' } })
      .catch((error: Error) => ({ isError: true, content: [{ type: 'text', text: error.message }] }));
    expect(removal.isError).toBe(true);
    await expect(client.readResource({ uri: 'toolsift://upstreams/status' })).rejects.toThrow();
    await expect(client.getPrompt({ name: 'upstream_status' })).rejects.toThrow();
    expect((await app.request('GET', `/v1/catalogs/${catalog}/upstreams`, undefined, as(keys.manager))).status).toBe(404);
    expect((await app.request('GET', `/v1/catalogs/${local}/upstreams/harbour`, undefined, as(keys.manager))).status).toBe(200);
  });

  it('registers a real upstream through register_upstream: its tools are searchable and callable, its token sent but never shown', async () => {
    const client = await mcp(keys.manager);
    const registered = await call(client, 'register_upstream', {
      catalog,
      name: 'tides',
      url: tides.url,
      headers: { 'X-Tide-Token': TOKEN },
      refresh_seconds: 600,
    });
    expect(registered.isError ?? false, JSON.stringify(registered)).toBe(false);
    expect(registered.structuredContent.upstream).toMatchObject({
      catalog,
      name: 'tides',
      transport: 'http',
      url: tides.url,
      state: 'synced',
      tool_count: 2,
      pending: 0,
      last_error: null,
      credentials: { headers: ['X-Tide-Token'], env: [] },
    });
    expect(tides.state.tokens).toContain(TOKEN);
    // The same upstream over REST, as an operator sees it.
    const rest = await app.request('GET', `/v1/catalogs/${catalog}/upstreams/tides`, undefined, as(keys.plain));
    expect(rest.body.upstream).toMatchObject({ tool_count: 2, header_names: ['X-Tide-Token'], trust: 'pin' });

    const found = await call(client, 'search_tools', { query: 'forecast the tides of a harbour' });
    expect(found.structuredContent.results.map((tool: { name: string }) => tool.name)).toContain(`${catalog}/forecast_tides`);
    const ran = await call(client, 'call_tool', { name: `${catalog}/forecast_tides`, arguments: { harbour: 'Brest' } });
    expect(JSON.stringify(ran.content)).toContain('high water at Brest');

    // Credentials per tool: names for a manage key, nothing for another.
    const details = await call(client, 'get_tool_details', { names: [`${catalog}/forecast_tides`, `${local}/add_tool`], detail: 'brief' });
    expect(details.structuredContent.tools.map((tool: { credentials?: unknown }) => tool.credentials)).toEqual([
      { headers: ['X-Tide-Token'], env: [] },
      { headers: [], env: ['HARBOUR_TOKEN'] },
    ]);
    const plain = await call(await mcp(keys.plain), 'get_tool_details', { names: [`${catalog}/forecast_tides`] });
    expect(plain.structuredContent.tools[0].found).toBe(true);
    expect(plain.structuredContent.tools[0].credentials).toBeUndefined();
  });

  it('shows every upstream the key sees as a resource and a prompt: state, counts, pending approvals, error class, credential names', async () => {
    // A tool the upstream lists after its registration waits for approval (trust "pin").
    tides.state.extra = true;
    const client = await mcp(keys.manager);
    const again = await call(client, 'register_upstream', { catalog, name: 'tides', url: tides.url, headers: { 'X-Tide-Token': TOKEN } });
    expect(again.structuredContent.upstream).toMatchObject({
      tool_count: 2,
      pending: 1,
      pending_tools: [{ name: 'tide_alerts', change: 'new', findings: [] }],
    });
    // An upstream that fails: its class, not its text.
    const down = await call(client, 'register_upstream', { catalog, name: 'down', url: 'http://127.0.0.2:9/mcp' });
    expect(down.structuredContent.upstream).toMatchObject({ state: 'failing', last_error: { class: 'connection_failed', message: 'connection failed' } });

    const listed = await status(client);
    expect(listed.map((upstream) => `${upstream.catalog}/${upstream.name}`)).toEqual([`${local}/harbour`, `${catalog}/down`, `${catalog}/tides`]);
    const harbour = listed.find((upstream) => upstream.name === 'harbour');
    expect(harbour).toMatchObject({ transport: 'stdio', url: null, state: 'synced', tool_count: 2, credentials: { headers: [], env: ['HARBOUR_TOKEN'] } });
    const prompt = await client.getPrompt({ name: 'upstream_status' });
    answers.push(JSON.stringify(prompt));
    const text = (prompt.messages[0]!.content as { text: string }).text;
    expect(text).toContain(`${catalog}/tides`);
    expect(text).toContain('1 waiting for approval (tide_alerts: new)');
    expect(text).toContain('last error connection_failed');
    expect(text).toContain('header X-Tide-Token');
    expect(text).toContain('env HARBOUR_TOKEN');

    // A manage key whose servers exclude "tides" sees the others only; a viewer reads the same view.
    expect((await status(await mcp(keys.narrow))).map((upstream) => upstream.name)).toEqual(['harbour', 'down']);
    expect((await status(await mcp(keys.viewer))).map((upstream) => upstream.name)).toEqual(['harbour', 'down', 'tides']);
  });

  it('refuses through MCP exactly as REST does: the address policy, the rules of a registration, the key scope', async () => {
    const client = await mcp(keys.manager);
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ url: 'http://169.254.169.254/latest/meta-data' }, /refused by the address policy/],
      [{ url: 'http://10.0.0.1:8080/mcp' }, /refused by the address policy \(private\)/],
      [{ url: 'http://user:pass@127.0.0.2:1/mcp' }, /credentials in the URL/],
      [{ url: 'file:///etc/passwd' }, /url must be http/],
      [{ url: tides.url, headers: { 'Content-Length': '0' } }, /headers.Content-Length/],
      [{ url: tides.url, refresh_seconds: 1 }, /refresh_seconds/],
    ];
    for (const [body, pattern] of cases) {
      const name = uniqueName('r');
      const viaMcp = await call(client, 'register_upstream', { catalog, name, ...body });
      const viaRest = await app.request('PUT', `/v1/catalogs/${catalog}/upstreams/${name}`, body, as(keys.manager));
      expect(viaRest.status, viaRest.text).toBe(400);
      expect(viaMcp.isError, JSON.stringify(viaMcp)).toBe(true);
      const message = viaMcp.content[0].text as string;
      expect(message).toMatch(pattern);
      // The same words, but for where the field was ("body" over REST, "arguments" here).
      expect(message.replace('invalid arguments', 'invalid body')).toBe(viaRest.body.error.message);
    }
    const badName = await call(client, 'register_upstream', { catalog, name: '..', url: tides.url });
    expect(badName.content[0].text).toBe('invalid arguments: name: upstream names may not be . or ..');
    // A manage key without the server in its scope: REST's 403 message.
    const narrow = await call(await mcp(keys.narrow), 'deregister_upstream', { catalog, name: 'tides' });
    expect(narrow.isError).toBe(true);
    const rest = await app.request('DELETE', `/v1/catalogs/${catalog}/upstreams/tides`, undefined, as(keys.narrow));
    expect(rest.status).toBe(403);
    expect(narrow.content[0].text).toBe(rest.body.error.message);
    const listed = await app.request('GET', `/v1/catalogs/${catalog}/upstreams`, undefined, as(keys.plain));
    expect(listed.body.upstreams.map((upstream: { name: string }) => upstream.name)).toEqual(['down', 'tides']);
  });

  it("keeps another tenant's upstream of the same catalog and name out of sight and out of reach", async () => {
    const client = await mcp(keys.manager);
    const before = await app.request('GET', `/v1/catalogs/${catalog}/upstreams/tides`, undefined, as(keys.admin));
    expect(before.status).toBe(200);
    const other = await mcp(keys.other);
    const seen = await status(other);
    expect(seen.map((upstream) => `${upstream.catalog}/${upstream.name}`)).toEqual([`${catalog}/tides`]);
    expect(seen[0].credentials).toEqual({ headers: [], env: [] });
    expect(JSON.stringify(seen)).not.toContain('harbour');
    // Tenant B's manager removes "its" tides: tenant A's stays.
    const removedB = await call(other, 'deregister_upstream', { catalog, name: 'tides' });
    expect(removedB.isError ?? false, JSON.stringify(removedB)).toBe(false);
    expect((await status(client)).map((upstream) => upstream.name)).toContain('tides');
    // And tenant A's manager cannot reach tenant B's: a catalog only B has is unknown to A.
    const onlyB = `${prefix}-only-b`;
    expect((await app.request('PUT', `/v1/catalogs/${onlyB}/upstreams/tides`, { url: tides.url }, as(keys.admin))).status).toBe(200);
    const reach = await call(client, 'deregister_upstream', { catalog: onlyB, name: 'tides' });
    expect(reach.isError).toBe(true);
    const rest = await app.request('DELETE', `/v1/catalogs/${onlyB}/upstreams/tides`, undefined, as(keys.manager));
    expect(rest.status).toBe(404);
    expect(reach.content[0].text).toBe(rest.body.error.message);
    expect((await app.request('GET', `/v1/catalogs/${onlyB}/upstreams/tides`, undefined, as(keys.admin))).status).toBe(200);
  });

  it('deregisters through deregister_upstream: its tools go; the audit lines are REST\'s with via "mcp" and the key id', async () => {
    const client = await mcp(keys.manager);
    const removed = await call(client, 'deregister_upstream', { catalog, name: 'tides' });
    expect(removed.structuredContent).toEqual({ removed: { catalog, name: 'tides' } });
    const found = await call(client, 'search_tools', { query: 'forecast the tides of a harbour' });
    expect(JSON.stringify(found.structuredContent)).not.toContain('forecast_tides');
    const gone = await call(client, 'deregister_upstream', { catalog, name: 'tides' });
    expect(gone.isError).toBe(true);
    expect(gone.content[0].text).toBe(`upstream "tides" in catalog "${catalog}" not found`);

    const audit = logs.filter((line) => line.msg === 'audit');
    const of = (event: string, where: Record<string, unknown>) =>
      audit.filter((line) => line.audit === event && Object.entries(where).every(([key, value]) => line[key] === value));
    expect(of('registered', { catalog, upstream: 'tides', key: 'manager', via: 'mcp', outcome: 'ok' }).length).toBeGreaterThan(0);
    expect(of('pinned', { catalog, upstream: 'tides', tool: 'forecast_tides', key: 'manager', via: 'mcp' })).toHaveLength(1);
    expect(of('quarantined', { catalog, upstream: 'tides', tool: 'tide_alerts', key: 'manager', via: 'mcp' })).toHaveLength(1);
    expect(of('deregistered', { catalog, upstream: 'tides', key: 'manager', via: 'mcp', tenant: tenantA })).toHaveLength(1);
    expect(of('refused_address', { catalog, key: 'manager', via: 'mcp' }).length).toBeGreaterThanOrEqual(2);
    // REST's lines: the same events with the key, without via.
    const rest = of('registered', { catalog, upstream: 'tides', key: 'admin-b', tenant: tenantB });
    expect(rest).toHaveLength(1);
    expect(rest[0]!.via).toBeUndefined();
    expect(of('deregistered', { catalog, upstream: 'tides', key: 'other-tenant', via: 'mcp', tenant: tenantB })).toHaveLength(1);
  });

  it('never puts a credential value in any MCP answer or log line', () => {
    expect(answers.length).toBeGreaterThan(20);
    for (const answer of answers) {
      expect(answer).not.toContain(TOKEN);
      expect(answer).not.toContain(STDIO_SECRET);
    }
    const logged = JSON.stringify(logs);
    expect(logged).not.toContain(TOKEN);
    expect(logged).not.toContain(STDIO_SECRET);
    for (const key of Object.values(keys)) expect(logged).not.toContain(key);
  });

  it('answers broken management calls with an isError naming the problem, never an internal error (seeded)', { timeout: 120_000 }, async () => {
    const random = seededRandom(76);
    const nasty: unknown[] = [...HOSTILE_VALUES, 'x'.repeat(5_000), '..', '/', '%ZZ'];
    const client = await mcp(keys.manager);
    const samples: Record<string, Record<string, unknown>> = {
      register_upstream: { catalog: `${prefix}-fuzz`, name: 'f', url: 'http://127.0.0.2:9/mcp', headers: { 'X-Key': 'v' }, refresh_seconds: 60, trust: 'pin' },
      deregister_upstream: { catalog: `${prefix}-fuzz`, name: 'f' },
    };
    const failures: string[] = [];
    for (const [tool, sample] of Object.entries(samples)) {
      for (let i = 0; i < 40; i++) {
        const args = mutate(sample, random, nasty, ['extra', 'url', 'headers', 'trust']);
        const label = `${tool} ${JSON.stringify(args)?.slice(0, 160)}`;
        try {
          const result = await client.callTool({ name: tool, arguments: args as Record<string, unknown> });
          if (/internal error/i.test(JSON.stringify(result.content))) failures.push(`${label}: ${JSON.stringify(result.content).slice(0, 200)}`);
        } catch (error) {
          const { code, message } = error as { code?: number; message: string };
          if (code === -32603 || typeof code !== 'number') failures.push(`${label}: ${code} ${message.slice(0, 200)}`);
        }
      }
    }
    expect(failures, failures.join('\n')).toEqual([]);
    expect((await client.callTool({ name: 'search_tools', arguments: { query: 'tides' } })).isError).toBeFalsy();
  });
});
