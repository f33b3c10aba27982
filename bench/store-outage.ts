/**
 * The gateway selector over a stored catalog while PostgreSQL stops answering (a network
 * partition: a TCP proxy that stops forwarding, test/helpers/tcp-proxy.ts). It times the selector's
 * turns (`POST /v1/tool-discovery/search` with `catalog`) with the store answering, then during the
 * partition without the store breaker (search/store-breaker.ts: each turn waits for the store
 * deadline, as before it) and with it, and how many of each answer's names are the healthy
 * answer's (the answer from memory is the hybrid ranking where this process holds the catalog's
 * vectors, else BM25 alone). Then the same for tool-search over the catalog (`POST /v1/tool-search`,
 * format `anthropic`: a provider hook's call), which waits for the same store deadline; and MCP
 * `search_tools` at `/mcp/{catalog}` (an agent host's call, the official SDK client), with the
 * breaker only (without it, each call would wait DB_TIMEOUT_MS). Then it heals the partition and
 * counts the turns until one is the store's again.
 *
 *   npm run bench:outage -- [--dataset <dir>] [--queries 60] [--model use-lite|none]
 *                            [--pg postgres://postgres@127.0.0.1:5432]
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import pg from 'pg';
import { openPostgres } from '../src/store/database.js';
import { startTcpProxy } from '../test/helpers/tcp-proxy.js';
import { startInProcess } from './lib/in-process.js';
import { summarize } from './lib/stats.js';

const { values } = parseArgs({
  options: {
    dataset: { type: 'string', default: fileURLToPath(new URL('../../shared/eval/toolbench_stable', import.meta.url)) },
    queries: { type: 'string', default: '60' },
    model: { type: 'string', default: 'use-lite' },
    pg: { type: 'string', default: 'postgres://postgres@127.0.0.1:5432' },
  },
});

const lines = (file: string) =>
  readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
const queries = lines(`${values.dataset}/queries.dev.jsonl`)
  .slice(0, Number(values.queries))
  .map((query) => String(query.query));
const TOP_K = 5;
const DB_TIMEOUT_MS = 5_000;

const name = `toolsift_outage_${Date.now().toString(36)}${randomBytes(3).toString('hex')}`;
const admin = new pg.Client({ connectionString: `${values.pg}/postgres` });
await admin.connect();
await admin.query(`create database "${name}"`);
const target = new URL(`${values.pg}/${name}`);
const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
const proxied = Object.assign(new URL(target), { port: String(proxy.port) }).toString();
const database = openPostgres(proxied, 10, DB_TIMEOUT_MS);
await database.migrate();
// The service's own defaults: SELECTOR_BUDGET_MS 100, so a store deadline of 400 ms.
const service = await startInProcess(
  { EMBED_MODEL: values.model!, SELECTOR_BUDGET_MS: '100', DB_TIMEOUT_MS: String(DB_TIMEOUT_MS), DATABASE_URL: proxied },
  database,
);
const breaker = service.deps.search.storeBreaker;
const catalog = 'outage';

const call = async (method: string, path: string, body?: unknown) => {
  const response = await fetch(`${service.base}${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, body: text ? (JSON.parse(text) as Record<string, any>) : {} };
};
const fallbacks = async () =>
  Number(/toolsift_selector_fallbacks_total\{reason="store_error"\} (\d+)/.exec(await (await fetch(`${service.base}/metrics`)).text())?.[1] ?? 0);
const select = async (pattern: string) => {
  const started = performance.now();
  const { status, body } = await call('POST', '/v1/tool-discovery/search', { catalog, pattern, top_k: TOP_K });
  return { status, ms: performance.now() - started, names: (body.selected_names ?? []) as string[] };
};
const toolSearch = async (query: string) => {
  const started = performance.now();
  const { status, body } = await call('POST', '/v1/tool-search', { catalog, query, max_results: TOP_K, format: 'anthropic' });
  return { status, ms: performance.now() - started, names: ((body.content ?? []) as { tool_name: string }[]).map((block) => block.tool_name) };
};

let mcp: Client | undefined;
const mcpSearch = async (query: string) => {
  const started = performance.now();
  const answer = await mcp!.callTool({ name: 'search_tools', arguments: { query, limit: TOP_K } });
  const results = ((answer.structuredContent as { results?: { name: string }[] } | undefined)?.results ?? []).map((tool) => tool.name);
  return { status: answer.isError ? 503 : 200, ms: performance.now() - started, names: results };
};

interface Phase {
  ms: ReturnType<typeof summarize>;
  answered: number;
  /** Mean share of an answer's names that are in the healthy answer to the same query. */
  overlap: number;
}

async function phase(healthy?: Map<string, string[]>, ask = select): Promise<{ report: Phase; answers: Map<string, string[]> }> {
  const answers = new Map<string, string[]>();
  const samples: number[] = [];
  let answered = 0;
  let overlap = 0;
  for (const query of queries) {
    const { status, ms, names } = await ask(query);
    samples.push(ms);
    if (status === 200) answered++;
    answers.set(query, names);
    const good = healthy?.get(query);
    if (good) overlap += names.filter((name) => good.includes(name)).length / Math.max(1, good.length);
  }
  return { report: { ms: summarize(samples), answered, overlap: healthy ? overlap / queries.length : 1 }, answers };
}

const round1 = (ms: number) => Math.round(ms * 10) / 10;
const describe = (label: string, { ms, answered, overlap }: Phase) =>
  `${label.padEnd(44)} p50 ${round1(ms.p50)} p90 ${round1(ms.p90)} p99 ${round1(ms.p99)} max ${round1(ms.max)} ms; answered ${answered}/${ms.n}; names shared with the healthy answer ${Math.round(overlap * 100)}%`;

try {
  const put = await call('PUT', `/v1/catalogs/${catalog}`, { tools: lines(`${values.dataset}/catalog.jsonl`) });
  if (put.status !== 200) throw new Error(`PUT answered ${put.status}`);
  while (values.model !== 'none') {
    const { body } = await call('GET', `/v1/catalogs/${catalog}`);
    if (body.embedding.done + body.embedding.failed >= body.embedding.total) break;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  for (const query of queries) await select(query); // untimed: the index read, query embeddings cached
  const healthy = await phase();
  const searched = await phase(undefined, toolSearch);
  mcp = new Client({ name: 'bench-outage', version: '1.0.0' });
  await mcp.connect(new StreamableHTTPClientTransport(new URL(`${service.base}/mcp/${catalog}`)));
  const mcpHealthy = await phase(undefined, mcpSearch);
  const report: Record<string, Phase | number> = { healthy: healthy.report, tool_search_healthy: searched.report, mcp_search_healthy: mcpHealthy.report };
  proxy.blackhole();
  service.deps.search.storeBreaker = undefined;
  report.partition_no_breaker = (await phase(healthy.answers)).report;
  service.deps.search.storeBreaker = breaker;
  report.partition_breaker = (await phase(healthy.answers)).report;
  service.deps.search.storeBreaker = undefined;
  report.tool_search_partition_no_breaker = (await phase(searched.answers, toolSearch)).report;
  service.deps.search.storeBreaker = breaker;
  report.tool_search_partition_breaker = (await phase(searched.answers, toolSearch)).report;
  report.mcp_search_partition_breaker = (await phase(mcpHealthy.answers, mcpSearch)).report;
  // Healed, the breaker open and its probe waiting: turns one after another until one is the store's (the fallback counter stands still).
  proxy.heal();
  const healed = performance.now();
  let turns = 0;
  for (;;) {
    const before = await fallbacks();
    turns++;
    await select(queries[turns % queries.length]!);
    if ((await fallbacks()) === before) break;
    if (performance.now() - healed > 30_000) throw new Error("no turn was the store's 30 s after healing");
  }
  report.healed_after_ms = performance.now() - healed;
  report.healed_after_turns = turns;
  console.error(
    `selector over ${queries.length} queries, catalog of ${lines(`${values.dataset}/catalog.jsonl`).length} tools (${values.dataset}), model ${values.model}, top_k ${TOP_K}:`,
  );
  console.error(describe('store answering', report.healthy as Phase));
  console.error(describe('partition, with the store breaker', report.partition_breaker as Phase));
  console.error(describe('partition, without (each turn waits 400 ms)', report.partition_no_breaker as Phase));
  console.error(describe('tool-search, store answering', report.tool_search_healthy as Phase));
  console.error(describe('tool-search, partition, with the breaker', report.tool_search_partition_breaker as Phase));
  console.error(describe('tool-search, partition, without', report.tool_search_partition_no_breaker as Phase));
  console.error(describe('MCP search_tools, store answering', report.mcp_search_healthy as Phase));
  console.error(describe('MCP search_tools, partition, with the breaker', report.mcp_search_partition_breaker as Phase));
  console.error(`healed: the store's answer again after ${turns} turns, ${Math.round(report.healed_after_ms as number)} ms`);
  console.log(JSON.stringify({ breaker: breaker !== undefined, ...report }));
} finally {
  proxy.heal();
  await mcp?.close();
  await service.close();
  await proxy.close();
  await admin.query(`drop database if exists "${name}" with (force)`);
  await admin.end();
}
process.exit(0);
