/**
 * `npm run bench:mcp`: what progressive disclosure over MCP costs and saves, on livemcpbench's 527
 * real MCP tools and its dev tasks.
 *
 * Tokens (gpt-tokenizer, o200k_base: exact for OpenAI's current models, an estimate for others):
 * per task, what an agent reads through toolsift (the four meta-tools' definitions, one
 * search_tools answer, get_tool_details of its top 3) against all 527 definitions as a host would
 * send them (name, description, inputSchema), and whether the task's relevant tools were within
 * reach (in the search answer).
 * Speed: search_tools over MCP against the REST catalog search on the same queries in the same run
 * (p50 ratio; target <= 1.2 x REST + 2 ms), and call_tool through toolsift against calling the
 * upstream directly (server-everything's echo over Streamable HTTP; target <= 5 ms overhead at p50).
 *
 * On an in-memory PGlite, or on PostgreSQL when DATABASE_URL is set (a scratch database on that
 * server, dropped at the end).
 *
 *   npm run bench:mcp -- [--rounds 5] [--limit 5] [--queries N]
 */
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import { scratchDatabase } from '../test/helpers/database.js';
import { freePort, startEverything } from '../test/helpers/process.js';
import { startInProcess } from './lib/in-process.js';
import { percentile, sortedAscending } from './lib/stats.js';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    limit: { type: 'string', default: '5' },
    queries: { type: 'string' },
    calls: { type: 'string', default: '200' },
  },
});
const rounds = Number(values.rounds);
const limit = Number(values.limit);
const callCount = Number(values.calls);
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DATASET = `${ROOT}../shared/eval/livemcpbench`;

interface Line {
  name: string;
  description?: string;
  input_schema?: Record<string, unknown> | null;
  server?: string | null;
}
const tools = readFileSync(`${DATASET}/catalog.jsonl`, 'utf8')
  .trim()
  .split('\n')
  .map((line) => JSON.parse(line) as Line);
const allQueries = readFileSync(`${DATASET}/queries.dev.jsonl`, 'utf8')
  .trim()
  .split('\n')
  .map((line) => JSON.parse(line) as { query: string; relevant: string[] });
const queries = values.queries ? allQueries.slice(0, Number(values.queries)) : allQueries;
const mcpTools = tools.map((tool) => ({
  name: tool.name,
  description: tool.description ?? '',
  inputSchema: tool.input_schema ?? { type: 'object', properties: {} },
  server: tool.server ?? null,
}));

const p50 = (samples: number[]) => percentile(sortedAscending(samples), 50);
const ms = (value: number) => `${value.toFixed(2)} ms`;
const textOf = (result: { content?: unknown }) =>
  ((result.content as Array<{ type: string; text?: string }>) ?? []).map((block) => block.text ?? '').join('\n');

// A scratch database of its own: a shared one's tools without vectors (say, a test run's) would be
// embedded at start, and the bench would wait for them.
const scratch = process.env.DATABASE_URL ? await scratchDatabase('postgres', 'toolsift_bench_mcp') : undefined;
const database = scratch?.database;
// server-everything listens on loopback, which the address policy refuses unless opened.
const service = await startInProcess({ EMBED_MODEL: 'use-lite', UPSTREAM_ALLOW: '127.0.0.1/32' }, database);
const { deps, base } = service;
let everything: ChildProcess | undefined;
const clients: Client[] = [];
const connect = async (url: string) => {
  const client = new Client({ name: 'bench-mcp', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  clients.push(client);
  return client;
};

try {
  const json = { 'content-type': 'application/json' };
  const put = await fetch(`${base}/v1/catalogs/livemcpbench`, { method: 'PUT', headers: json, body: JSON.stringify({ tools: mcpTools }) });
  if (!put.ok) throw new Error(`PUT answered ${put.status}`);
  await deps.queue?.whenIdle();
  const client = await connect(`${base}/mcp/livemcpbench`);

  // --- tokens and reach
  const metaTools = (await client.listTools()).tools;
  const metaTokens = countTokens(JSON.stringify(metaTools));
  const allTokens = countTokens(JSON.stringify(mcpTools.map(({ name, description, inputSchema }) => ({ name, description, inputSchema }))));
  const perTask: Array<{ tokens: number; reached: number; any: boolean }> = [];
  for (const { query, relevant } of queries) {
    const search = await client.callTool({ name: 'search_tools', arguments: { query, limit } });
    const results = (search.structuredContent as { results: Array<{ name: string }> }).results.map((tool) => tool.name);
    const details = await client.callTool({ name: 'get_tool_details', arguments: { names: results.slice(0, 3) } });
    const tokens = metaTokens + countTokens(textOf(search)) + countTokens(textOf(details));
    const hits = relevant.filter((name) => results.includes(name)).length;
    perTask.push({ tokens, reached: hits / relevant.length, any: hits > 0 });
  }
  const toolsiftTokens = perTask.map((task) => task.tokens);
  const reduction = 1 - p50(toolsiftTokens) / allTokens;
  console.log(`store: ${database ? 'PostgreSQL (DATABASE_URL)' : 'PGlite in memory'}`);
  console.log(`livemcpbench: ${tools.length} tools, ${queries.length} tasks; tokens by gpt-tokenizer o200k_base (an estimate for non-OpenAI models)`);
  console.log(`  all ${tools.length} definitions:        ${allTokens} tokens`);
  console.log(`  four meta-tools' definitions:     ${metaTokens} tokens`);
  console.log(
    `  through toolsift per task:        median ${p50(toolsiftTokens)} (min ${Math.min(...toolsiftTokens)}, max ${Math.max(...toolsiftTokens)}) = meta-tools + search_tools (limit ${limit}) + get_tool_details of the top 3`,
  );
  console.log(`  reduction at the median:          ${(reduction * 100).toFixed(1)}%`);
  console.log(
    `  reach (search answer):            ${perTask.filter((task) => task.any).length}/${queries.length} tasks have a relevant tool in it; mean share of relevant tools in it ${(perTask.reduce((sum, task) => sum + task.reached, 0) / perTask.length).toFixed(3)}`,
  );

  // --- search latency: MCP against REST, same queries, interleaved
  const mcpMs: number[] = [];
  const restMs: number[] = [];
  for (let round = 0; round < rounds; round++) {
    for (const { query } of queries) {
      let started = performance.now();
      await client.callTool({ name: 'search_tools', arguments: { query, limit } });
      mcpMs.push(performance.now() - started);
      started = performance.now();
      const response = await fetch(`${base}/v1/catalogs/livemcpbench/search`, { method: 'POST', headers: json, body: JSON.stringify({ query, top_k: limit }) });
      await response.arrayBuffer();
      restMs.push(performance.now() - started);
    }
  }
  const searchTarget = 1.2 * p50(restMs) + 2;
  console.log(`\nsearch, ${rounds} rounds x ${queries.length} queries (query vectors cached after the first pass):`);
  console.log(`  REST POST /v1/catalogs/{catalog}/search  p50 ${ms(p50(restMs))}  p90 ${ms(percentile(sortedAscending(restMs), 90))}`);
  console.log(`  MCP search_tools                         p50 ${ms(p50(mcpMs))}  p90 ${ms(percentile(sortedAscending(mcpMs), 90))}`);
  console.log(
    `  ratio ${(p50(mcpMs) / p50(restMs)).toFixed(2)}; target p50(MCP) <= 1.2 x REST + 2 ms = ${ms(searchTarget)}: ${p50(mcpMs) <= searchTarget ? 'PASS' : 'FAIL'}`,
  );

  // --- call_tool overhead against the upstream called directly
  const port = await freePort();
  everything = await startEverything(port);
  const started = { url: `http://127.0.0.1:${port}/mcp` };
  const register = await fetch(`${base}/v1/catalogs/everything/upstreams/everything`, {
    method: 'PUT',
    headers: json,
    body: JSON.stringify({ url: started.url }),
  });
  if (!register.ok) throw new Error(`upstream PUT answered ${register.status}`);
  const direct = await connect(started.url);
  const through = await connect(`${base}/mcp/everything`);
  const directMs: number[] = [];
  const throughMs: number[] = [];
  for (let index = 0; index < callCount; index++) {
    let t = performance.now();
    await direct.callTool({ name: 'echo', arguments: { message: `hello ${index}` } });
    directMs.push(performance.now() - t);
    t = performance.now();
    const result = await through.callTool({ name: 'call_tool', arguments: { name: 'echo', arguments: { message: `hello ${index}` } } });
    if (result.isError) throw new Error(`call_tool failed: ${textOf(result)}`);
    throughMs.push(performance.now() - t);
  }
  const overhead = p50(throughMs) - p50(directMs);
  console.log(`\ncall_tool, ${callCount} echo calls, interleaved:`);
  console.log(`  upstream directly   p50 ${ms(p50(directMs))}`);
  console.log(`  through toolsift    p50 ${ms(p50(throughMs))}`);
  console.log(`  overhead at p50 ${ms(overhead)}; target <= 5 ms: ${overhead <= 5 ? 'PASS' : 'FAIL'}`);
  console.log(
    JSON.stringify({
      tools: tools.length,
      tasks: queries.length,
      all_definitions_tokens: allTokens,
      meta_tools_tokens: metaTokens,
      toolsift_tokens_p50: p50(toolsiftTokens),
      reduction,
      reach_any: perTask.filter((task) => task.any).length / perTask.length,
      search_p50_ms: { rest: p50(restMs), mcp: p50(mcpMs) },
      call_p50_ms: { direct: p50(directMs), through: p50(throughMs) },
    }),
  );
} finally {
  for (const client of clients) await client.close().catch(() => {});
  everything?.kill('SIGKILL');
  await service.close();
  await scratch?.drop();
}
