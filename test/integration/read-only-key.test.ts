/**
 * A key given `call: "read_only"` calls only the tools whose approved definition declares
 * `annotations.readOnlyHint: true`, on every call path (call_tool, a run_code program's calls:
 * discovery.ts callTool), and nothing reaches the upstream for the others; the hint it judges is the
 * approved one, so an upstream that marks a tool read-only later gets no call through before an
 * operator approves the change (the changed definition waits in quarantine). Runs on the store the environment selects.
 */
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHostileUpstream } from '../fixtures/hostile-mcp-server.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { uniqueName } from '../helpers/database.js';
import { keysFile } from '../helpers/keys-file.js';

const schema = { type: 'object', properties: { order: { type: 'string' } } };

describe('a read-only key', () => {
  let app: TestApp;
  let keysOf: ReturnType<typeof keysFile>;
  let shop: Awaited<ReturnType<typeof startHostileUpstream>>;
  const logs: Record<string, unknown>[] = [];
  const clients: Client[] = [];
  const tenant = uniqueName('ro-tenant');
  const catalog = uniqueName('ro');
  const keys = { admin: `admin-${catalog}-0123456789`, reader: `reader-${catalog}-0123456789` };
  const as = (key: string) => ({ authorization: `Bearer ${key}` });

  async function mcp(key: string): Promise<Client> {
    const client = new Client({ name: 'read-only-key', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${app.url}/mcp/${catalog}`), { requestInit: { headers: as(key) } }));
    clients.push(client);
    return client;
  }
  const callTool = async (client: Client, name: string) =>
    (await client.callTool({ name: 'call_tool', arguments: { name, arguments: { order: '7' } } })) as { isError?: boolean; content: { text: string }[] };

  beforeAll(async () => {
    keysOf = keysFile([
      { key: keys.admin, id: 'admin', tenant },
      { key: keys.reader, id: 'reader', tenant, call: 'read_only' },
    ]);
    shop = await startHostileUpstream({
      host: '127.0.0.2',
      label: 'SHOP',
      tools: [
        { name: 'get_order', description: 'Read an order.', inputSchema: schema, annotations: { readOnlyHint: true } },
        { name: 'cancel_order', description: 'Cancel an order.', inputSchema: schema, annotations: { readOnlyHint: false, destructiveHint: true } },
        { name: 'ship_order', description: 'Ship an order.', inputSchema: schema },
      ],
    });
    const logger = pino({ level: 'info' }, { write: (line: string) => void logs.push(JSON.parse(line)) });
    app = await startTestApp({ API_KEYS_FILE: keysOf.path, UPSTREAM_ALLOW: '127.0.0.2/32', CODE_MODE: 'on' }, { logger });
    expect((await app.request('PUT', `/v1/catalogs/${catalog}`, { tools: [] }, as(keys.admin))).status).toBe(200);
    const put = await app.request('PUT', `/v1/catalogs/${catalog}/upstreams/shop`, { url: shop.url() }, as(keys.admin));
    expect(put.status, put.text).toBe(200);
  }, 120_000);

  afterAll(async () => {
    await Promise.all(clients.map((client) => client.close().catch(() => {})));
    await app?.close();
    await shop?.close();
    keysOf.remove();
  });

  it('calls a tool that declares readOnlyHint, and no other, on call_tool and in a program', async () => {
    const client = await mcp(keys.reader);
    const read = await callTool(client, 'get_order');
    expect(read.isError ?? false).toBe(false);
    expect(read.content[0]!.text).toContain('SHOP get_order');
    const before = shop.calls.length;
    for (const name of ['cancel_order', 'ship_order']) {
      const refused = await callTool(client, name);
      expect(refused.isError).toBe(true);
      expect(refused.content[0]!.text).toBe(
        `API key "reader" may call only read-only tools (call: "read_only"): "${name}" does not declare annotations.readOnlyHint; nothing was sent`,
      );
    }
    const program = `
      const read = await tools.get_order({ order: '7' });
      try { await tools.cancel_order({ order: '7' }); return 'cancelled'; } catch (error) { return [read, String(error.message)]; }`;
    const ran = (await client.callTool({ name: 'run_code', arguments: { code: program } })) as { isError?: boolean; content: { text: string }[] };
    expect(ran.isError ?? false).toBe(false);
    expect(ran.content.map((part) => part.text).join('\n')).toMatch(/may call only read-only tools[\s\S]*cancel_order/);
    // Only the read-only tool reached the upstream: the program's first call.
    expect(shop.calls.slice(before).map((call) => call.name)).toEqual(['get_order']);
    // Each refusal is an audit line with the key's id.
    const denials = logs.filter((line) => line.audit === 'policy' && line.key === 'reader' && line.action === 'call' && line.outcome === 'deny');
    expect(new Set(denials.map((line) => line.tool))).toEqual(new Set(['cancel_order', 'ship_order']));
    // A key with full access calls them all.
    expect((await callTool(await mcp(keys.admin), 'ship_order')).isError ?? false).toBe(false);
  });

  it('judges the approved definition: a tool the upstream marks read-only later waits for approval first', async () => {
    const client = await mcp(keys.reader);
    shop.tools = shop.tools.map((tool) => (tool.name === 'ship_order' ? { ...tool, annotations: { readOnlyHint: true } } : tool));
    // Listed again (the same URL keeps the pins): the changed definition waits in quarantine.
    const synced = await app.request('PUT', `/v1/catalogs/${catalog}/upstreams/shop`, { url: shop.url() }, as(keys.admin));
    expect(synced.status, synced.text).toBe(200);
    const before = shop.calls.length;
    expect((await callTool(client, 'ship_order')).isError).toBe(true);
    expect(shop.calls.length).toBe(before);
    expect((await app.request('POST', `/v1/catalogs/${catalog}/upstreams/shop/approve`, {}, as(keys.admin))).status).toBe(200);
    expect((await callTool(client, 'ship_order')).isError ?? false).toBe(false);
    expect(shop.calls.slice(before).map((call) => call.name)).toEqual(['ship_order']);
  });
});
