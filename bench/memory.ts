/**
 * `npm run bench:memory`: where the embedded default's memory goes.
 *
 * Starts the service as `npm start` does (`node --max-semi-space-size=4 dist/src/main.js`, PGlite in
 * a fresh data directory, no Redis) once per configuration, and reads its memory at three points:
 * ready, after a catalog push has been embedded (livemcpbench and toolbench_stable, 3,017 tools),
 * and after hybrid searches over it. RSS and its peak come from /proc; the main thread's V8 heap and
 * `external` (buffers and PGlite's WebAssembly memory are counted there or in neither, depending on
 * how they were allocated) from /metrics. The model's threads have their own heaps inside the same
 * RSS, so `none` against `use-lite` shows what the model costs. The embedding rate (tools/s from the
 * push to the last vector) says what fewer model threads cost in throughput.
 *
 *   npm run bench:memory -- [--configs none,use-lite:1,use-lite:2] [--searches 100]
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { freePort } from '../test/helpers/process.js';

const { values } = parseArgs({
  options: {
    configs: { type: 'string', default: 'none,use-lite:1,use-lite:2' },
    searches: { type: 'string', default: '100' },
  },
});
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const EVAL = `${ROOT}../shared/eval/`;
// The service runs from dist/, as `npm start` runs it: compiled first when the sources changed.
const build = spawnSync(process.execPath, ['scripts/build.mjs'], { cwd: ROOT, stdio: 'inherit' });
if (build.status !== 0) throw new Error('build failed');

interface Line {
  name: string;
  description?: string;
  input_schema?: Record<string, unknown> | null;
  server?: string | null;
}
const catalogs = ['livemcpbench', 'toolbench_stable'].map((corpus) => ({
  corpus,
  tools: readFileSync(`${EVAL}${corpus}/catalog.jsonl`, 'utf8')
    .trim()
    .split('\n')
    .map((line) => {
      const tool = JSON.parse(line) as Line;
      return {
        name: tool.name,
        description: tool.description ?? '',
        inputSchema: tool.input_schema ?? { type: 'object', properties: {} },
        ...(tool.server ? { server: tool.server } : {}),
      };
    }),
  queries: readFileSync(`${EVAL}${corpus}/queries.dev.jsonl`, 'utf8')
    .trim()
    .split('\n')
    .map((line) => (JSON.parse(line) as { query: string }).query),
}));

/** VmRSS and VmHWM (peak) of a process, in MB. */
function procMemory(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0);
  return { rss: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 };
}

interface Sample {
  rss: number;
  peak: number;
  heapUsed: number;
  external: number;
}

async function sample(child: ChildProcess, url: string): Promise<Sample> {
  const metrics = await (await fetch(`${url}/metrics`)).text();
  const gauge = (name: string) => Number(new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.e+]+)`, 'm').exec(metrics)?.[1] ?? 0) / 2 ** 20;
  return { ...procMemory(child.pid!), heapUsed: gauge('toolsift_nodejs_heap_size_used_bytes'), external: gauge('toolsift_nodejs_external_memory_bytes') };
}

interface Report {
  config: string;
  ready: Sample;
  embedded: Sample;
  searched: Sample;
  embedPerSecond?: number;
  readyMs: number;
}

async function run(config: string): Promise<Report> {
  const [model, threads] = config.split(':');
  const dataDir = mkdtempSync(join(tmpdir(), 'toolsift-memory-'));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const env: NodeJS.ProcessEnv = { ...process.env, PORT: String(port), DATA_DIR: dataDir, EMBED_MODEL: model!, LOG_LEVEL: 'warn' };
  delete env.DATABASE_URL;
  delete env.REDIS_URL;
  if (threads) env.EMBED_THREADS = threads;
  const started = performance.now();
  const child = spawn(process.execPath, ['--max-semi-space-size=4', 'dist/src/main.js'], { cwd: ROOT, env, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (chunk) => (stderr += String(chunk)));
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`service exited: ${stderr.slice(-2000)}`);
      // Ready, and with a model, the model loaded (the service is ready before that: BM25 serves).
      const body = await fetch(`${url}/readyz`).then(
        (response) => (response.ok ? (response.json() as Promise<{ components: Record<string, { status: string }> }>) : undefined),
        () => undefined,
      );
      if (body && (model === 'none' || body.components.embedder?.status === 'ok')) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const readyMs = performance.now() - started;
    const ready = await sample(child, url);
    const json = { 'content-type': 'application/json' };
    const pushed = performance.now();
    for (const { corpus, tools } of catalogs) {
      const response = await fetch(`${url}/v1/catalogs/${corpus}`, { method: 'PUT', headers: json, body: JSON.stringify({ tools }) });
      if (!response.ok) throw new Error(`PUT ${corpus} answered ${response.status}: ${await response.text()}`);
    }
    let embedPerSecond: number | undefined;
    if (model !== 'none') {
      for (;;) {
        const progress = await Promise.all(
          catalogs.map(
            async ({ corpus }) =>
              ((await (await fetch(`${url}/v1/catalogs/${corpus}`)).json()) as { embedding: { done: number; failed: number; total: number } }).embedding,
          ),
        );
        if (progress.every((p) => p.done + p.failed >= p.total)) break;
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
      embedPerSecond = catalogs.reduce((sum, { tools }) => sum + tools.length, 0) / ((performance.now() - pushed) / 1000);
    }
    const embedded = await sample(child, url);
    const searches = Number(values.searches);
    for (let i = 0; i < searches; i++) {
      const { corpus, queries } = catalogs[i % catalogs.length]!;
      const response = await fetch(`${url}/v1/catalogs/${corpus}/search`, {
        method: 'POST',
        headers: json,
        body: JSON.stringify({ query: queries[i % queries.length], top_k: 10 }),
      });
      if (!response.ok) throw new Error(`search answered ${response.status}`);
      await response.arrayBuffer();
    }
    const searched = await sample(child, url);
    return { config, ready, embedded, searched, readyMs, ...(embedPerSecond ? { embedPerSecond } : {}) };
  } finally {
    child.kill('SIGTERM');
    await new Promise((resolve) => child.once('exit', resolve));
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const reports: Report[] = [];
for (const config of values.configs!.split(',')) {
  const report = await run(config);
  process.stderr.write(
    `[${config}] ready in ${(report.readyMs / 1000).toFixed(1)} s; RSS ${report.ready.rss.toFixed(0)} -> ${report.searched.rss.toFixed(0)} MB\n`,
  );
  reports.push(report);
}
const mb = (value: number) => value.toFixed(0).padStart(6);
console.log('\nconfig (EMBED_MODEL:threads)  RSS ready  embedded  searched  peak   main heap  external  embed tools/s');
for (const report of reports) {
  console.log(
    `${report.config.padEnd(29)} ${mb(report.ready.rss)}    ${mb(report.embedded.rss)}    ${mb(report.searched.rss)}  ${mb(report.searched.peak)}  ${mb(report.searched.heapUsed)}     ${mb(report.searched.external)}    ${report.embedPerSecond?.toFixed(0) ?? '-'}`,
  );
}
console.log(JSON.stringify({ reports }));
