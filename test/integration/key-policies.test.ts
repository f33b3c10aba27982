/**
 * Per-key policies (issue 76): a restricted key walks every route family, REST and MCP (the
 * meta-tools, resources and prompts, drafts included), and nothing outside its scope may show:
 * not a hidden tool's name, not another catalog, not a call that reaches an upstream, not a total
 * (tool count, tokens, words, embedding progress) that counts hidden tools. The routes
 * are enumerated from the app itself and the MCP server's lists, so a new route or meta-tool
 * without a row here fails the walk. Runs on the store the environment selects (PGlite, or
 * PostgreSQL with DATABASE_URL).
 */
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHostileUpstream } from '../fixtures/hostile-mcp-server.js';
import { createApp } from '../../src/http/app.js';
import { rpcAnswer, startTestApp, type TestApp } from '../helpers/app.js';
import { uniqueName } from '../helpers/database.js';
import { keysFile } from '../helpers/keys-file.js';
import { dropQueuePrefix, testRedisUrl } from '../helpers/queue.js';
import { sql } from 'drizzle-orm';
import { queryRows } from '../../src/store/database.js';
import { getCatalog } from '../../src/store/catalog-store.js';
import { writeVectors } from '../../src/store/embedding-store.js';
import { currentRecipe } from '../../src/embed/embed-documents.js';

const schema = (properties: Record<string, unknown>) => ({ type: 'object', properties });

/** What the narrow key must never be shown: tools it does not see, and the other catalog's. */
const HIDDEN_TOOLS = ['delete_order', 'refund_payment', 'b_secret_tool', 'delete_shipment'];

describe('per-key policies', () => {
  let app: TestApp;
  let keysOf: ReturnType<typeof keysFile>;
  const logs: Record<string, unknown>[] = [];
  const prefix = uniqueName('pol');
  const tenant = uniqueName('pol-tenant');
  const A = `${prefix}-a`;
  const B = `${prefix}-b`;
  const keys = {
    admin: `admin-${prefix}-0123456789`,
    narrow: `narrow-${prefix}-0123456789`,
    searcher: `search-${prefix}-0123456789`,
    manager: `manager-${prefix}-0123456789`,
    serverWriter: `servers-${prefix}-0123456789`,
  };
  const as = (key: string) => ({ authorization: `Bearer ${key}` });
  let shipping: Awaited<ReturnType<typeof startHostileUpstream>>;
  let payments: Awaited<ReturnType<typeof startHostileUpstream>>;
  const clients: Client[] = [];

  async function mcp(key: string, catalog?: string): Promise<Client> {
    const client = new Client({ name: 'policy-walk', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${app.url}/mcp${catalog ? `/${catalog}` : ''}`), { requestInit: { headers: as(key) } }));
    clients.push(client);
    return client;
  }

  beforeAll(async () => {
    keysOf = keysFile([
      { key: keys.admin, id: 'admin', tenant },
      {
        key: keys.narrow,
        id: 'narrow',
        tenant,
        catalogs: [A],
        tools: { deny: ['delete_*'] },
        servers: { deny: ['payments'] },
        write: false,
      },
      { key: keys.searcher, id: 'searcher', tenant, catalogs: [A], call: false, write: false },
      // The narrow key's scope, given management.
      { key: keys.manager, id: 'narrow-manager', tenant, catalogs: [A], tools: { deny: ['delete_*'] }, servers: { deny: ['payments'] }, manage: true },
      // Limited by servers alone: it sees every tool of the servers it sees.
      { key: keys.serverWriter, id: 'server-writer', tenant, catalogs: [A], servers: { deny: ['payments'] } },
    ]);
    shipping = await startHostileUpstream({
      host: '127.0.0.2',
      label: 'SHIPPING',
      tools: [
        { name: 'ship_order', description: 'Ship an order to the customer.', inputSchema: schema({ order: { type: 'string' } }) },
        // Served by an upstream the narrow key sees, outside its tools patterns.
        { name: 'delete_shipment', description: 'Delete the shipment of an order.', inputSchema: schema({ order: { type: 'string' } }) },
      ],
    });
    payments = await startHostileUpstream({
      host: '127.0.0.2',
      label: 'PAYMENTS',
      tools: [{ name: 'refund_payment', description: 'Refund the payment of an order.', inputSchema: schema({ order: { type: 'string' } }) }],
    });
    const logger = pino({ level: 'info' }, { write: (line: string) => void logs.push(JSON.parse(line)) });
    app = await startTestApp(
      { API_KEYS_FILE: keysOf.path, UPSTREAM_ALLOW: '127.0.0.2/32', CODE_MODE: 'on', MCP_DRAFTS: 'on', METRICS_TOKEN: 'metrics-token-0123456789' },
      { logger },
    );
    const admin = as(keys.admin);
    const orders = ['get_order', 'list_orders', 'cancel_order', 'update_order', 'delete_order'].map((name) => ({
      name,
      description: `${name.split('_')[0]} the order of a customer (an order of the shop).`,
      server: 'shop',
    }));
    expect((await app.request('PUT', `/v1/catalogs/${A}`, { tools: orders }, admin)).status).toBe(200);
    expect(
      (await app.request('PUT', `/v1/catalogs/${B}`, { tools: [{ name: 'b_secret_tool', description: 'Delete the order archive.' }] }, admin)).status,
    ).toBe(200);
    for (const [name, upstream] of [
      ['shipping', shipping],
      ['payments', payments],
    ] as const) {
      const put = await app.request('PUT', `/v1/catalogs/${A}/upstreams/${name}`, { url: upstream.url(), trust: 'auto' }, admin);
      expect(put.status, put.text).toBe(200);
    }
  }, 120_000);

  afterAll(async () => {
    await Promise.all(clients.map((client) => client.close().catch(() => {})));
    await app?.close();
    await Promise.all([shipping?.close(), payments?.close()]);
    keysOf.remove();
  });

  /** A raw JSON-RPC request (the drafts' methods are not the SDK client's). */
  async function rpc(key: string, path: string, method: string, params: Record<string, unknown>): Promise<{ result?: any; error?: any }> {
    const response = await app.request(
      'POST',
      path,
      { jsonrpc: '2.0', id: 1, method, params },
      {
        ...as(key),
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2025-11-25',
      },
    );
    return rpcAnswer(response);
  }

  /** Fails when an answer names a tool the key does not see, or (unless the request named it) the other catalog. */
  const noLeak = (label: string, text: string, requestNamesB = false) => {
    for (const secret of [...HIDDEN_TOOLS, ...(requestNamesB ? [] : [B])]) expect(text, `${label} leaks ${secret}`).not.toContain(secret);
  };

  /** Every route of the app, as express holds them: [method, path]. */
  function appRoutes(): [string, string][] {
    const found: [string, string][] = [];
    const walk = (stack: any[]) => {
      for (const layer of stack) {
        if (layer.route) {
          const paths: string[] = Array.isArray(layer.route.path) ? layer.route.path : [layer.route.path];
          const methods = Object.keys(layer.route.methods).filter((method) => method !== '_all');
          for (const path of paths) for (const method of layer.route.methods._all ? ['ALL'] : methods) found.push([method.toUpperCase(), path]);
        } else if (layer.handle?.stack) walk(layer.handle.stack);
      }
    };
    // A second app over the same deps, only for its routing table.
    walk((createApp(app.deps) as any).router.stack);
    return found;
  }

  it('walks every REST route with the narrow key: nothing outside its scope shows, every refusal is 403 or absent', async () => {
    const narrow = as(keys.narrow);
    const call = (method: string, path: string, body?: unknown) => app.request(method, path, body, narrow);
    // method + route template -> the requests that exercise it, and what each must answer.
    const WALK: Record<string, () => Promise<void>> = {
      'GET /v1/catalogs': async () => {
        const listed = await call('GET', '/v1/catalogs');
        expect(listed.status).toBe(200);
        expect(listed.body.catalogs.map((catalog: { name: string }) => catalog.name)).toContain(A);
        noLeak('catalog list', listed.text);
      },
      'GET /v1/catalogs/:catalog': async () => {
        const own = await call('GET', `/v1/catalogs/${A}`);
        expect(own.status).toBe(200);
        expect(own.body.upstreams.map((upstream: { name: string }) => upstream.name)).toEqual(['shipping']);
        expect((await call('GET', `/v1/catalogs/${B}`)).status).toBe(403);
        noLeak('catalog', own.text);
      },
      'PUT /v1/catalogs/:catalog': async () => expect((await call('PUT', `/v1/catalogs/${A}`, { tools: [] })).status).toBe(403),
      'PATCH /v1/catalogs/:catalog': async () => expect((await call('PATCH', `/v1/catalogs/${A}`, { code_mode: false })).status).toBe(403),
      'DELETE /v1/catalogs/:catalog': async () => expect((await call('DELETE', `/v1/catalogs/${B}`)).status).toBe(403),
      'GET /v1/catalogs/:catalog/tools': async () => {
        const names: string[] = [];
        let cursor: string | undefined;
        do {
          const page = await call('GET', `/v1/catalogs/${A}/tools?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
          expect(page.status).toBe(200);
          noLeak('tool page', page.text);
          names.push(...page.body.tools.map((tool: { name: string }) => tool.name));
          cursor = page.body.next_cursor ?? undefined;
        } while (cursor);
        expect(names.sort()).toEqual(['cancel_order', 'get_order', 'list_orders', 'ship_order', 'update_order']);
        expect((await call('GET', `/v1/catalogs/${B}/tools`)).status).toBe(403);
      },
      'POST /v1/catalogs/:catalog/tools': async () =>
        expect((await call('POST', `/v1/catalogs/${A}/tools`, { tools: [{ name: 'x', description: 'y' }] })).status).toBe(403),
      'GET /v1/catalogs/:catalog/tools/:name': async () => {
        const hidden = await call('GET', `/v1/catalogs/${A}/tools/delete_order`);
        const absent = await call('GET', `/v1/catalogs/${A}/tools/no_such_tool`);
        // A hidden tool is answered as an absent one: the same status and the same words.
        expect(hidden.status).toBe(404);
        expect(hidden.body.error.message.replace('delete_order', 'X')).toBe(absent.body.error.message.replace('no_such_tool', 'X'));
        expect((await call('GET', `/v1/catalogs/${A}/tools/refund_payment`)).status).toBe(404);
        expect((await call('GET', `/v1/catalogs/${A}/tools/get_order`)).status).toBe(200);
      },
      'DELETE /v1/catalogs/:catalog/tools/:name': async () => expect((await call('DELETE', `/v1/catalogs/${A}/tools/get_order`)).status).toBe(403),
      'POST /v1/catalogs/:catalog/search': async () => {
        const found = await call('POST', `/v1/catalogs/${A}/search`, { query: 'delete_order refund the payment of an order', top_k: 3 });
        expect(found.status).toBe(200);
        noLeak('search', found.text);
        // Filtered before the cut: still three.
        expect(found.body.results).toHaveLength(3);
        // Ranked as if the hidden tools were not listed: the best tool it sees is first in BM25's
        // list as explained, not behind the hidden delete_order and delete_shipment.
        const explained = await call('POST', `/v1/catalogs/${A}/search`, { query: 'delete the shipment of an order', top_k: 5, explain: true });
        expect(explained.status).toBe(200);
        const ranks = (explained.body.results as { explain: { bm25: { rank: number } | null } }[]).flatMap((result) =>
          result.explain.bm25 ? [result.explain.bm25.rank] : [],
        );
        expect(Math.min(...ranks)).toBe(1);
        noLeak('search', explained.text);
        expect((await call('POST', `/v1/catalogs/${B}/search`, { query: 'delete' })).status).toBe(403);
      },
      'POST /v1/feedback': async () => {
        const judged = await call('POST', '/v1/feedback', { catalog: A, query: 'remove an order', used: ['delete_order', 'get_order', 'no_such_tool'] });
        expect(judged.status).toBe(200);
        expect(judged.body.recorded).toEqual(['get_order']);
        expect(judged.body.unknown).toEqual(['delete_order', 'no_such_tool']);
        expect((await call('POST', '/v1/feedback', { catalog: B, query: 'x', used: ['b_secret_tool'] })).status).toBe(403);
      },
      'DELETE /v1/catalogs/:catalog/feedback': async () => expect((await call('DELETE', `/v1/catalogs/${A}/feedback`)).status).toBe(403),
      'GET /v1/catalogs/:catalog/upstreams': async () => {
        const listed = await call('GET', `/v1/catalogs/${A}/upstreams`);
        expect(listed.status).toBe(200);
        expect(listed.body.upstreams.map((upstream: { name: string }) => upstream.name)).toEqual(['shipping']);
        noLeak('upstreams', listed.text);
      },
      'GET /v1/catalogs/:catalog/upstreams/:name': async () => {
        expect((await call('GET', `/v1/catalogs/${A}/upstreams/shipping`)).status).toBe(200);
        const refused = await call('GET', `/v1/catalogs/${A}/upstreams/payments`);
        expect(refused.status).toBe(403);
        noLeak('upstream review', refused.text.replace('"payments"', ''));
      },
      'PUT /v1/catalogs/:catalog/upstreams/:name': async () =>
        expect((await call('PUT', `/v1/catalogs/${A}/upstreams/shipping`, { url: shipping.url() })).status).toBe(403),
      'POST /v1/catalogs/:catalog/upstreams/:name/approve': async () =>
        expect((await call('POST', `/v1/catalogs/${A}/upstreams/shipping/approve`, {})).status).toBe(403),
      'POST /v1/catalogs/:catalog/upstreams/:name/reject': async () =>
        expect((await call('POST', `/v1/catalogs/${A}/upstreams/shipping/reject`, {})).status).toBe(403),
      'DELETE /v1/catalogs/:catalog/upstreams/:name': async () => expect((await call('DELETE', `/v1/catalogs/${A}/upstreams/shipping`)).status).toBe(403),
      'POST /v1/catalogs/:catalog/upstreams/:name/oauth/start': async () =>
        expect((await call('POST', `/v1/catalogs/${A}/upstreams/shipping/oauth/start`, {})).status).toBe(403),
      // No key (an operator's browser): only a pending authorization's state opens it, and a forged one shows nothing.
      'GET /oauth/callback': async () => {
        const forged = await fetch(`${app.url}/oauth/callback?state=forged&code=x`);
        expect(forged.status).toBe(400);
        noLeak('oauth callback', await forged.text());
      },
      'POST /v1/tools/scan': async () => expect((await call('POST', '/v1/tools/scan', { tools: [{ name: 'x', description: 'y' }] })).status).toBe(200),
      'POST /v1/tool-search': async () => {
        const found = await call('POST', '/v1/tool-search', { catalog: A, query: 'delete_order refund the payment of an order', max_results: 3 });
        expect(found.status).toBe(200);
        expect(found.body.results).toHaveLength(3);
        noLeak('tool-search', found.text);
        const openai = await call('POST', '/v1/tool-search', { catalog: A, query: 'refund an order payment', format: 'openai' });
        noLeak('tool-search openai', openai.text);
        expect((await call('POST', '/v1/tool-search', { catalog: B, query: 'delete' })).status).toBe(403);
      },
      'POST /v1/tool-discovery/search': async () => {
        for (const path of ['/v1/tool-discovery/search', '/api/compress/tool-discovery']) {
          const chosen = await call('POST', path, {
            catalog: A,
            query: 'delete_order refund payment',
            max_tools: 4,
            always_keep: ['delete_order', 'refund_payment'],
          });
          expect(chosen.status).toBe(200);
          noLeak('selector', chosen.text);
          expect(chosen.body.selected_names).toHaveLength(4);
          // Padding past what the ranking found fills with visible tools only.
          const padded = await call('POST', path, { catalog: A, query: 'zzqx', max_tools: 20 });
          noLeak('selector padding', padded.text);
          expect(padded.body.selected_names.sort()).toEqual(['cancel_order', 'get_order', 'list_orders', 'ship_order', 'update_order']);
          expect((await call('POST', path, { catalog: B, query: 'delete' })).status).toBe(403);
        }
      },
      'POST /api/compress/tool-discovery': async () => {}, // walked with /v1/tool-discovery/search
      'GET /v1/jobs/:id': async () => expect((await call('GET', '/v1/jobs/some-job')).status).toBe(403),
      // The tenant's counts include what the key does not see.
      'GET /v1/usage': async () => {
        const refused = await call('GET', '/v1/usage');
        expect(refused.status).toBe(403);
        expect(refused.body.error.message).toMatch(/may not read the tenant's usage: it sees only some catalogs or tools/);
        noLeak('usage', refused.text);
      },
      'ALL /mcp': async () => {
        // The MCP test below walks the protocol; the HTTP route refuses another catalog before it is looked up.
        const refused = await fetch(`${app.url}/mcp/${B}`, {
          method: 'POST',
          headers: { ...narrow, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
        });
        expect(refused.status).toBe(403);
      },
      'ALL /mcp/:catalog': async () => {},
    };
    // Routes with no tenant data: not behind a key.
    const PUBLIC = new Set(['GET /healthz', 'GET /readyz', 'GET /metrics', 'GET /openapi.yaml', 'GET /docs', 'GET /ui']);
    const routes = appRoutes().map(([method, path]) => `${method} ${path}`);
    expect(routes.length).toBeGreaterThan(20);
    const unwalked = routes.filter((route) => !WALK[route] && !PUBLIC.has(route));
    expect(unwalked, 'routes the policy walk does not cover: add a row (and enforcement)').toEqual([]);
    for (const route of routes) if (WALK[route]) await WALK[route]!();
  }, 120_000);

  it('walks every MCP meta-tool, resource and prompt with the narrow key, at /mcp and /mcp/{catalog}', async () => {
    for (const catalog of [undefined, A]) {
      const client = await mcp(keys.narrow, catalog);
      const prefixOf = (name: string) => (catalog ? name : `${A}/${name}`);
      const text = (value: unknown) => JSON.stringify(value);
      const tools = (await client.listTools()).tools.map((tool) => tool.name);
      const WALK: Record<string, () => Promise<void>> = {
        search_tools: async () => {
          const found = (await client.callTool({ name: 'search_tools', arguments: { query: 'delete_order refund the payment of an order', limit: 3 } })) as any;
          noLeak('search_tools', text(found));
          expect(found.structuredContent.results).toHaveLength(3);
        },
        get_tool_details: async () => {
          const details = (await client.callTool({
            name: 'get_tool_details',
            arguments: { names: [prefixOf('delete_order'), prefixOf('refund_payment'), prefixOf('no_such_tool'), prefixOf('get_order')] },
          })) as any;
          const [hidden, server, absent, seen] = details.structuredContent.tools;
          expect([hidden.found, server.found, absent.found, seen.found]).toEqual([false, false, false, true]);
          expect(hidden.error.replace('delete_order', 'X')).toBe(absent.error.replace('no_such_tool', 'X'));
        },
        list_tools: async () => {
          const listed = (await client.callTool({ name: 'list_tools', arguments: {} })) as any;
          noLeak('list_tools', text(listed));
          expect(listed.structuredContent.names).toHaveLength(5);
        },
        call_tool: async () => {
          const before = payments.calls.length;
          const refused = (await client.callTool({ name: 'call_tool', arguments: { name: prefixOf('refund_payment'), arguments: { order: '1' } } })) as any;
          expect(refused.isError).toBe(true);
          expect(text(refused.content)).toMatch(/unknown tool/);
          expect(payments.calls.length).toBe(before);
          const shipped = (await client.callTool({ name: 'call_tool', arguments: { name: prefixOf('ship_order'), arguments: { order: '1' } } })) as any;
          expect(shipped.isError ?? false, text(shipped)).toBe(false);
        },
        run_code: async () => {
          const before = payments.calls.length;
          // The program names hidden tools and an absent one: each is refused in the same words.
          const names = [prefixOf('refund_payment'), prefixOf('delete_order'), `${B}/b_secret_tool`, prefixOf('no_such_tool')];
          const program = `const out = [];
            for (const name of ${JSON.stringify(names)}) {
              try { await callTool(name, { order: "1" }); out.push("called"); } catch (error) { out.push(String(error.message)); }
            }
            return out;`;
          const ran = (await client.callTool({ name: 'run_code', arguments: { code: program } })) as any;
          const answers: string[] = ran.structuredContent.result;
          expect(answers.map((answer, at) => answer.replace(names[at]!, 'X'))).toEqual(Array(4).fill(answers[3]!.replace(names[3]!, 'X')));
          expect(answers[3]).toMatch(/unknown tool/);
          expect(payments.calls.length).toBe(before);
        },
        x_amz_bedrock_agentcore_search: async () => {
          const found = (await client.callTool({
            name: 'x_amz_bedrock_agentcore_search',
            arguments: { query: 'delete_order refund the payment of an order' },
          })) as any;
          noLeak('agentcore search', text(found));
          expect(found.structuredContent.tools.length).toBeGreaterThan(0);
        },
      };
      const unwalked = tools.filter((tool) => !WALK[tool]);
      expect(unwalked, 'meta-tools the policy walk does not cover').toEqual([]);
      for (const tool of tools) await WALK[tool]!();

      // The drafts' methods: the catalog listing, descriptions and a call by address.
      const path = `/mcp${catalog ? `/${catalog}` : ''}`;
      const listing = await rpc(keys.narrow, path, 'tools/catalog', {});
      expect(listing.result?.tools?.length).toBe(5);
      noLeak('tools/catalog', text(listing));
      const searched = await rpc(keys.narrow, path, 'tools/catalog', { query: 'refund the payment of an order' });
      noLeak('tools/catalog query', text(searched));
      const described = await rpc(keys.narrow, path, 'tools/describe', { names: [prefixOf('delete_order')] });
      expect(described.error?.message).toMatch(/Unknown tool names/);
      const direct = (await client.callTool({ name: prefixOf('refund_payment'), arguments: { order: '1' } })) as any;
      expect(direct.isError).toBe(true);

      // Resources: only the key's catalog, without the tools it does not see.
      const templates = (await client.listResourceTemplates()).resourceTemplates.map((template) => template.name).sort();
      expect(templates).toEqual(['catalog-index', 'tool-definition']);
      const resources = (await client.listResources()).resources;
      noLeak('resources/list', text(resources));
      expect(resources.map((resource) => resource.uri)).toEqual([`toolsift://catalogs/${A}/index`]);
      const index = await client.readResource({ uri: `toolsift://catalogs/${A}/index` });
      noLeak('catalog index', text(index));
      expect(text(index)).toContain('get_order');
      await expect(client.readResource({ uri: `toolsift://catalogs/${B}/index` })).rejects.toThrow();
      await expect(client.readResource({ uri: `toolsift://catalogs/${A}/tools/delete_order` })).rejects.toThrow(/unknown tool/);
      expect((await client.readResource({ uri: `toolsift://catalogs/${A}/tools/get_order` })).contents).toHaveLength(1);

      // Prompts say nothing of the catalogs; each is read.
      for (const prompt of (await client.listPrompts()).prompts) {
        const got = await client.getPrompt({ name: prompt.name, arguments: prompt.arguments?.length ? { task: 'refund an order' } : {} });
        noLeak(`prompt ${prompt.name}`, text(got));
      }
    }
  }, 120_000);

  it('walks the management meta-tools, resource and prompt with a narrow manage key: only its catalogs and servers', async () => {
    const client = await mcp(keys.manager);
    const text = (value: unknown) => JSON.stringify(value);
    const tools = (await client.listTools()).tools.map((tool) => tool.name);
    const refused = async (name: string, args: Record<string, unknown>, pattern: RegExp) => {
      const answer = (await client.callTool({ name, arguments: args })) as any;
      expect(answer.isError, text(answer)).toBe(true);
      expect(answer.content[0].text).toMatch(pattern);
    };
    const MANAGEMENT: Record<string, () => Promise<void>> = {
      register_upstream: async () => {
        await refused('register_upstream', { catalog: B, name: 'shipping', url: shipping.url() }, /may not use catalog/);
        await refused('register_upstream', { catalog: A, name: 'payments', url: payments.url() }, /may not use upstream "payments"/);
      },
      deregister_upstream: async () => {
        await refused('deregister_upstream', { catalog: A, name: 'payments' }, /may not use upstream "payments"/);
        await refused('deregister_upstream', { catalog: B, name: 'payments' }, /may not use catalog/);
      },
      get_tool_details: async () => {
        const details = (await client.callTool({ name: 'get_tool_details', arguments: { names: [`${A}/ship_order`, `${A}/refund_payment`] } })) as any;
        expect(details.structuredContent.tools.map((tool: { found: boolean; credentials?: unknown }) => [tool.found, tool.credentials])).toEqual([
          [true, { headers: [], env: [] }],
          [false, undefined],
        ]);
      },
    };
    // The discovery meta-tools are walked with the narrow key above: the same scope.
    const WALKED_ABOVE = new Set(['search_tools', 'list_tools', 'call_tool', 'run_code', 'x_amz_bedrock_agentcore_search']);
    expect(
      tools.filter((tool) => !MANAGEMENT[tool] && !WALKED_ABOVE.has(tool)),
      'meta-tools the management walk does not cover',
    ).toEqual([]);
    for (const tool of Object.keys(MANAGEMENT)) await MANAGEMENT[tool]!();
    const status = await client.readResource({ uri: 'toolsift://upstreams/status' });
    noLeak('upstream status', text(status).replace(/may not use upstream/g, ''));
    expect(text(status)).not.toContain('payments');
    expect(JSON.parse((status.contents[0] as { text: string }).text).upstreams.map((upstream: { name: string }) => upstream.name)).toEqual(['shipping']);
    const prompt = await client.getPrompt({ name: 'upstream_status' });
    noLeak('upstream_status prompt', text(prompt));
    expect(text(prompt)).not.toContain('payments');
    // The upstreams are as they were.
    const listed = await app.request('GET', `/v1/catalogs/${A}/upstreams`, undefined, as(keys.admin));
    expect(listed.body.upstreams.map((upstream: { name: string }) => upstream.name)).toEqual(['payments', 'shipping']);
  });

  it('refuses a search-only key every call, with a clear error, and offers it no run_code', async () => {
    const client = await mcp(keys.searcher);
    const tools = (await client.listTools()).tools.map((tool) => tool.name);
    expect(tools).not.toContain('run_code');
    const before = shipping.calls.length;
    const refused = (await client.callTool({ name: 'call_tool', arguments: { name: `${A}/ship_order`, arguments: { order: '1' } } })) as any;
    expect(refused.isError).toBe(true);
    expect(refused.content[0].text).toMatch(/API key "searcher" may search and read tools but not call them/);
    const direct = (await client.callTool({ name: `${A}/ship_order`, arguments: { order: '1' } })) as any;
    expect(direct.isError).toBe(true);
    expect(shipping.calls.length).toBe(before);
    const found = (await client.callTool({ name: 'search_tools', arguments: { query: 'ship an order' } })) as any;
    expect(found.structuredContent.results.map((tool: { name: string }) => tool.name)).toContain(`${A}/ship_order`);
    const write = await app.request('PUT', `/v1/catalogs/${A}`, { tools: [] }, as(keys.searcher));
    expect(write.status).toBe(403);
    expect(write.body.error.message).toMatch(/API key "searcher" may not write catalogs/);
  });

  it('shares one catalog between keys: the admin key sees and calls what the narrow one cannot', async () => {
    const admin = as(keys.admin);
    const found = await app.request('POST', `/v1/catalogs/${A}/search`, { query: 'delete_order refund the payment of an order', top_k: 3 }, admin);
    expect(found.body.results.map((tool: { name: string }) => tool.name)).toContain('delete_order');
    const client = await mcp(keys.admin, A);
    const refunded = (await client.callTool({ name: 'call_tool', arguments: { name: 'refund_payment', arguments: { order: '1' } } })) as any;
    expect(refunded.isError ?? false).toBe(false);
  });

  it("tells the narrow key totals over the tools it sees: catalogs, a writer's answers, tool-search (index and store)", async () => {
    const admin = as(keys.admin);
    const narrow = as(keys.narrow);
    const db = app.deps.search.db;
    const summary = (await getCatalog(db, tenant, A))!;
    const SHAPES = ['anthropic', 'openai', 'as_sent'] as const;
    /** A's tools' definition tokens as stored, by name. */
    const sizes = async () =>
      new Map(
        (
          await queryRows<{ name: string; anthropic: number; openai: number; as_sent: number }>(
            db,
            sql`select ct.name, d.tokens_anthropic as anthropic, d.tokens_openai as openai, ct.tokens_as_sent as as_sent
                from catalog_tools ct join tool_documents d on d.hash = ct.hash where ct.catalog_id = ${summary.id}`,
          )
        ).map((row) => [row.name, row]),
      );
    const sumOf = (rows: Map<string, Record<(typeof SHAPES)[number], number>>, names: readonly string[]) =>
      Object.fromEntries(SHAPES.map((shape) => [shape, names.reduce((sum, name) => sum + Number(rows.get(name)![shape]), 0)]));
    const rows = await sizes();
    const hidden = ['delete_order', 'refund_payment', 'delete_shipment'];
    const seen = (await app.request('GET', `/v1/catalogs/${A}/tools?limit=100`, undefined, narrow)).body.tools.map((tool: { name: string }) => tool.name);
    expect([...rows.keys()].sort()).toEqual([...seen, ...hidden].sort());
    const seenTokens = sumOf(rows, seen);

    // The catalog and the list: the admin's are the whole catalog's, the narrow key's its tools'.
    const whole = (await app.request('GET', `/v1/catalogs/${A}`, undefined, admin)).body;
    expect(whole).toMatchObject({ tool_count: rows.size, definition_tokens: sumOf(rows, [...rows.keys()]) });
    const own = (await app.request('GET', `/v1/catalogs/${A}`, undefined, narrow)).body;
    expect(own).toMatchObject({ tool_count: seen.length, definition_tokens: seenTokens });
    for (const shape of SHAPES) expect(own.definition_tokens[shape]).toBeLessThan(whole.definition_tokens[shape]);
    const listed = async (key: Record<string, string>) =>
      (await app.request('GET', '/v1/catalogs', undefined, key)).body.catalogs.find((catalog: { name: string }) => catalog.name === A);
    expect(await listed(narrow)).toMatchObject({ tool_count: seen.length, definition_tokens: seenTokens });
    expect(await listed(admin)).toMatchObject({ tool_count: rows.size, definition_tokens: whole.definition_tokens });

    // A writer that sees the same tools: a setting's and a single tool's answers count its tools too.
    const manager = as(keys.manager);
    const patched = await app.request('PATCH', `/v1/catalogs/${A}`, { code_mode: whole.code_mode }, manager);
    expect(patched.status, patched.text).toBe(200);
    // How the catalog's call results are read applies to the tools it does not see: not its to change.
    const scan = await app.request('PATCH', `/v1/catalogs/${A}`, { result_scan: 'off', code_mode: whole.code_mode }, manager);
    expect(scan.status).toBe(403);
    expect(scan.body.error.message).toMatch(/API key "narrow-manager" sees only some tools, so it may not change the catalog's result_scan/);
    expect((await app.request('GET', `/v1/catalogs/${A}`, undefined, admin)).body.result_scan).toBeNull();
    expect(patched.body).toMatchObject({ tool_count: seen.length, definition_tokens: seenTokens });
    const pushed = await app.request(
      'POST',
      `/v1/catalogs/${A}/tools`,
      { tools: [{ name: 'note_order', description: 'Note on the order of a customer.' }] },
      manager,
    );
    expect(pushed.status, pushed.text).toBe(200);
    expect(pushed.body.catalog).toMatchObject({ tool_count: seen.length + 1, definition_tokens: sumOf(await sizes(), [...seen, 'note_order']) });
    expect((await app.request('DELETE', `/v1/catalogs/${A}/tools/note_order`, undefined, manager)).status).toBe(204);

    // tool-search: what the narrow key is offered, and the words only hidden tools hold.
    const toolSearch = (target: TestApp, key: Record<string, string>, query: string) =>
      target.request('POST', '/v1/tool-search', { catalog: A, query, max_results: 100 }, key);
    const current = (await getCatalog(db, tenant, A))!;
    expect(await app.deps.search.catalogIndexes!.get(current)).toBeDefined();
    // CATALOG_INDEX_MEMORY=0: no index is ever held, the store answers.
    const storeOnly = await startTestApp({ API_KEYS_FILE: keysOf.path, UPSTREAM_ALLOW: '127.0.0.2/32', CATALOG_INDEX_MEMORY: '0' });
    try {
      for (const [label, target] of [
        ['index', app],
        ['store', storeOnly],
      ] as const) {
        const everything = await toolSearch(target, admin, 'order');
        expect(everything.body.results.map((tool: { name: string }) => tool.name).sort(), label).toEqual([...rows.keys()].sort());
        expect(everything.body.tokens.offered, label).toBe(whole.definition_tokens.as_sent);
        const hiddenTokens = everything.body.results
          .filter((tool: { name: string }) => hidden.includes(tool.name))
          .reduce((sum: number, tool: { estimated_tokens: number }) => sum + tool.estimated_tokens, 0);
        const offered = (await toolSearch(target, narrow, 'order')).body.tokens.offered;
        expect(offered, label).toBe(whole.definition_tokens.as_sent - hiddenTokens);
        expect(offered, label).toBe(seenTokens.as_sent);
        // "refund" and "payment" are only refund_payment's words: unmatched for the key that does not see it.
        expect((await toolSearch(target, admin, 'refund payment order')).body.unmatched_terms, label).toEqual([]);
        const unmatched = (await toolSearch(target, narrow, 'refund payment order')).body.unmatched_terms;
        expect(unmatched, label).toHaveLength(2);
        expect(unmatched.join(' '), label).toMatch(/^refund\S* payment\S*$/);
      }
      expect(storeOnly.deps.search.catalogIndexes?.held(current)).toBeUndefined();
      expect(app.deps.search.catalogIndexes?.held(current)).toBeDefined();
    } finally {
      await storeOnly.close();
    }
  }, 120_000);

  it('audits each denial with the key id (never the key) and counts decisions by surface', async () => {
    const denials = logs.filter((line) => line.audit === 'policy');
    expect(denials.length).toBeGreaterThan(5);
    expect(denials.every((line) => line.outcome === 'deny' && typeof line.key === 'string')).toBe(true);
    expect(denials.some((line) => line.key === 'narrow' && line.action === 'see_catalog' && line.catalog === B)).toBe(true);
    expect(denials.some((line) => line.key === 'narrow' && line.action === 'see_tool' && line.via === 'get_tool_details')).toBe(true);
    expect(denials.some((line) => line.key === 'searcher' && line.action === 'call')).toBe(true);
    const everything = JSON.stringify(logs);
    for (const key of Object.values(keys)) expect(everything).not.toContain(key);
    const scraped = await (await fetch(`${app.url}/metrics`, { headers: { authorization: 'Bearer metrics-token-0123456789' } })).text();
    expect(scraped).toMatch(/toolsift_policy_decisions_total\{surface="rest",action="see_catalog",decision="deny"\} [1-9]/);
    expect(scraped).toMatch(/toolsift_policy_decisions_total\{surface="mcp",action="call",decision="deny"\} [1-9]/);
  });
  it("tells the narrow key an upstream's tool_count, pending and conflicts over the tools it sees, in every view", async () => {
    const admin = as(keys.admin);
    const narrow = as(keys.narrow);
    const manager = as(keys.manager);
    const tool = (name: string) => ({ name, description: `${name.replace(/_/g, ' ')} of a customer.`, inputSchema: schema({ order: { type: 'string' } }) });
    // Under pin, what shipping lists from now on waits: a tool the narrow key sees and one it does not.
    shipping.tools = [...shipping.tools, tool('track_order'), tool('delete_label')];
    // Names other sources hold, approved so they conflict: a pushed tool it sees, a pushed tool and a
    // hidden upstream's tool it does not.
    shipping.tools.push(tool('get_order'), tool('delete_order'), tool('refund_payment'));
    expect((await app.request('PUT', `/v1/catalogs/${A}/upstreams/shipping`, { url: shipping.url(), trust: 'pin' }, admin)).status).toBe(200);
    const conflicting = ['get_order', 'delete_order', 'refund_payment'];
    expect((await app.request('POST', `/v1/catalogs/${A}/upstreams/shipping/approve`, { tools: conflicting }, admin)).status).toBe(200);
    // A sync writes the conflicts' last_error.
    const synced = await app.request('PUT', `/v1/catalogs/${A}/upstreams/shipping`, { url: shipping.url(), trust: 'pin' }, admin);
    expect(synced.status, synced.text).toBe(200);

    // The admin key: the upstream's own counts.
    const full = { tool_count: 2, pending: 2 };
    expect(synced.body.upstream).toMatchObject(full);
    expect(synced.body.upstream.last_sync).toEqual({ added: expect.any(Number), changed: expect.any(Number), removed: expect.any(Number) });
    // A key limited by servers sees whole upstreams, and their last sync.
    const byServers = (await app.request('GET', `/v1/catalogs/${A}/upstreams/shipping`, undefined, as(keys.serverWriter))).body.upstream;
    expect(byServers.last_sync).toEqual(synced.body.upstream.last_sync);
    expect(synced.body.upstream.conflicts.map((conflict: { name: string }) => conflict.name).sort()).toEqual([...conflicting].sort());
    expect(synced.body.upstream.last_error).toMatch(/^3 tools not synced/);
    const shippingOf = (body: { upstreams: { name: string }[] }) => body.upstreams.find((upstream) => upstream.name === 'shipping');
    expect(shippingOf((await app.request('GET', `/v1/catalogs/${A}/upstreams`, undefined, admin)).body)).toMatchObject(full);
    expect((await app.request('GET', `/v1/catalogs/${A}/upstreams/shipping`, undefined, admin)).body.upstream).toMatchObject(full);
    expect(shippingOf((await app.request('GET', `/v1/catalogs/${A}`, undefined, admin)).body)).toMatchObject(full);

    // The narrow key: counts over what it is shown of the upstream's tools.
    const served = (await app.request('GET', `/v1/catalogs/${A}/tools?limit=100`, undefined, narrow)).body.tools
      .filter((listed: { server: string }) => listed.server === 'shipping')
      .map((listed: { name: string }) => listed.name);
    expect(served).toEqual(['ship_order']);
    const review = await app.request('GET', `/v1/catalogs/${A}/upstreams/shipping`, undefined, narrow);
    expect(review.body.tools.map((waiting: { name: string }) => waiting.name)).toEqual(['track_order']);
    const seen = {
      tool_count: served.length,
      pending: review.body.tools.length,
      conflicts: [{ name: 'get_order', held_by: 'a pushed tool' }],
      last_error: '1 tool not synced, the name held by another source of the catalog: get_order (a pushed tool)',
      // The last sync's counts are over every tool, removed ones too: not told to a key limited by tool names.
      last_sync: null,
    };
    const views: [string, unknown][] = [
      ['upstream list', shippingOf((await app.request('GET', `/v1/catalogs/${A}/upstreams`, undefined, narrow)).body)],
      ['upstream', review.body.upstream],
      ['catalog', shippingOf((await app.request('GET', `/v1/catalogs/${A}`, undefined, narrow)).body)],
    ];
    // A writer with the same limits may not register, change or remove the upstream: a registration
    // decides every tool the server lists (trust "auto" would serve delete_label), and a removal drops them.
    const refusal = /sees only some tools by name, so it may not register, change or remove upstreams/;
    for (const [method, path, body] of [
      ['PUT', `/v1/catalogs/${A}/upstreams/shipping`, { url: shipping.url(), trust: 'auto' }],
      ['DELETE', `/v1/catalogs/${A}/upstreams/shipping`, undefined],
      ['POST', `/v1/catalogs/${A}/upstreams/shipping/oauth/start`, {}],
    ] as const) {
      const refused = await app.request(method, path, body, manager);
      expect(refused.status, `${method} ${path}: ${refused.text}`).toBe(403);
      expect(refused.body.error.message).toMatch(refusal);
    }
    expect((await app.request('GET', `/v1/catalogs/${A}/upstreams/shipping`, undefined, admin)).body.upstream).toMatchObject({ ...full, trust: 'pin' });
    for (const [label, view] of views) {
      expect(view, label).toMatchObject(seen);
      noLeak(label, JSON.stringify(view));
    }

    // The MCP management status (resource and prompt) and register_upstream's answer.
    const client = await mcp(keys.manager);
    const status = await client.readResource({ uri: 'toolsift://upstreams/status' });
    const statusText = (status.contents[0] as { text: string }).text;
    const own = { tool_count: seen.tool_count, pending: seen.pending, conflicts: 1, pending_tools: [{ name: 'track_order', change: 'new', findings: [] }] };
    expect(JSON.parse(statusText).upstreams.find((upstream: { name: string }) => upstream.name === 'shipping')).toMatchObject(own);
    noLeak('upstream status', statusText);
    const prompt = JSON.stringify(await client.getPrompt({ name: 'upstream_status' }));
    expect(prompt).toContain(`${seen.tool_count} tools served; ${seen.pending} waiting for approval`);
    noLeak('upstream_status prompt', prompt);
    for (const [name, args] of [
      ['register_upstream', { catalog: A, name: 'shipping', url: shipping.url(), trust: 'auto' }],
      ['deregister_upstream', { catalog: A, name: 'shipping' }],
    ] as const) {
      const answer = (await client.callTool({ name, arguments: args })) as any;
      expect(answer.isError, JSON.stringify(answer)).toBe(true);
      expect(JSON.stringify(answer.content)).toMatch(refusal);
    }
    // A writer limited by servers alone sees every tool of the servers it sees: it registers them, and is told all of them.
    const registered = await app.request('PUT', `/v1/catalogs/${A}/upstreams/shipping`, { url: shipping.url(), trust: 'pin' }, as(keys.serverWriter));
    expect(registered.status, registered.text).toBe(200);
    expect(registered.body.upstream).toMatchObject(full);

    // An approval's answer: the narrow writer's count rises by the tool it approved, the admin's too.
    const approved = await app.request('POST', `/v1/catalogs/${A}/upstreams/shipping/approve`, { tools: ['track_order'] }, manager);
    expect(approved.status, approved.text).toBe(200);
    expect(approved.body.upstream).toMatchObject({ tool_count: seen.tool_count + 1, pending: 0, conflicts: seen.conflicts });
    expect((await app.request('GET', `/v1/catalogs/${A}/upstreams/shipping`, undefined, admin)).body.upstream).toMatchObject({ tool_count: 3, pending: 1 });
  }, 120_000);

  it('refuses a writer limited by servers a name a hidden tool holds with a 409 that says nothing of that tool', async () => {
    const writer = as(keys.serverWriter);
    // A tool of a hidden server, pushed by the admin, and one the payments upstream synced.
    const pushed = await app.request(
      'POST',
      `/v1/catalogs/${A}/tools`,
      { tools: [{ name: 'ledger_close', description: 'Close the ledger.', server: 'payments' }] },
      as(keys.admin),
    );
    expect(pushed.status, pushed.text).toBe(200);
    for (const name of ['ledger_close', 'refund_payment']) {
      const refused = await app.request('POST', `/v1/catalogs/${A}/tools`, { tools: [{ name, description: 'Mine now.' }] }, writer);
      expect(refused.status, refused.text).toBe(409);
      expect(refused.body.error).toMatchObject({ code: 'name_conflict' });
      expect(refused.body.error.message).toBe(
        `tool "${name}" of catalog "${A}" is held by a tool API key "server-writer" does not see: push it under another name`,
      );
      expect(refused.text).not.toMatch(/payments|Close the ledger|Refund the payment/);
    }
    // Nothing was written over them.
    const kept = await app.request('GET', `/v1/catalogs/${A}/tools/ledger_close`, undefined, as(keys.admin));
    expect(kept.body.description).toBe('Close the ledger.');
    expect((await app.request('DELETE', `/v1/catalogs/${A}/tools/ledger_close`, undefined, as(keys.admin))).status).toBe(204);
  });

  it('lets a narrow writer approve or reject only the waiting tools it sees; a hidden one named is answered as unknown', async () => {
    const admin = as(keys.admin);
    const manager = as(keys.manager);
    const tool = (name: string) => ({ name, description: `${name.replace(/_/g, ' ')} of a customer.`, inputSchema: schema({ order: { type: 'string' } }) });
    // Under pin these wait: two tools the narrow writer sees, one it does not.
    shipping.tools = [...shipping.tools, tool('weigh_order'), tool('pack_order'), tool('delete_parcel')];
    expect((await app.request('PUT', `/v1/catalogs/${A}/upstreams/shipping`, { url: shipping.url(), trust: 'pin' }, admin)).status).toBe(200);
    const waiting = async () =>
      (await app.request('GET', `/v1/catalogs/${A}/upstreams/shipping`, undefined, admin)).body.tools
        .filter((listed: { status: string }) => listed.status === 'pending')
        .map((listed: { name: string }) => listed.name);
    expect(await waiting()).toEqual(expect.arrayContaining(['weigh_order', 'pack_order', 'delete_parcel']));
    const decide = (decision: 'approve' | 'reject', body: unknown, key = manager) =>
      app.request('POST', `/v1/catalogs/${A}/upstreams/shipping/${decision}`, body, key);
    const hidden = ['delete_parcel', 'delete_label'];
    const noHidden = (label: string, text: string) => {
      noLeak(label, text);
      for (const name of hidden) expect(text, `${label} names ${name}`).not.toContain(name);
    };

    // A hidden tool named, alone, at its hash or beside one the key sees: answered as a name that does not exist, nothing decided.
    const unknown = await decide('approve', { tools: ['no_such_tool'] });
    expect(unknown.status).toBe(404);
    const hash = (await app.request('GET', `/v1/catalogs/${A}/upstreams/shipping`, undefined, admin)).body.tools.find(
      (listed: { name: string }) => listed.name === 'delete_parcel',
    ).hash;
    for (const [decision, tools] of [
      ['approve', ['delete_parcel']],
      ['reject', ['delete_parcel']],
      ['approve', [{ name: 'delete_parcel', hash }]],
      ['approve', ['pack_order', 'delete_parcel']],
    ] as const) {
      const refused = await decide(decision, { tools });
      expect(refused.status, `${decision} ${JSON.stringify(tools)}`).toBe(unknown.status);
      expect(refused.body.error.code).toBe(unknown.body.error.code);
      expect(refused.body.error.message.replace('delete_parcel', 'no_such_tool')).toBe(unknown.body.error.message);
    }
    expect(await waiting()).toEqual(expect.arrayContaining(['weigh_order', 'pack_order', 'delete_parcel']));
    expect(logs.some((line) => line.audit === 'policy' && line.key === 'narrow-manager' && line.action === 'write' && line.tool === 'delete_parcel')).toBe(
      true,
    );

    // No names: every waiting tool the key sees, and none it does not; the answer names none of those.
    const approved = await decide('approve', {});
    expect(approved.status, approved.text).toBe(200);
    expect([...approved.body.approved].sort()).toEqual(['pack_order', 'weigh_order']);
    noHidden('approve with no names', approved.text);
    const left = await waiting();
    expect(left).toContain('delete_parcel');
    expect(left).not.toContain('weigh_order');
    // Nothing it sees waits now: a rejection with no names decides nothing.
    const rejected = await decide('reject', {});
    expect(rejected.status, rejected.text).toBe(200);
    expect(rejected.body.rejected).toEqual([]);
    noHidden('reject with no names', rejected.text);
    expect(await waiting()).toEqual(left);

    // The admin key still decides it.
    const before = (await app.request('GET', `/v1/catalogs/${A}/upstreams/shipping`, undefined, admin)).body.upstream;
    const byAdmin = await decide('approve', { tools: ['delete_parcel'] }, admin);
    expect(byAdmin.status, byAdmin.text).toBe(200);
    expect(byAdmin.body).toMatchObject({ approved: ['delete_parcel'], upstream: { tool_count: before.tool_count + 1, pending: before.pending - 1 } });
  }, 120_000);
});

describe('per-key policies: embedding progress of a catalog being embedded', () => {
  let app: TestApp;
  let keysOf: ReturnType<typeof keysFile>;
  const tenant = uniqueName('pol-embed');
  const catalog = uniqueName('pol-embed');
  const prefix = uniqueName('pol-pending');
  const keys = { admin: `admin-${catalog}-0123456789`, narrow: `narrow-${catalog}-0123456789` };
  const as = (key: string) => ({ authorization: `Bearer ${key}` });
  // Content never stored before (vectors are shared by content across catalogs and tests).
  const tools = ['get_invoice', 'list_invoices', 'delete_invoice', 'delete_customer'].map((name) => ({
    name,
    description: `${name.replace(/_/g, ' ')} (${catalog}).`,
  }));

  beforeAll(async () => {
    keysOf = keysFile([
      { key: keys.admin, id: 'admin', tenant },
      { key: keys.narrow, id: 'narrow', tenant, tools: { deny: ['delete_*'] }, write: false },
    ]);
    // The model loads but nothing embeds: no worker in this process, and a queue prefix no other one
    // reads (the queue is what makes the catalog report its progress).
    app = await startTestApp({
      API_KEYS_FILE: keysOf.path,
      EMBED_MODEL: 'use-lite',
      EMBED_WORKER: 'off',
      REDIS_URL: testRedisUrl(),
      QUEUE_PREFIX: prefix,
    });
    expect((await app.request('PUT', `/v1/catalogs/${catalog}`, { tools }, as(keys.admin))).status).toBe(200);
  }, 120_000);

  afterAll(async () => {
    await app?.close();
    await dropQueuePrefix(prefix);
    keysOf.remove();
  });

  it("counts only the narrow key's tools, in GET /v1/catalogs/{catalog} and in a search's pending counts", async () => {
    const progress = async (key: string) => (await app.request('GET', `/v1/catalogs/${catalog}`, undefined, as(key))).body.embedding;
    const searched = async (key: string) => (await app.request('POST', `/v1/catalogs/${catalog}/search`, { query: 'list the invoices' }, as(key))).body;
    expect(await progress(keys.admin)).toMatchObject({ total: 4, done: 0, pending: 4, failed: 0 });
    expect(await progress(keys.narrow)).toMatchObject({ total: 2, done: 0, pending: 2, failed: 0 });
    expect(await searched(keys.admin)).toMatchObject({ degraded: 'embeddings_pending', embedding: { done: 0, total: 4 } });
    expect(await searched(keys.narrow)).toMatchObject({ degraded: 'embeddings_pending', embedding: { done: 0, total: 2 } });

    // One tool the key sees and both it does not get their vectors (written here as the queue would).
    const embedder = app.deps.search.embedder!;
    const rows = await queryRows<{ hash: string; name: string }>(
      app.deps.search.db,
      sql`select ct.hash, ct.name from catalog_tools ct join catalogs c on c.id = ct.catalog_id where c.tenant = ${tenant} and c.name = ${catalog}`,
    );
    const embedded = rows.filter((row) => row.name !== 'list_invoices');
    const vectors = await Promise.all(embedded.map(async (row) => ({ hash: row.hash, vector: await embedder.embedQuery(row.name.replace(/_/g, ' ')) })));
    await writeVectors(app.deps.search.db, currentRecipe(embedder.modelId), vectors);
    await new Promise((resolve) => setTimeout(resolve, 1100)); // a pending catalog is counted at most once a second
    expect(await progress(keys.admin)).toMatchObject({ total: 4, done: 3, pending: 1 });
    expect(await progress(keys.narrow)).toMatchObject({ total: 2, done: 1, pending: 1 });
    expect((await searched(keys.admin)).embedding).toEqual({ done: 3, total: 4 });
    expect((await searched(keys.narrow)).embedding).toEqual({ done: 1, total: 2 });

    // Every tool the key sees has its vector, a hidden one has none: its searches are whole, not
    // "pending" (which would tell it a tool it cannot see is still being embedded).
    const listInvoices = rows.find((row) => row.name === 'list_invoices')!;
    const hidden = rows.find((row) => row.name === 'delete_customer')!;
    await writeVectors(app.deps.search.db, currentRecipe(embedder.modelId), [{ hash: listInvoices.hash, vector: await embedder.embedQuery('list invoices') }]);
    await app.deps.search.db.execute(sql`delete from tool_embeddings where hash = ${hidden.hash}`);
    await new Promise((resolve) => setTimeout(resolve, 1100));
    expect(await progress(keys.admin)).toMatchObject({ total: 4, done: 3, pending: 1 });
    expect(await progress(keys.narrow)).toMatchObject({ total: 2, done: 2, pending: 0 });
    expect(await searched(keys.admin)).toMatchObject({ degraded: 'embeddings_pending', embedding: { done: 3, total: 4 } });
    const whole = await searched(keys.narrow);
    expect(whole.degraded).toBeUndefined();
    expect(whole.embedding).toBeUndefined();
  }, 120_000);
});
