/**
 * A start as `npm start` does it on a built tree (`node dist/src/main.js`), timed from the spawn:
 * until /healthz answers 200, until /readyz answers 200, and, with the port already taken, until
 * the process has said so and exited. Each start gets a new PGlite folder (the embedded default),
 * so the first start of each also migrates a new store. Targets (issue 75): /healthz within 2 s,
 * a taken port reported at once (within the same 2 s).
 *
 *   npm run bench:start-time -- [--starts 5] [--model use-lite|none]
 *
 * The last line is the JSON summary (ms: median and spread per measure).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { medianAndRange, summarize } from './lib/stats.js';

const { values } = parseArgs({
  options: {
    starts: { type: 'string', default: '5' },
    model: { type: 'string', default: 'use-lite' },
  },
});
const starts = Number(values.starts);
const root = new URL('..', import.meta.url).pathname;
const TIMEOUT_MS = 120_000;

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

function startService(port: number, dataDir: string) {
  const env: Record<string, string | undefined> = {
    ...process.env,
    PORT: String(port),
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    EMBED_MODEL: values.model,
    LOG_LEVEL: 'warn',
  };
  for (const name of ['DATABASE_URL', 'REDIS_URL', 'API_KEYS', 'UPSTREAMS_FILE']) delete env[name];
  const child = spawn(process.execPath, ['--max-semi-space-size=4', 'dist/src/main.js'], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk) => (output += String(chunk)));
  child.stderr.on('data', (chunk) => (output += String(chunk)));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { child, exited, output: () => output };
}

async function until(url: string, started: number, service: ReturnType<typeof startService>): Promise<number> {
  for (;;) {
    const ok = await fetch(url, { signal: AbortSignal.timeout(1_000) }).then(
      (response) => response.status === 200,
      () => false,
    );
    if (ok) return performance.now() - started;
    if (service.child.exitCode !== null || performance.now() - started > TIMEOUT_MS) throw new Error(`${url} never answered 200:\n${service.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

// The tree is built as `npm start` would (its prestart step), before anything is timed.
const build = spawn(process.execPath, ['scripts/build.mjs'], { cwd: root, stdio: 'inherit' });
if ((await new Promise((resolve) => build.once('exit', resolve))) !== 0) throw new Error('build failed');

const healthz: number[] = [];
const readyz: number[] = [];
const busy: number[] = [];
for (let run = 0; run < starts; run++) {
  const dataDir = mkdtempSync(join(tmpdir(), 'toolsift-start-time-'));
  const port = await freePort();
  const started = performance.now();
  const service = startService(port, dataDir);
  try {
    healthz.push(await until(`http://127.0.0.1:${port}/healthz`, started, service));
    readyz.push(await until(`http://127.0.0.1:${port}/readyz`, started, service));
    // The same port again while it is held: the second process must say so and exit.
    const second = startService(port, mkdtempSync(join(tmpdir(), 'toolsift-start-time-')));
    const secondStarted = performance.now();
    const code = await second.exited;
    busy.push(performance.now() - secondStarted);
    if (code !== 1 || !second.output().includes('EADDRINUSE')) throw new Error(`a taken port was not reported (exit ${code}):\n${second.output()}`);
  } finally {
    service.child.kill('SIGTERM');
    await service.exited;
    rmSync(dataDir, { recursive: true, force: true });
  }
  console.log(
    `start ${run + 1}: /healthz ${healthz.at(-1)!.toFixed(0)} ms, /readyz ${readyz.at(-1)!.toFixed(0)} ms, taken port reported ${busy.at(-1)!.toFixed(0)} ms`,
  );
}

console.log(`\n${starts} starts, EMBED_MODEL=${values.model}, PGlite (a new folder each), ms median [min .. max]:`);
console.log(`| /healthz 200 | /readyz 200 | taken port reported (exit 1) |\n|---|---|---|`);
console.log(`| ${medianAndRange(healthz, 0)} | ${medianAndRange(readyz, 0)} | ${medianAndRange(busy, 0)} |`);
const met = summarize(healthz).p50 <= 2_000 && summarize(busy).p50 <= 2_000;
console.log(`target (/healthz and a taken port within 2 s, median): ${met ? 'met' : 'NOT met'}`);
console.log(JSON.stringify({ starts, model: values.model, healthz_ms: summarize(healthz), readyz_ms: summarize(readyz), taken_port_ms: summarize(busy), met }));
process.exit(met ? 0 : 1);
