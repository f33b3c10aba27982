/**
 * `npm run bench:code`: what code mode (issue 73, `run_code`) saves and costs, against real upstreams
 * (server-filesystem over stdio on a temporary folder, server-everything over Streamable HTTP) behind
 * the service from source in its own process (PGlite, no model, CODE_MODE=on, CODE_MODE_WORKERS=2,
 * the default limits).
 *
 * 1. Tokens. Three tasks a model does in several steps, each done two ways through `/mcp` with the
 *    official SDK client: step by step (one `call_tool` per tool call, as an agent does) and as one
 *    `run_code` program. Tokens reaching the model (gpt-tokenizer, o200k_base): step by step, each
 *    step's call_tool arguments as JSON plus the result's text content; run_code, the program's text
 *    plus the run's text content. Both ways must give the answer computed from the files on disk
 *    (the bench throws otherwise).
 *      a. read the 20 files of a folder (listed first) and count the lines containing "ERROR";
 *      b. a directory tree (directory_tree) and the three largest of its files (get_file_info on each);
 *      c. get-sum over a list of 50 pairs, summarised (count, total, min, max).
 * 2. Times, --repeats repeats, each figure the median of a repeat's runs; reported as the median
 *    and [min .. max] over the repeats: sandbox start (a fresh engine instance: RunOutcome.startMs
 *    from a SandboxPool in this process, and `sandbox_start_ms` of the service's run_code log lines);
 *    a trivial run_code end to end; the cost of one tool call made from a program (a program of
 *    --calls sequential echo calls less a trivial program, over --calls) against one call_tool
 *    request and one call to the upstream directly (each --calls sequential calls' total over
 *    --calls); the sandbox's own plumbing per call (the same programs in this process's SandboxPool
 *    with a handler that answers at once); each task's wall time each way.
 * 3. Isolation: selector (POST /v1/tool-discovery/search, a remembered 258-tool list, a new pattern
 *    each time) and /healthz latency, --requests of each in turn, with nothing running, then while
 *    CPU-bound programs (`while (true) {}` to the CPU limit) and then memory-bound ones (an array
 *    grown to the memory limit) run back to back, as many at once as there are workers.
 *
 * Target (issue 73): a call from a program costs <= 1 ms more than the call itself at p50 (the
 * sandbox plumbing per call). The last line is the report as JSON.
 *
 *   npm run bench:code -- [--repeats 7] [--calls 50] [--requests 200] [--quick]
 */
import { sandboxLimits } from '../src/deps.js';
import { deepStrictEqual } from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import { loadConfig } from '../src/config.js';
import { seededRandom } from '../src/eval/seeded-random.js';
import { type RunOutcome, SandboxPool } from '../src/sandbox/sandbox-pool.js';
import { freePort, startEverything, startService, writeFilesystemUpstreams } from '../test/helpers/process.js';
import { median, summarize } from './lib/stats.js';

const { values } = parseArgs({
  options: {
    repeats: { type: 'string' },
    calls: { type: 'string', default: '50' },
    requests: { type: 'string' },
    /** A short run (2 repeats, 30 requests a phase): the smoke suite's. */
    quick: { type: 'boolean', default: false },
  },
});
const repeats = Number(values.repeats ?? (values.quick ? 2 : 7));
const callCount = Number(values.calls);
const requests = Number(values.requests ?? (values.quick ? 30 : 200));
for (const [name, value] of [
  ['repeats', repeats],
  ['calls', callCount],
  ['requests', requests],
] as const) {
  if (!Number.isInteger(value) || value < 1) throw new Error(`--${name} must be a positive integer, got ${value}`);
}
const WORKERS = 2;
if (callCount > loadConfig({}).CODE_MODE_MAX_CALLS) throw new Error(`--calls ${callCount} is over a program's default call limit (CODE_MODE_MAX_CALLS)`);
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const LIVEMCPBENCH = join(ROOT, '../shared/eval/livemcpbench');
/** Runs of a program within one repeat, whose median is the repeat's figure. */
const RUNS = values.quick ? 3 : 5;

// ---------------------------------------------------------------------------------------------
// The folder server-filesystem serves: 20 log files for task a, a tree of files of distinct sizes for b.

const random = seededRandom(73);
const folder = mkdtempSync(join(tmpdir(), 'toolsift-bench-code-'));
const notes = join(folder, 'logs');
const tree = join(folder, 'project');
const WORD = 'ERROR';
mkdirSync(notes);
const levels = ['INFO', 'INFO', 'INFO', 'INFO', 'DEBUG', 'WARN'];
const events = [
  'request GET /v1/items/{id} served in {n} ms',
  'request POST /v1/orders served in {n} ms',
  'cache miss for key user:{id}, loaded in {n} ms',
  'job {id} queued, {n} ahead',
  'connection pool at {n} of 20',
  'retrying upstream call {id} after {n} ms',
];
const errors = ['upstream timed out after {n} ms on order {id}', 'payment {id} refused: card declined', 'could not parse body of request {id}'];
const fill = (template: string) => template.replace('{id}', String(Math.floor(random() * 100_000))).replace('{n}', String(Math.floor(random() * 900) + 1));
for (let file = 0; file < 20; file++) {
  const lines: string[] = [];
  const count = 40 + Math.floor(random() * 80);
  for (let line = 0; line < count; line++) {
    const time = `2026-12-06T${String(10 + file).padStart(2, '0')}:${String(Math.floor(line / 2)).padStart(2, '0')}:${String((line * 29) % 60).padStart(2, '0')}Z`;
    const isError = random() < 0.07;
    const level = isError ? WORD : levels[Math.floor(random() * levels.length)]!;
    const text = isError ? fill(errors[Math.floor(random() * errors.length)]!) : fill(events[Math.floor(random() * events.length)]!);
    lines.push(`${time} ${level.padEnd(5)} api-${file % 3} ${text}`);
  }
  writeFileSync(join(notes, `service-${String(file + 1).padStart(2, '0')}.log`), `${lines.join('\n')}\n`);
}
const expectedLines = (() => {
  let lines = 0;
  for (let file = 1; file <= 20; file++)
    lines += readFileSync(join(notes, `service-${String(file).padStart(2, '0')}.log`), 'utf8')
      .split('\n')
      .filter((line) => line.includes(WORD)).length;
  return { files: 20, lines };
})();

const treeFiles = [
  'README.md',
  'package.json',
  'src/index.ts',
  'src/server.ts',
  'src/routes/items.ts',
  'src/routes/orders.ts',
  'src/routes/users.ts',
  'src/lib/cache.ts',
  'src/lib/db.ts',
  'src/lib/log.ts',
  'test/items.test.ts',
  'test/orders.test.ts',
  'docs/guide.md',
  'docs/api.md',
  'docs/images/flow.svg',
  'docs/images/arch.svg',
  'assets/logo.svg',
  'assets/fonts/inter.txt',
  'scripts/build.sh',
  'scripts/release.sh',
];
const sizes = new Set<number>();
for (const file of treeFiles) {
  let size: number;
  do size = 200 + Math.floor(random() * 30_000);
  while (sizes.has(size));
  sizes.add(size);
  mkdirSync(join(tree, file, '..'), { recursive: true });
  writeFileSync(join(tree, file), 'x'.repeat(size));
}
const expectedLargest = treeFiles
  .map((file) => ({ path: file, size: statSync(join(tree, file)).size }))
  .sort((a, b) => b.size - a.size)
  .slice(0, 3);

const pairs = Array.from({ length: 50 }, () => [Math.floor(random() * 1000) - 200, Math.floor(random() * 1000)] as [number, number]);
const expectedSums = (() => {
  const sums = pairs.map(([a, b]) => a + b);
  return { count: sums.length, total: sums.reduce((sum, x) => sum + x, 0), min: Math.min(...sums), max: Math.max(...sums) };
})();

// ---------------------------------------------------------------------------------------------
// The service, its two upstreams, and the clients.

const upstreamsFile = join(folder, 'upstreams.json');
writeFilesystemUpstreams(upstreamsFile, { filesystem: { folder, catalog: 'files' } });
const everythingPort = await freePort();
let everything: ChildProcess | undefined;
let service: Awaited<ReturnType<typeof startService>> | undefined;
const clients: Client[] = [];
// The default limits, as the service reads them.
const pool = new SandboxPool({ workers: WORKERS, limits: sandboxLimits(loadConfig({ CODE_MODE: 'on' })) });

type Result = { content?: unknown; structuredContent?: unknown; isError?: boolean };
const textOf = (result: Result) => ((result.content as Array<{ type: string; text?: string }>) ?? []).map((block) => block.text ?? '').join('\n');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function connect(url: string): Promise<Client> {
  const client = new Client({ name: 'bench-code', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  clients.push(client);
  return client;
}

try {
  everything = await startEverything(everythingPort);
  const dataDir = join(folder, 'data');
  service = await startService(
    {
      DATA_DIR: dataDir,
      DATABASE_URL: '',
      REDIS_URL: '',
      API_KEYS: '',
      EMBED_MODEL: 'none',
      LOG_LEVEL: 'info',
      CODE_MODE: 'on',
      CODE_MODE_WORKERS: String(WORKERS),
      UPSTREAMS_FILE: upstreamsFile,
      UPSTREAM_ALLOW: '127.0.0.1/32',
    },
    120_000,
  );
  const base = service.base;
  const json = { 'content-type': 'application/json' };
  const registered = await fetch(`${base}/v1/catalogs/web/upstreams/everything`, {
    method: 'PUT',
    headers: json,
    body: JSON.stringify({ url: `http://127.0.0.1:${everythingPort}/mcp` }),
  });
  if (!registered.ok) throw new Error(`PUT of the everything upstream answered ${registered.status}: ${await registered.text()}`);
  for (let tries = 0; ; tries++) {
    const listed = (await (await fetch(`${base}/v1/catalogs/files/upstreams`)).json()) as { upstreams?: Array<{ tool_count: number; last_error?: string }> };
    if ((listed.upstreams?.[0]?.tool_count ?? 0) > 0) break;
    if (listed.upstreams?.[0]?.last_error || tries > 300) throw new Error(`server-filesystem did not sync: ${JSON.stringify(listed)}`);
    await sleep(100);
  }

  let mcp = await connect(`${base}/mcp`);
  /**
   * A new client for each repeat: fetch leaves an abort listener on the transport's signal per
   * request until it is collected, and over a few thousand requests on one client Node warns.
   */
  let direct = await connect(`http://127.0.0.1:${everythingPort}/mcp`);
  const renew = async () => {
    const old = [mcp, direct];
    mcp = await connect(`${base}/mcp`);
    direct = await connect(`http://127.0.0.1:${everythingPort}/mcp`);
    for (const client of old) {
      clients.splice(clients.indexOf(client), 1);
      await client.close();
    }
  };
  const offered = (await mcp.listTools()).tools.map((tool) => tool.name);
  if (!offered.includes('run_code')) throw new Error(`run_code is not offered at /mcp (CODE_MODE=on): ${offered.join(', ')}`);

  /** One call_tool request: the tool's result and the tokens the step puts before the model. */
  const callTool = async (name: string, args: Record<string, unknown>) => {
    const result = (await mcp.callTool({ name: 'call_tool', arguments: { name, arguments: args } })) as Result;
    const text = textOf(result);
    if (result.isError) throw new Error(`call_tool ${name} failed: ${text}`);
    return { text, tokens: countTokens(JSON.stringify({ name, arguments: args })) + countTokens(text) };
  };
  const runCode = async (code: string, client = mcp) => {
    const result = (await client.callTool({ name: 'run_code', arguments: { code } }, { timeout: 120_000 })) as Result;
    const text = textOf(result);
    return { result, text, tokens: countTokens(code) + countTokens(text) };
  };
  const runValue = async (code: string) => {
    const run = await runCode(code);
    if (run.result.isError) throw new Error(`run_code failed: ${run.text}\nprogram:\n${code}`);
    return { value: (run.result.structuredContent as { result: unknown }).result, tokens: run.tokens };
  };

  // -------------------------------------------------------------------------------------------
  // 1. The tasks, step by step and as one program.

  interface Task {
    name: string;
    label: string;
    expected: unknown;
    /** The task as an agent does it, one call_tool a step; returns the answer and the tokens. */
    steps: () => Promise<{ answer: unknown; tokens: number; steps: number }>;
    program: string;
  }
  const tasks: Task[] = [
    {
      name: 'a',
      label: `read 20 files, count lines with "${WORD}"`,
      expected: expectedLines,
      steps: async () => {
        let tokens = 0;
        const listing = await callTool('files/list_directory', { path: notes });
        tokens += listing.tokens;
        const names = listing.text
          .split('\n')
          .filter((line) => line.startsWith('[FILE] '))
          .map((line) => line.slice('[FILE] '.length));
        let lines = 0;
        for (const name of names) {
          const read = await callTool('files/read_text_file', { path: `${notes}/${name}` });
          tokens += read.tokens;
          lines += read.text.split('\n').filter((line) => line.includes(WORD)).length;
        }
        return { answer: { files: names.length, lines }, tokens, steps: names.length + 1 };
      },
      program: `const dir = ${JSON.stringify(notes)};
const { content: listing } = await tools.files.list_directory({ path: dir });
const names = listing.split("\\n").filter((line: string) => line.startsWith("[FILE] ")).map((line: string) => line.slice(7));
const counts = await Promise.all(names.map(async (name: string) => {
  const { content } = await tools.files.read_text_file({ path: dir + "/" + name });
  return content.split("\\n").filter((line: string) => line.includes(${JSON.stringify(WORD)})).length;
}));
return { files: names.length, lines: counts.reduce((sum: number, n: number) => sum + n, 0) };`,
    },
    {
      name: 'b',
      label: 'a directory tree, its 3 largest files',
      expected: expectedLargest,
      steps: async () => {
        let tokens = 0;
        const listed = await callTool('files/directory_tree', { path: tree });
        tokens += listed.tokens;
        type Entry = { name: string; type: string; children?: Entry[] };
        const paths: string[] = [];
        const walk = (entries: Entry[], dir: string) => {
          for (const entry of entries) {
            if (entry.type === 'directory') walk(entry.children ?? [], `${dir}${entry.name}/`);
            else paths.push(`${dir}${entry.name}`);
          }
        };
        walk(JSON.parse(listed.text) as Entry[], '');
        const files: Array<{ path: string; size: number }> = [];
        for (const path of paths) {
          const info = await callTool('files/get_file_info', { path: `${tree}/${path}` });
          tokens += info.tokens;
          files.push({ path, size: Number(/^size: (\d+)$/m.exec(info.text)?.[1]) });
        }
        files.sort((a, b) => b.size - a.size);
        return { answer: files.slice(0, 3), tokens, steps: paths.length + 1 };
      },
      program: `const root = ${JSON.stringify(tree)};
type Entry = { name: string; type: string; children?: Entry[] };
const { content } = await tools.files.directory_tree({ path: root });
const paths: string[] = [];
const walk = (entries: Entry[], dir: string) => {
  for (const entry of entries) {
    if (entry.type === "directory") walk(entry.children ?? [], dir + entry.name + "/");
    else paths.push(dir + entry.name);
  }
};
walk(JSON.parse(content), "");
const files = await Promise.all(paths.map(async (path) => {
  const info = await tools.files.get_file_info({ path: root + "/" + path });
  return { path, size: Number(/^size: (\\d+)$/m.exec(info.content)![1]) };
}));
files.sort((a, b) => b.size - a.size);
return files.slice(0, 3);`,
    },
    {
      name: 'c',
      label: 'get-sum over 50 pairs, summarised',
      expected: expectedSums,
      steps: async () => {
        let tokens = 0;
        const sums: number[] = [];
        for (const [a, b] of pairs) {
          const sum = await callTool('web/get-sum', { a, b });
          tokens += sum.tokens;
          sums.push(Number(/is (-?\d+)\.$/.exec(sum.text.trim())?.[1]));
        }
        return {
          answer: { count: sums.length, total: sums.reduce((sum, x) => sum + x, 0), min: Math.min(...sums), max: Math.max(...sums) },
          tokens,
          steps: pairs.length,
        };
      },
      program: `const pairs = ${JSON.stringify(pairs)};
const sums = await Promise.all(pairs.map(async ([a, b]) => {
  const text: string = await tools.web["get-sum"]({ a, b });
  return Number(/is (-?\\d+)\\.$/.exec(text.trim())![1]);
}));
return { count: sums.length, total: sums.reduce((sum, x) => sum + x, 0), min: Math.min(...sums), max: Math.max(...sums) };`,
    },
  ];

  const taskFigures = tasks.map(() => ({ stepTokens: [] as number[], codeTokens: [] as number[], stepMs: [] as number[], codeMs: [] as number[], steps: 0 }));
  for (let repeat = 0; repeat < repeats; repeat++) {
    await renew();
    for (const [index, task] of tasks.entries()) {
      const figures = taskFigures[index]!;
      // Alternating which way goes first, so neither always follows the other.
      const ways = repeat % 2 === 0 ? (['steps', 'code'] as const) : (['code', 'steps'] as const);
      for (const way of ways) {
        const started = performance.now();
        if (way === 'steps') {
          const done = await task.steps();
          figures.stepMs.push(performance.now() - started);
          deepStrictEqual(done.answer, task.expected, `task ${task.name} step by step: the answer differs from the files'`);
          figures.stepTokens.push(done.tokens);
          figures.steps = done.steps;
        } else {
          const done = await runValue(task.program);
          figures.codeMs.push(performance.now() - started);
          deepStrictEqual(done.value, task.expected, `task ${task.name} through run_code: the answer differs from the files'`);
          figures.codeTokens.push(done.tokens);
        }
      }
    }
  }

  // -------------------------------------------------------------------------------------------
  // 2. Times: sandbox start, a trivial run, a tool call from a program against call_tool.

  const trivial = 'return 1';
  const echoProgram = (label: string) => `for (let i = 0; i < ${callCount}; i++) await tools.web.echo({ message: "${label} " + i });\nreturn ${callCount};`;
  const immediateProgram = `for (let i = 0; i < ${callCount}; i++) await callTool("tool", { i });\nreturn ${callCount};`;
  const immediate = async () => ({ ok: true as const, value: { ok: true } });
  const timedPoolRun = async (program: string) => {
    const started = performance.now();
    const outcome: RunOutcome = await pool.run(program, immediate);
    const ms = performance.now() - started;
    if (!outcome.ok) throw new Error(`SandboxPool run failed: ${JSON.stringify(outcome.error)}`);
    return { ms, outcome };
  };
  const timed = async (work: () => Promise<unknown>) => {
    const started = performance.now();
    await work();
    return performance.now() - started;
  };
  await pool.warm();
  // Untimed warm-up: the first runs load the engine's module and compile the paths.
  for (let i = 0; i < 3; i++) {
    await timedPoolRun(trivial);
    await timedPoolRun(immediateProgram);
    await runValue(trivial);
    await runValue(echoProgram('warm'));
    await callTool('web/echo', { message: 'warm' });
    await direct.callTool({ name: 'echo', arguments: { message: 'warm' } });
  }

  const times = {
    poolStartMs: [] as number[],
    poolTrivialMs: [] as number[],
    poolTrivialCpuMs: [] as number[],
    poolPerCallMs: [] as number[],
    mcpTrivialMs: [] as number[],
    programPerCallMs: [] as number[],
    callToolPerCallMs: [] as number[],
    directPerCallMs: [] as number[],
  };
  const logFrom = service.output().length;
  for (let repeat = 0; repeat < repeats; repeat++) {
    await renew();
    const starts: number[] = [];
    const poolTrivial: number[] = [];
    const poolTrivialCpu: number[] = [];
    const poolCalls: number[] = [];
    const mcpTrivial: number[] = [];
    const mcpEcho: number[] = [];
    const callToolRuns: number[] = [];
    const directRuns: number[] = [];
    for (let run = 0; run < RUNS; run++) {
      const small = await timedPoolRun(trivial);
      starts.push(small.outcome.startMs);
      poolTrivial.push(small.ms);
      poolTrivialCpu.push(small.outcome.cpuMs);
      const many = await timedPoolRun(immediateProgram);
      if (many.outcome.calls !== callCount) throw new Error(`the program made ${many.outcome.calls} calls, not ${callCount}`);
      poolCalls.push(many.ms);
      mcpTrivial.push(await timed(() => runValue(trivial)));
      mcpEcho.push(
        await timed(async () => {
          const { value } = await runValue(echoProgram(`r${repeat}`));
          if (value !== callCount) throw new Error(`the echo program answered ${JSON.stringify(value)}`);
        }),
      );
      callToolRuns.push(
        await timed(async () => {
          for (let i = 0; i < callCount; i++) await callTool('web/echo', { message: `r${repeat} ${i}` });
        }),
      );
      directRuns.push(
        await timed(async () => {
          for (let i = 0; i < callCount; i++) await direct.callTool({ name: 'echo', arguments: { message: `r${repeat} ${i}` } });
        }),
      );
    }
    times.poolStartMs.push(median(starts));
    times.poolTrivialMs.push(median(poolTrivial));
    times.poolTrivialCpuMs.push(median(poolTrivialCpu));
    times.poolPerCallMs.push((median(poolCalls) - median(poolTrivial)) / callCount);
    times.mcpTrivialMs.push(median(mcpTrivial));
    times.programPerCallMs.push((median(mcpEcho) - median(mcpTrivial)) / callCount);
    times.callToolPerCallMs.push(median(callToolRuns) / callCount);
    times.directPerCallMs.push(median(directRuns) / callCount);
  }
  // The service's own figures for the requests of part 2, from its "mcp call" log lines: each
  // run_code's sandbox_start_ms, and each call_tool's time in the handler, split into the tool's
  // lookup and the upstream call.
  type CallLine = { msg?: string; tool?: string; ms: number; sandbox_start_ms?: number; lookup_ms?: number; upstream_ms?: number };
  const logged = service
    .output()
    .slice(logFrom)
    .split('\n')
    .filter((line) => line.includes('"mcp call"'))
    .map((line) => JSON.parse(line) as CallLine);
  const serviceStartMs = logged.filter((line) => line.tool === 'run_code').map((line) => line.sandbox_start_ms!);
  const callToolLines = logged.filter((line) => line.tool === 'call_tool');
  const handlerMs = summarize(callToolLines.map((line) => line.ms));
  const lookupMs = summarize(callToolLines.map((line) => line.lookup_ms!));
  const upstreamMs = summarize(callToolLines.map((line) => line.upstream_ms!));
  if (serviceStartMs.length === 0 || callToolLines.length === 0) throw new Error('no "mcp call" log lines of run_code or call_tool: has their format changed?');

  // -------------------------------------------------------------------------------------------
  // 3. Isolation: the selector and /healthz alone, and while hostile programs run back to back.

  const catalogLines = readFileSync(join(LIVEMCPBENCH, 'catalog.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { name: string; description?: string; input_schema?: Record<string, unknown> });
  const selectorTools = catalogLines.slice(0, 258).map((line) => {
    const definition = { name: line.name, description: line.description ?? '', input_schema: line.input_schema ?? { type: 'object', properties: {} } };
    return { name: line.name, description: definition.description, definition };
  });
  const queries = readFileSync(join(LIVEMCPBENCH, 'queries.dev.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => (JSON.parse(line) as { query: string }).query);
  const toolsJson = JSON.stringify(selectorTools);
  let patterns = 0;
  const select = async () => {
    const pattern = `${queries[patterns % queries.length]} (turn ${patterns++})`;
    const response = await fetch(`${base}/v1/tool-discovery/search`, {
      method: 'POST',
      headers: json,
      body: `{"pattern":${JSON.stringify(pattern)},"top_k":5,"tools":${toolsJson}}`,
    });
    const text = await response.text();
    if (!response.ok || (JSON.parse(text) as { selected_names: string[] }).selected_names.length !== 5)
      throw new Error(`selector answered ${response.status}: ${text.slice(0, 300)}`);
  };
  const healthz = async () => {
    const response = await fetch(`${base}/healthz`);
    await response.arrayBuffer();
    if (!response.ok) throw new Error(`/healthz answered ${response.status}`);
  };
  // The list remembered, as a gateway's turns find it.
  for (let i = 0; i < 10; i++) await select();

  const hostile = {
    cpu: 'while (true) {}',
    memory: 'const all: number[] = [];\nfor (;;) all.push(all.length);',
  };
  const rssMb = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${service!.child.pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;
  const background = await Promise.all(Array.from({ length: WORKERS }, () => connect(`${base}/mcp`)));
  const phase = async (kind: 'idle' | keyof typeof hostile) => {
    let stop = false;
    const outcomes = new Map<string, number>();
    const runMs: number[] = [];
    const rssBefore = rssMb();
    let rssPeak = rssBefore;
    const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, rssMb())), 100);
    let firstStarted!: () => void;
    const started = new Promise<void>((resolve) => (firstStarted = resolve));
    const loops =
      kind === 'idle'
        ? []
        : background.map(async (client) => {
            while (!stop) {
              const runStarted = performance.now();
              const run = runCode(hostile[kind], client);
              firstStarted();
              const { result, text } = await run;
              runMs.push(performance.now() - runStarted);
              const name = result.isError ? (/^(\w+)/.exec(text)?.[1] ?? 'Error') : 'returned';
              outcomes.set(name, (outcomes.get(name) ?? 0) + 1);
            }
          });
    if (kind !== 'idle') {
      await started;
      // The programs in their workers before the first probe.
      await sleep(300);
    }
    const selectorMs: number[] = [];
    const healthzMs: number[] = [];
    for (let i = 0; i < requests; i++) {
      selectorMs.push(await timed(select));
      healthzMs.push(await timed(healthz));
      await sleep(10);
    }
    stop = true;
    await Promise.all(loops);
    clearInterval(sampler);
    return {
      selector: summarize(selectorMs),
      healthz: summarize(healthzMs),
      runs: Object.fromEntries(outcomes),
      run_ms: summarize(runMs),
      rss_mb: { before: rssBefore, peak: rssPeak },
    };
  };
  const isolation = { idle: await phase('idle'), cpu: await phase('cpu'), memory: await phase('memory') };
  const expectedLimit = { cpu: 'CpuLimit', memory: 'MemoryLimit' } as const;
  for (const kind of ['cpu', 'memory'] as const) {
    const runs = isolation[kind].runs;
    if (Object.keys(runs).join() !== expectedLimit[kind])
      throw new Error(`the ${kind}-bound programs ended as ${JSON.stringify(runs)}, not all ${expectedLimit[kind]}`);
  }

  // -------------------------------------------------------------------------------------------
  // The report.

  const f = (value: number, digits = 2) => value.toFixed(digits);
  const spread = (samples: number[], digits = 2) => {
    const { p50, min, max } = summarize(samples);
    return `${f(p50, digits)} [${f(min, digits)} .. ${f(max, digits)}]`;
  };
  const serviceStart = summarize(serviceStartMs);
  const target = median(times.poolPerCallMs) <= 1;
  console.log(
    `\ncode mode (issue 73): service from source in its own process (PGlite, EMBED_MODEL=none, CODE_MODE_WORKERS=${WORKERS}, default limits); ` +
      `${repeats} repeats; tokens by gpt-tokenizer o200k_base\n`,
  );
  console.log('Tokens reaching the model per task (median over repeats), and wall time per task, ms, median [min .. max] over repeats:\n');
  console.log('| task | steps | step by step: tokens | run_code: tokens | ratio | step by step: wall ms | run_code: wall ms |');
  console.log('|---|---|---|---|---|---|---|');
  const taskReport = tasks.map((task, index) => {
    const figures = taskFigures[index]!;
    const stepTokens = median(figures.stepTokens);
    const codeTokens = median(figures.codeTokens);
    console.log(
      `| ${task.name}. ${task.label} | ${figures.steps} | ${stepTokens} | ${codeTokens} | ${f(stepTokens / codeTokens, 1)}x | ${spread(figures.stepMs, 1)} | ${spread(figures.codeMs, 1)} |`,
    );
    return {
      task: task.name,
      label: task.label,
      steps: figures.steps,
      step_tokens: stepTokens,
      code_tokens: codeTokens,
      ratio: stepTokens / codeTokens,
      step_ms: summarize(figures.stepMs),
      code_ms: summarize(figures.codeMs),
    };
  });
  console.log(
    `\nStep by step is ${taskFigures.map((figures) => figures.steps).join(', ')} sequential call_tool requests with no model turn between them; the programs run their calls together (Promise.all, at most 8 in flight).`,
  );
  console.log(`\nTimes, ms, median [min .. max] over ${repeats} repeats (each repeat the median of ${RUNS} runs); ${callCount} sequential echo calls a run:\n`);
  console.log('| figure | ms |');
  console.log('|---|---|');
  console.log(`| sandbox start (fresh engine instance), SandboxPool in process | ${spread(times.poolStartMs)} |`);
  console.log(
    `| sandbox start, the service's run_code log lines (p50, p10 .. p90, ${serviceStart.n} runs) | ${f(serviceStart.p50)} [${f(serviceStart.p10)} .. ${f(serviceStart.p90)}] |`,
  );
  console.log(`| trivial program (\`return 1\`), SandboxPool in process | ${spread(times.poolTrivialMs)} |`);
  console.log(`| of which in the engine (prelude and program, RunOutcome.cpuMs) | ${spread(times.poolTrivialCpuMs)} |`);
  console.log(`| trivial run_code over MCP, end to end | ${spread(times.mcpTrivialMs)} |`);
  console.log(`| one call from a program: sandbox plumbing alone (in process, handler answers at once) | ${spread(times.poolPerCallMs, 3)} |`);
  console.log(`| one echo call from a program (run_code over MCP, less a trivial run, over ${callCount}) | ${spread(times.programPerCallMs)} |`);
  console.log(`| one echo call through call_tool over MCP | ${spread(times.callToolPerCallMs)} |`);
  console.log(`| one echo call to the upstream directly | ${spread(times.directPerCallMs)} |`);
  const programOver = times.programPerCallMs.map((ms, i) => ms - times.directPerCallMs[i]!);
  const callToolOver = times.callToolPerCallMs.map((ms, i) => ms - times.directPerCallMs[i]!);
  console.log(`| a call from a program less a direct call (toolsift's call path + sandbox) | ${spread(programOver)} |`);
  console.log(`| a call_tool request less a direct call (toolsift's call path + MCP request) | ${spread(callToolOver)} |`);
  console.log(
    `| call_tool in the service's handler (log lines, p50 [p10 .. p90], ${handlerMs.n} calls) | ${f(handlerMs.p50)} [${f(handlerMs.p10)} .. ${f(handlerMs.p90)}] |`,
  );
  console.log(`| of which the tool's lookup | ${f(lookupMs.p50)} [${f(lookupMs.p10)} .. ${f(lookupMs.p90)}] |`);
  console.log(`| of which the upstream call (toolsift's upstream client) | ${f(upstreamMs.p50)} [${f(upstreamMs.p10)} .. ${f(upstreamMs.p90)}] |`);
  console.log(`\nTarget: a call from a program costs <= 1 ms more than the call at p50 (the sandbox plumbing): ${target ? 'PASS' : 'FAIL'}`);

  console.log(
    `\nIsolation: ${requests} selector turns (258 tools) and ${requests} /healthz in turn, ms p50 / p99; ${WORKERS} programs at once in the background:\n`,
  );
  console.log(
    '| background | selector p50 / p99 | /healthz p50 / p99 | vs. idle: selector p50 / p99; /healthz p50 / p99 | programs run (how each ended), median run | service RSS before -> peak |',
  );
  console.log('|---|---|---|---|---|---|');
  const labels = { idle: 'nothing', cpu: '`while (true) {}` to the CPU limit', memory: 'an array grown to the memory limit' };
  for (const kind of ['idle', 'cpu', 'memory'] as const) {
    const { selector, healthz: health, runs, run_ms, rss_mb } = isolation[kind];
    const { idle } = isolation;
    const ratio = `${f(selector.p50 / idle.selector.p50)} / ${f(selector.p99 / idle.selector.p99)}; ${f(health.p50 / idle.healthz.p50)} / ${f(health.p99 / idle.healthz.p99)}`;
    const ran =
      kind === 'idle'
        ? '-'
        : `${Object.entries(runs)
            .map(([name, count]) => `${count} ${name}`)
            .join(', ')}, ${f(run_ms.p50 / 1000, 1)} s`;
    console.log(
      `| ${labels[kind]} | ${f(selector.p50, 1)} / ${f(selector.p99, 1)} | ${f(health.p50, 1)} / ${f(health.p99, 1)} | ${ratio} | ${ran} | ${rss_mb.before.toFixed(0)} -> ${rss_mb.peak.toFixed(0)} MB |`,
    );
  }
  console.log(
    JSON.stringify({
      repeats,
      calls: callCount,
      requests,
      tasks: taskReport,
      times: Object.fromEntries(Object.entries(times).map(([name, samples]) => [name, summarize(samples)])),
      service_sandbox_start_ms: serviceStart,
      service_call_tool_ms: { handler: handlerMs, lookup: lookupMs, upstream: upstreamMs },
      per_call_target_met: target,
      isolation,
    }),
  );
} finally {
  for (const client of clients) await client.close().catch(() => {});
  await pool.close();
  service?.child.kill('SIGTERM');
  everything?.kill('SIGTERM');
  if (service) await service.exited;
  rmSync(folder, { recursive: true, force: true });
}
process.exit(0);
