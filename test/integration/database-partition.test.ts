/**
 * PostgreSQL behind a proxy that stops forwarding (a network partition): the service must never
 * fail closed. The selector answers from BM25 in process within its store deadline, /readyz says
 * 503 within a second, catalog endpoints answer 503 in the error shape within DB_TIMEOUT_MS, and
 * everything recovers by itself once the network heals. Needs a PostgreSQL server (CI has one).
 */
import type { ChildProcess } from 'node:child_process';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createDeps, type Deps } from '../../src/deps.js';
import { createApp } from '../../src/http/app.js';
import { getCatalog, upsertCatalogTools } from '../../src/store/catalog-store.js';
import { openPostgres } from '../../src/store/database.js';
import { scratchDatabase, uniqueName, type ScratchDatabase } from '../helpers/database.js';
import { freePort, startEverything } from '../helpers/process.js';
import { toDocuments } from '../helpers/queue.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';

/** The service on a scratch PostgreSQL database reached through a proxy that can blackhole it. */
async function startBehindProxy(label: string, env: Record<string, string>) {
  const scratch = await scratchDatabase('postgres', label);
  const target = new URL(scratch.url!);
  const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
  const proxied = Object.assign(new URL(scratch.url!), { port: String(proxy.port) }).toString();
  const config = loadConfig({ DB_TIMEOUT_MS: '1500', SELECTOR_BUDGET_MS: '100', DATABASE_URL: proxied, ...env });
  const deps = await createDeps(config, { database: openPostgres(proxied, 4, config.DB_TIMEOUT_MS), logger: pino({ level: 'silent' }) });
  const server = createApp(deps).listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  return { scratch, proxy, deps, server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

async function stopBehindProxy({ scratch, proxy, deps, server }: { scratch?: ScratchDatabase; proxy?: TcpProxy; deps?: Deps; server?: Server }) {
  proxy?.heal();
  if (server) await new Promise((resolve) => server.close(resolve));
  await deps?.close();
  await proxy?.close();
  await scratch?.drop();
}

/** Whether /readyz says 200 within 10 s (the network healed). */
async function untilReady(base: string): Promise<boolean> {
  for (let tries = 0; tries < 40; tries++) {
    if ((await fetch(`${base}/readyz`)).status === 200) return true;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return false;
}

describe('PostgreSQL stops answering (blackholed by a proxy)', () => {
  let scratch: ScratchDatabase;
  let proxy: TcpProxy;
  let deps: Deps;
  let server: Server;
  let base: string;
  const catalog = uniqueName('partition');
  const tools = Array.from({ length: 30 }, (_, index) => ({ name: `tool_${index}`, description: `Does task number ${index} with files and folders` }));

  beforeAll(async () => {
    ({ scratch, proxy, deps, server, base } = await startBehindProxy('partition', { EMBED_MODEL: 'none' }));
    const put = await fetch(`${base}/v1/catalogs/${catalog}`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ tools }),
    });
    expect(put.status).toBe(200);
  }, 60_000);

  afterAll(() => stopBehindProxy({ scratch, proxy, deps, server }));

  const timed = async (path: string, init?: RequestInit) => {
    const started = performance.now();
    const response = await fetch(`${base}${path}`, init);
    return { status: response.status, body: (await response.json()) as Record<string, any>, ms: performance.now() - started };
  };

  it('answers, degrades and recovers without a restart', async () => {
    proxy.blackhole();
    // The selector with tools it has never seen: BM25 in process, within its store deadline.
    const fresh = Array.from({ length: 20 }, (_, index) => ({ name: `fresh_${index}_${catalog}`, description: `Reads file number ${index}` }));
    const selected = await timed('/v1/tool-discovery/search', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ pattern: 'reads file number 7', top_k: 3, tools: fresh }),
    });
    expect(selected.status).toBe(200);
    expect(selected.body.selected_names[0]).toBe(`fresh_7_${catalog}`);
    expect(selected.ms).toBeLessThan(2_500);

    const ready = await timed('/readyz');
    expect(ready.status).toBe(503);
    expect(ready.ms).toBeLessThan(2_500);

    // The selector over a stored catalog has no inline tools to rank in process: a 503 in the error
    // shape within the deadline (the gateway's own fail-open decides), never a hang or a 500.
    const fromCatalog = await timed('/v1/tool-discovery/search', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ pattern: 'task number 7 with files', top_k: 3, catalog }),
    });
    expect(fromCatalog.status).toBe(503);
    expect(fromCatalog.body.error.code).toBe('service_unavailable');
    expect(fromCatalog.ms).toBeLessThan(5_000);

    const read = await timed(`/v1/catalogs/${catalog}`);
    expect(read.status).toBe(503);
    expect(read.body.error.code).toBe('service_unavailable');
    expect(read.ms).toBeLessThan(5_000);
    const usage = await timed('/v1/usage');
    expect(usage.status).toBe(503);
    expect(usage.body.error.code).toBe('service_unavailable');
    expect(usage.ms).toBeLessThan(5_000);

    proxy.heal();
    expect(await untilReady(base)).toBe(true);
    expect((await timed(`/v1/catalogs/${catalog}`)).status).toBe(200);
    expect((await timed('/v1/usage')).body.catalogs.used).toBeGreaterThan(0);
    const healed = await timed('/v1/tool-discovery/search', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ pattern: 'task number 7 with files', top_k: 3, catalog }),
    });
    expect(healed.status).toBe(200);
    expect(healed.body.selected_names[0]).toBe('tool_7');
  }, 60_000);

  it('a search joining the derivation a write started settles within the deadline, and derives once healed', async () => {
    // This replica searched the catalog (its index is in hand); another replica, on a connection of
    // its own, writes a tool; then the network to PostgreSQL goes dark and this replica hears of
    // the write (onCatalogChanged, as after its own write) and a search asks for the new revision.
    const indexes = deps.search.catalogIndexes!;
    const before = await getCatalog(deps.search.db, 'default', catalog);
    expect(await indexes.get(before!)).toBeDefined();
    const other = openPostgres(scratch.url!, 1);
    try {
      const write = await upsertCatalogTools(other.db, 'default', catalog, toDocuments([{ name: 'late_tool', description: 'Written by another replica' }]));
      expect(write.catalog.revision).toBeGreaterThan(before!.revision);
      proxy.blackhole();
      const started = performance.now();
      deps.catalog.onCatalogChanged!(write.catalog);
      const outcome = await indexes.forSearch(write.catalog, deps.search.db).then(
        (index) => (index ? 'derived' : 'none'),
        (error: Error) => `failed: ${error.message}`,
      );
      const ms = performance.now() - started;
      expect(outcome).toMatch(/^failed/);
      // DB_TIMEOUT_MS is 1,500 here; without a deadline this waited for as long as the partition.
      expect(ms).toBeLessThan(4_000);
      proxy.heal();
      let derived: string | undefined;
      for (let tries = 0; tries < 40 && derived !== 'derived'; tries++) {
        derived = await indexes.forSearch(write.catalog, deps.search.db).then(
          (index) => (index?.revision === write.catalog.revision ? 'derived' : 'none'),
          () => 'failed',
        );
        if (derived !== 'derived') await new Promise((resolve) => setTimeout(resolve, 250));
      }
      expect(derived).toBe('derived');
    } finally {
      proxy.heal();
      await other.close();
    }
  }, 60_000);
  it('the selector over a catalog this process has searched answers from memory, within its store deadline', async () => {
    const select = (body: Record<string, unknown>) =>
      timed('/v1/tool-discovery/search', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ catalog, ...body }) });
    // Searched while the store answers: the catalog's row is noted and its index read (in the background).
    for (let tries = 0; tries < 40 && !deps.search.catalogIndexes!.lastSeen('default', catalog); tries++) {
      expect((await select({ pattern: 'task number 7 with files', top_k: 3 })).status).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(deps.search.catalogIndexes!.lastSeen('default', catalog)).toBeDefined();
    const fallbacks = async () =>
      Number(/toolsift_selector_fallbacks_total\{reason="store_error"\} (\d+)/.exec(await (await fetch(`${base}/metrics`)).text())?.[1] ?? 0);
    const before = await fallbacks();
    proxy.blackhole();
    try {
      // BM25 over the catalog as last seen, past the store deadline (4 x SELECTOR_BUDGET_MS 100, at least 250 ms), not DB_TIMEOUT_MS.
      const ranked = await select({ pattern: 'task number 7 with files', top_k: 3 });
      expect(ranked.status).toBe(200);
      expect(ranked.body.selected_names).toHaveLength(3);
      expect(ranked.body.selected_names[0]).toBe('tool_7');
      expect(ranked.ms).toBeLessThan(1_400);
      expect(ranked.ms).toBeGreaterThanOrEqual(400);
      // The store just failed: the next turns answer from memory without waiting for it again (the
      // store breaker; one probe at a time asks the store), so well within the 400 ms store deadline.
      for (let turn = 0; turn < 3; turn++) {
        const next = await select({ pattern: 'task number 7 with files', top_k: 3 });
        expect(next.body.selected_names[0]).toBe('tool_7');
        expect(next.ms, `turn ${turn}`).toBeLessThan(400);
      }
      // always_keep first, then names the pattern mentions exactly, then the ranking.
      const kept = await select({ pattern: 'tool_12 please', top_k: 3, always_keep: ['tool_3', 'not_a_tool'] });
      expect(kept.body.selected_names.slice(0, 2)).toEqual(['tool_3', 'tool_12']);
      // Nothing matches: padded in the catalog's order, as the store pads; never empty.
      const padded = await select({ pattern: 'zzqx', top_k: 4 });
      expect(padded.body.selected_names).toEqual(['late_tool', 'tool_0', 'tool_1', 'tool_10']);
      expect(await fallbacks()).toBe(before + 6);
      // Other endpoints still say the truth: the store is not answering.
      expect((await timed(`/v1/catalogs/${catalog}`)).status).toBe(503);
      // A catalog this process never searched has nothing in memory: a 503, as before.
      const unknown = await select({ catalog: 'never-searched', pattern: 'x' });
      expect(unknown.status).toBe(503);
    } finally {
      proxy.heal();
    }
    expect(await untilReady(base)).toBe(true);
    // Healed: within the breaker's second (or once its probe is answered) the turns are the store's again.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const counted = await fallbacks();
    const after = await select({ pattern: 'task number 7 with files', top_k: 3 });
    expect(after.status).toBe(200);
    expect(after.body.selected_names[0]).toBe('tool_7');
    let fromStore = (await fallbacks()) === counted;
    for (let tries = 0; tries < 20 && !fromStore; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      const settled = await fallbacks();
      expect((await select({ pattern: 'task number 7 with files', top_k: 3 })).status).toBe(200);
      fromStore = (await fallbacks()) === settled;
    }
    expect(fromStore).toBe(true);
  }, 60_000);

  it('tool-search over a catalog this process has searched answers from memory, in every format', async () => {
    const search = (body: Record<string, unknown>) =>
      timed('/v1/tool-search', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ catalog, ...body }) });
    for (let tries = 0; tries < 40 && !deps.search.catalogIndexes!.lastSeen('default', catalog); tries++) {
      expect((await search({ query: 'task number 7 with files' })).status).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const asked = [
      { query: 'task number 7 with files', max_results: 3 },
      // Misspelled: the store's typo matching, which the answer from memory applies too.
      { query: 'tsak nmuber 7 wiht flies', max_results: 3 },
      { query: 'tool_12 please', max_results: 2 },
      { query: 'task number 7 with files zzqx', max_results: 4, budget_tokens: 60 },
      { query: 'task number 7 with files', max_results: 3, format: 'anthropic' },
      { query: 'task number 7 with files', max_results: 3, format: 'openrouter' },
      // The definitions of the tools it answers with, as this search found them.
      { query: 'task number 7 with files', max_results: 3, format: 'openai', call_id: 'call_1' },
    ];
    const healthy = await Promise.all(asked.map(async (body) => (await search(body)).body));
    expect(healthy[0]!.results[0].name).toBe('tool_7');
    const degraded = async () =>
      Number(
        /toolsift_search_degraded_total\{endpoint="tool_search",reason="store_error"\} (\d+)/.exec(await (await fetch(`${base}/metrics`)).text())?.[1] ?? 0,
      );
    const before = await degraded();
    proxy.blackhole();
    try {
      for (const [at, body] of asked.entries()) {
        const remembered = await search(body);
        expect(remembered.status, JSON.stringify(body)).toBe(200);
        // The first call waits for the selector's store deadline (400 ms), not DB_TIMEOUT_MS (1,500);
        // the breaker then answers the next ones from memory without waiting for the store.
        if (at === 0) expect(remembered.ms).toBeGreaterThanOrEqual(400);
        expect(remembered.ms, JSON.stringify(body)).toBeLessThan(at === 0 ? 1_400 : 400);
        if (body.format) {
          expect(remembered.body, JSON.stringify(body)).toEqual(healthy[at]);
          continue;
        }
        // The same tools and confidences (the store's ranking without the model, from the index), their
        // tokens as the store counted them, and the catalog's sum; said to be from memory.
        const { results, tokens, unmatched_terms } = healthy[at]!;
        const shown = (found: any) => [found.name, found.estimated_tokens, found.confidence];
        expect(remembered.body.results.map(shown), JSON.stringify(body)).toEqual(results.map(shown));
        expect(remembered.body.tokens).toEqual(tokens);
        expect(remembered.body.unmatched_terms).toEqual(unmatched_terms);
        expect(remembered.body.degraded).toBe('store_error');
      }
      expect(healthy[1]!.results[0].name).toBe('tool_7');
      expect(healthy[2]!.results[0]).toMatchObject({ name: 'tool_12', confidence: 1 });
      expect(healthy[3]!.unmatched_terms).toEqual(['zzqx']);
      expect(await degraded()).toBe(before + asked.length);
      expect(healthy[6]!.tools.map((tool: { name: string }) => tool.name)).toEqual(healthy[0]!.results.map((found: { name: string }) => found.name));
      expect(healthy[6]!.tools[0]).toMatchObject({
        type: 'function',
        name: 'tool_7',
        description: 'Does task number 7 with files and folders',
        defer_loading: true,
      });
      // openai's answer carries definitions: from memory, only tools a search here answered with.
      const catalogId = deps.search.catalogIndexes!.lastSeen('default', catalog)!.index.catalogId;
      const unseen = Array.from({ length: 30 }, (_, index) => `tool_${index}`).find((name) => !deps.search.seenTools!.get(catalogId, name))!;
      expect(unseen).toBeDefined();
      const named = await search({ query: `${unseen} please`, max_results: 1 });
      expect(named.body.results.map((found: { name: string }) => found.name)).toEqual([unseen]);
      const withoutIt = await search({ query: `${unseen} please`, max_results: 1, format: 'openai' });
      expect(withoutIt.status).toBe(200);
      expect(withoutIt.body).toMatchObject({ type: 'tool_search_output', tools: [] });
      // A catalog this process never searched: the store's 503, as before.
      expect((await search({ catalog: 'never-searched', query: 'x' })).status).toBe(503);
    } finally {
      proxy.heal();
    }
  }, 60_000);

  it('REST catalog search over a catalog this process has searched answers from memory too, as the other paths do', async () => {
    expect(await untilReady(base)).toBe(true);
    const search = (name: string, body: Record<string, unknown>) =>
      timed(`/v1/catalogs/${name}/search`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const healthy = await search(catalog, { query: 'task number 7 with files', top_k: 3 });
    expect(healthy.status).toBe(200);
    expect(healthy.body.results[0].name).toBe('tool_7');
    proxy.blackhole();
    try {
      const remembered = await search(catalog, { query: 'task number 7 with files', top_k: 3 });
      expect(remembered.status).toBe(200);
      expect(remembered.body.degraded).toBe('store_error');
      expect(remembered.body.results.map((tool: { name: string }) => tool.name)).toEqual(healthy.body.results.map((tool: { name: string }) => tool.name));
      // The tools a search here answered with keep their text.
      expect(remembered.body.results[0]).toMatchObject({ name: 'tool_7', description: healthy.body.results[0].description });
      // A catalog this process never searched: the store's 503.
      expect((await search('never-searched', { query: 'x' })).status).toBe(503);
    } finally {
      proxy.heal();
    }
  }, 60_000);
});

describe('PostgreSQL stops answering, over catalogs whose vectors this process holds', () => {
  let scratch: ScratchDatabase;
  let proxy: TcpProxy;
  let deps: Deps;
  let server: Server;
  let base: string;
  const subjects = ['weather forecast for a city', 'send an email message', 'read a file from disk', 'translate text to french', 'book a flight ticket'];
  const toolsOf = (count: number) =>
    Array.from({ length: count }, (_, index) => ({
      name: `tool_${index}`,
      description: index < subjects.length ? `Gives the ${subjects[index]}.` : `Records ledger entry ${index} in book ${index % 23}.`,
      server: `server_${index % 40}`,
    }));
  // Above EXACT_SCAN_MAX, whose search reads its vectors into process; and a small one, scanned in
  // SQL until its vectors are read after a search (search/catalog-vectors.ts).
  const catalogs = [
    { name: uniqueName('partition-hybrid'), tools: toolsOf(2_050) },
    { name: uniqueName('partition-small'), tools: toolsOf(120) },
  ];

  beforeAll(async () => {
    ({ scratch, proxy, deps, server, base } = await startBehindProxy('partition-hybrid', { EMBED_MODEL: 'use-lite', CATALOG_WARMUP: 'false' }));
    for (const { name, tools } of catalogs) {
      const put = await fetch(`${base}/v1/catalogs/${name}`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ tools }),
      });
      expect(put.status).toBe(200);
    }
    await deps.queue?.whenIdle();
  }, 300_000);

  afterAll(() => stopBehindProxy({ scratch, proxy, deps, server }));

  it("answers from memory with the store's own hybrid ranking, not BM25 alone", async () => {
    const select = async (catalog: string, pattern: string) => {
      const response = await fetch(`${base}/v1/tool-discovery/search`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ catalog, pattern, top_k: 5 }),
      });
      expect(response.status).toBe(200);
      return ((await response.json()) as { selected_names: string[] }).selected_names;
    };
    // Words no tool holds (the dense list's job), and words some do.
    const patterns = ['will it rain in Paris tomorrow', 'mail my colleague', 'weather forecast for Tokyo', 'ledger entry 7'];
    const healthy = new Map<string, string[]>();
    for (const { name } of catalogs) {
      // Searched while the store answers, until this process holds the catalog's index, vectors and server means.
      const row = (await getCatalog(deps.search.db, 'default', name))!;
      const held = () =>
        deps.search.catalogIndexes!.lastSeen('default', name) &&
        deps.search.catalogVectors!.held(row, 'use-lite') &&
        deps.search.serverStats!.held(row, 'use-lite');
      for (let tries = 0; tries < 60 && !held(); tries++) {
        await select(name, 'weather forecast');
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(held(), name).toBeTruthy();
      for (const pattern of patterns) healthy.set(`${name}: ${pattern}`, await select(name, pattern));
      expect(healthy.get(`${name}: will it rain in Paris tomorrow`)![0]).toBe('tool_0');
      expect(healthy.get(`${name}: mail my colleague`)![0]).toBe('tool_1');
    }
    // Tool-search ranks the same way: its names and confidences from memory are the store's.
    const search = async (catalog: string, query: string) => {
      const response = await fetch(`${base}/v1/tool-search`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ catalog, query, max_results: 5 }),
      });
      expect(response.status).toBe(200);
      return ((await response.json()) as { results: { name: string; confidence: number }[] }).results.map(({ name, confidence }) => [
        name,
        confidence.toFixed(4),
      ]);
    };
    const searched = new Map<string, string[][]>();
    for (const { name } of catalogs) for (const pattern of patterns) searched.set(`${name}: ${pattern}`, await search(name, pattern));
    const fallbacks = async () =>
      Number(/toolsift_selector_fallbacks_total\{reason="store_error"\} (\d+)/.exec(await (await fetch(`${base}/metrics`)).text())?.[1] ?? 0);
    const before = await fallbacks();
    proxy.blackhole();
    try {
      for (const { name } of catalogs)
        for (const pattern of patterns) expect(await select(name, pattern), `${name}: ${pattern}`).toEqual(healthy.get(`${name}: ${pattern}`));
      for (const { name } of catalogs)
        for (const pattern of patterns) expect(await search(name, pattern), `tool-search ${name}: ${pattern}`).toEqual(searched.get(`${name}: ${pattern}`));
      expect(await fallbacks()).toBe(before + catalogs.length * patterns.length);
    } finally {
      proxy.heal();
    }
  }, 120_000);
});

describe('MCP meta-tools while PostgreSQL stops answering', () => {
  let scratch: ScratchDatabase;
  let proxy: TcpProxy;
  let deps: Deps;
  let server: Server;
  let base: string;
  let everything: ChildProcess;
  const catalog = uniqueName('partition-mcp');
  const clients: Client[] = [];

  beforeAll(async () => {
    const port = await freePort();
    everything = await startEverything(port);
    // 1 MiB of indexes: the catalog's fits, the large one's never does (this process holds no memory of it).
    ({ scratch, proxy, deps, server, base } = await startBehindProxy('partition-mcp', {
      EMBED_MODEL: 'none',
      // The calls below would teach the ranking (issue 72) and move the scores this test holds equal
      // before, during and after the outage; learning has its own tests (feedback.test.ts).
      LEARNING: 'off',
      UPSTREAM_CALL_TIMEOUT_MS: '5000',
      CATALOG_INDEX_MEMORY: '1',
      UPSTREAM_ALLOW: '127.0.0.1/32',
    }));
    const put = await fetch(`${base}/v1/catalogs/${catalog}`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ tools: [{ name: 'local_note', description: 'Write a local note.' }] }),
    });
    expect(put.status).toBe(200);
    const large = Array.from({ length: 4_000 }, (_, index) => ({ name: `ledger_${index}`, description: `Echo back ledger entry ${index} as a message.` }));
    expect(
      (
        await fetch(`${base}/v1/catalogs/${catalog}-large`, {
          method: 'PUT',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ tools: large }),
        })
      ).status,
    ).toBe(200);
    const upstream = await fetch(`${base}/v1/catalogs/${catalog}/upstreams/everything`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ url: `http://127.0.0.1:${port}/mcp`, refresh_seconds: 3600 }),
    });
    expect(upstream.status).toBe(200);
  }, 120_000);

  afterAll(async () => {
    for (const client of clients) await client.close().catch(() => {});
    await stopBehindProxy({ scratch, proxy, deps, server });
    everything?.kill('SIGKILL');
  });

  const connect = async (path: string) => {
    const client = new Client({ name: 'partition-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${base}${path}`)));
    clients.push(client);
    return client;
  };
  type Answer = { structuredContent?: any; content: any; isError?: boolean };
  const call = async (client: Client, name: string, args: Record<string, unknown>) => (await client.callTool({ name, arguments: args })) as Answer;

  it('searches, describes and calls from memory what this process has seen; a new session connects', async () => {
    const one = await connect(`/mcp/${catalog}`);
    const all = await connect('/mcp');
    // While the store answers: searched until this process holds the catalog's index; echo described and called.
    for (let tries = 0; tries < 40 && !deps.search.catalogIndexes!.lastSeen('default', catalog); tries++) {
      expect((await call(one, 'search_tools', { query: 'echo back a message' })).isError).toBeFalsy();
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const healthy = await call(one, 'search_tools', { query: 'echo back a message', limit: 5 });
    expect(healthy.structuredContent.results.map((tool: { name: string }) => tool.name)).toContain('echo');
    expect(healthy.structuredContent.hint).toBeUndefined();
    const healthyAll = await call(all, 'search_tools', { query: 'echo back a message', limit: 5 });
    expect(healthyAll.structuredContent.results.map((tool: { name: string }) => tool.name)).toContain(`${catalog}/echo`);
    const ledger = await call(all, 'search_tools', { query: 'ledger entry 7', limit: 5 });
    expect(ledger.structuredContent.results[0].name).toBe(`${catalog}-large/ledger_7`);
    expect(deps.search.catalogIndexes!.lastSeen('default', `${catalog}-large`)).toBeUndefined();
    const healthyList = await call(one, 'list_tools', {});
    expect(healthyList.structuredContent.names).toContain('get-sum');
    const described = await call(one, 'get_tool_details', { names: ['echo'] });
    expect(JSON.stringify(described.structuredContent)).toContain('"message"');
    expect((await call(one, 'call_tool', { name: 'echo', arguments: { message: 'before' } })).isError).toBeFalsy();
    expect((await call(all, 'call_tool', { name: `${catalog}/echo`, arguments: { message: 'before' } })).isError).toBeFalsy();

    const degraded = async () =>
      Number(
        /toolsift_search_degraded_total\{endpoint="mcp_search_tools",reason="store_error"\} (\d+)/.exec(await (await fetch(`${base}/metrics`)).text())?.[1] ??
          0,
      );
    const before = await degraded();
    proxy.blackhole();
    try {
      // A new session at the catalog's endpoint: its row as last read here, not the store's 503.
      const later = await connect(`/mcp/${catalog}`);
      for (const client of [one, later]) {
        const remembered = await call(client, 'search_tools', { query: 'echo back a message', limit: 5 });
        expect(remembered.isError, JSON.stringify(remembered.content)).toBeFalsy();
        const names = remembered.structuredContent.results.map((tool: { name: string }) => tool.name);
        expect(names).toEqual(healthy.structuredContent.results.map((tool: { name: string }) => tool.name));
        // echo was looked up here, and all of them were found here: their descriptions and parameters as the store gave them.
        const echo = remembered.structuredContent.results.find((tool: { name: string }) => tool.name === 'echo');
        expect(echo).toMatchObject({ server: 'everything', parameters: ['message'] });
        expect(echo.description).not.toBe('');
        const text = (answer: Answer) => answer.structuredContent.results.map((tool: any) => [tool.name, tool.server, tool.description, tool.parameters]);
        expect(text(remembered)).toEqual(text(healthy));
        expect(remembered.structuredContent.hint).toContain('store is not answering');
        const called = await call(client, 'call_tool', { name: 'echo', arguments: { message: 'during the outage' } });
        expect(called.isError, JSON.stringify(called.content)).toBeFalsy();
        expect(JSON.stringify(called.content)).toContain('during the outage');
        expect(JSON.stringify((await call(client, 'get_tool_details', { names: ['echo'] })).structuredContent)).toContain('"message"');
      }
      // The tenant's endpoint: its catalogs as last listed here; the large one, of which this process
      // holds no index, adds nothing, and the other answers as it did.
      const acrossAll = await call(all, 'search_tools', { query: 'echo back a message', limit: 5 });
      expect(acrossAll.isError, JSON.stringify(acrossAll.content)).toBeFalsy();
      const ownNames = (answer: Answer) =>
        answer.structuredContent.results.map((tool: { name: string }) => tool.name).filter((name: string) => name.startsWith(`${catalog}/`));
      expect(ownNames(acrossAll).slice(0, ownNames(healthyAll).length)).toEqual(ownNames(healthyAll));
      const noLedger = await call(all, 'search_tools', { query: 'ledger entry 7', limit: 5 });
      expect(noLedger.isError, JSON.stringify(noLedger.content)).toBeFalsy();
      expect(JSON.stringify(noLedger.structuredContent.results)).not.toContain('-large/');
      expect(noLedger.structuredContent.hint).toContain('store is not answering');
      expect((await call(all, 'call_tool', { name: `${catalog}/echo`, arguments: { message: 'across' } })).isError).toBeFalsy();
      expect(await degraded()).toBe(before + 4);
      // A tool a search here answered with, never looked up: described from that answer.
      const found = healthy.structuredContent.results.find((tool: { name: string }) => tool.name !== 'echo');
      const foundDetails = await call(one, 'get_tool_details', { names: [found.name] });
      expect(foundDetails.isError, JSON.stringify(foundDetails.content)).toBeFalsy();
      expect(JSON.stringify(foundDetails.structuredContent)).toContain(JSON.stringify(found.description).slice(1, -1));
      // A tool never found nor looked up here, of an upstream whose row was read with echo: called.
      const summed = await call(one, 'call_tool', { name: 'get-sum', arguments: { a: 2, b: 40 } });
      expect(summed.isError, JSON.stringify(summed.content)).toBeFalsy();
      expect(JSON.stringify(summed.content)).toContain('42');
      // local_note has no server: no upstream runs it, as the store would say.
      const local = await call(one, 'call_tool', { name: 'local_note', arguments: {} });
      expect(local.isError).toBe(true);
      expect(JSON.stringify(local.content)).toContain('has no upstream MCP server registered');
      // What this process never read is the store's to answer: an isError naming it, not a hang or a crash.
      const catalogId = deps.search.catalogIndexes!.lastSeen('default', catalog)!.index.catalogId;
      expect(deps.search.seenTools!.get(catalogId, 'get-sum')).toBeUndefined();
      const unseen = await call(one, 'get_tool_details', { names: ['get-sum'] });
      expect(unseen.isError).toBe(true);
      expect(JSON.stringify(unseen.content)).toContain('the database did not answer in time');
      // The catalog's names as its index holds them, in the store's order; at /mcp, the large catalog
      // of which this process holds no index leaves the list to the store: a list must not leave it out.
      const listed = await call(one, 'list_tools', {});
      expect(listed.isError, JSON.stringify(listed.content)).toBeFalsy();
      expect(listed.structuredContent).toEqual(healthyList.structuredContent);
      const onEverything = await call(one, 'list_tools', { server: 'everything' });
      expect(onEverything.structuredContent.names).toEqual(healthyList.structuredContent.names.filter((name: string) => name !== 'local_note'));
      const listedAll = await call(all, 'list_tools', {});
      expect(listedAll.isError).toBe(true);
      expect(JSON.stringify(listedAll.content)).toContain('the database did not answer in time');
      // A catalog this process never read: the store's 503 for the session.
      await expect(connect('/mcp/never-read')).rejects.toThrow();
    } finally {
      proxy.heal();
    }
    expect(await untilReady(base)).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const after = await call(one, 'search_tools', { query: 'echo back a message', limit: 5 });
    expect(after.structuredContent).toEqual(healthy.structuredContent);
    expect(JSON.stringify((await call(one, 'get_tool_details', { names: ['local_note'] })).structuredContent)).toContain('local note');
  }, 120_000);
});
