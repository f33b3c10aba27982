/**
 * What one tenant's huge upstream results cost everyone else (issue 70): the service as `npm start`
 * runs it (in its own process, from source), a hostile upstream in another process that answers
 * `big_json` with a result of --mb megabytes, and the /healthz latency another tenant would see:
 *
 *   idle:  /healthz alone, one probe every 20 ms for --seconds;
 *   load:  the same probes while --clients MCP clients call big_json through toolsift in a loop.
 *
 * Run once per cap in --caps: the default UPSTREAM_MAX_RESULT_BYTES (4mb: each result refused as it
 * streams in) and one above the result size (what relaying it whole costs, as before the cap).
 * Prints /healthz p50 / p99 / max per phase, the calls done, and the service's RSS before the load
 * and its peak during it (sampled every 100 ms).
 *
 *   npm run bench:gateway -- [--mb 32] [--clients 4] [--seconds 15] [--caps 4mb,64mb]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { freePort } from '../test/helpers/process.js';
import { summarize } from './lib/stats.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const { values } = parseArgs({
  options: {
    mb: { type: 'string', default: '32' },
    clients: { type: 'string', default: '4' },
    seconds: { type: 'string', default: '15' },
    caps: { type: 'string', default: '4mb,64mb' },
  },
});
const bytes = Number(values.mb) << 20;
const clients = Number(values.clients);
const seconds = Number(values.seconds);

/** A child process that prints one line `<label> <port>` once it listens. */
async function started(child: ChildProcess, label: string): Promise<number> {
  let output = '';
  return new Promise((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += String(chunk);
      const match = new RegExp(`${label} (\\d+)`).exec(output);
      if (match) resolve(Number(match[1]));
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (chunk) => (output += String(chunk)));
    child.once('exit', (code) => reject(new Error(`${label} exited ${code}:\n${output}`)));
  });
}

const upstream = spawn(
  process.execPath,
  [
    '--import',
    'tsx',
    '-e',
    `
  const { startHostileUpstream } = await import(${JSON.stringify(path.join(ROOT, 'test/fixtures/hostile-mcp-server.ts'))});
  const server = await startHostileUpstream({ host: '127.0.0.2', tools: [{ name: 'big_json', description: 'A large result.', inputSchema: { type: 'object', properties: { bytes: { type: 'integer' } } } }] });
  console.log('upstream ' + server.port);
`,
  ],
  { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
);
const upstreamPort = await started(upstream, 'upstream');

async function runService(cap: string) {
  const port = await freePort();
  const dataDir = mkdtempSync(path.join(tmpdir(), 'toolsift-bench-gateway-'));
  const service = spawn(process.execPath, ['--max-semi-space-size=4', '--import', 'tsx', 'src/main.ts'], {
    cwd: ROOT,
    env: {
      ...process.env,
      PORT: String(port),
      DATA_DIR: dataDir,
      DATABASE_URL: '',
      REDIS_URL: '',
      EMBED_MODEL: 'none',
      LOG_LEVEL: 'warn',
      UPSTREAM_ALLOW: '127.0.0.2/32',
      UPSTREAM_MAX_RESULT_BYTES: cap,
      UPSTREAM_CALL_TIMEOUT_MS: '60000',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const base = `http://127.0.0.1:${port}`;
  // /readyz, not /healthz: the port answers /healthz while the service is still being built.
  for (let tries = 0; ; tries++) {
    if (
      await fetch(`${base}/readyz`).then(
        (r) => r.ok,
        () => false,
      )
    )
      break;
    if (service.exitCode !== null || tries > 600) throw new Error('service did not start');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const register = await fetch(`${base}/v1/catalogs/bench/upstreams/big`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ url: `http://127.0.0.2:${upstreamPort}/mcp` }),
  });
  const state = (await register.json()) as { upstream?: { tool_count: number; last_error: string | null } };
  if (state.upstream?.tool_count !== 1) throw new Error(`registration: ${JSON.stringify(state)}`);
  return {
    base,
    rssMb: () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${service.pid}/status`, 'utf8'))?.[1] ?? 0) / 1024,
    async close() {
      service.kill('SIGTERM');
      await new Promise((resolve) => service.once('exit', resolve));
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** /healthz every 20 ms until `until`, each latency in ms. */
async function probe(base: string, until: number): Promise<number[]> {
  const latencies: number[] = [];
  while (Date.now() < until) {
    const started = performance.now();
    await (await fetch(`${base}/healthz`)).arrayBuffer();
    latencies.push(performance.now() - started);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return latencies;
}

const rows: string[] = [];
for (const cap of values.caps.split(',')) {
  const service = await runService(cap);
  const idle = summarize(await probe(service.base, Date.now() + seconds * 1000));
  const mcp = await Promise.all(
    Array.from({ length: clients }, async () => {
      const client = new Client({ name: 'bench-gateway', version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL(`${service.base}/mcp/bench`)));
      return client;
    }),
  );
  const rssBefore = service.rssMb();
  let rssPeak = rssBefore;
  const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, service.rssMb())), 100);
  const until = Date.now() + seconds * 1000;
  let refused = 0;
  let relayed = 0;
  const load = Promise.all(
    mcp.map(async (client) => {
      while (Date.now() < until) {
        const result = await client.callTool({ name: 'call_tool', arguments: { name: 'big_json', arguments: { bytes } } }, { timeout: 120_000 });
        if (result.isError) refused += 1;
        else relayed += 1;
      }
    }),
  );
  const loaded = summarize(await probe(service.base, until));
  await load;
  clearInterval(sampler);
  await Promise.all(mcp.map((client) => client.close()));
  const fmt = (s: ReturnType<typeof summarize>) => `${s.p50.toFixed(1)} / ${s.p99.toFixed(1)} / ${s.max.toFixed(1)}`;
  rows.push(
    `| ${cap} | ${fmt(idle)} (${idle.n}) | ${fmt(loaded)} (${loaded.n}) | ${refused} refused, ${relayed} relayed | ${rssBefore.toFixed(0)} -> ${rssPeak.toFixed(0)} MB |`,
  );
  await service.close();
}
upstream.kill('SIGTERM');
console.log(`\n/healthz while ${clients} clients call a tool answering ${values.mb} MB, ${seconds} s a phase (ms p50 / p99 / max, probes):\n`);
console.log('| UPSTREAM_MAX_RESULT_BYTES | idle | under load | calls | service RSS before -> peak under load |');
console.log('|---|---|---|---|---|');
console.log(rows.join('\n'));
process.exit(0);
