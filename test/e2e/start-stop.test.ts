// @store-independent: never opens the store the suite is given (vitest.config.ts runs it once, not again on PostgreSQL).
/**
 * Starting and stopping the way a newcomer and a process manager do: `npm start` on a built tree
 * (no tsc before every start), SIGTERM sent to npm's own process reaching the service, and a port
 * that is taken reported as a failure only (no "listening" line first).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { type AddressInfo, createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, spawnCaptured as run } from '../helpers/process.js';

const _root = new URL('../..', import.meta.url).pathname;
const dataDirs: string[] = [];

function serviceEnv(port: number): Record<string, string> {
  const dataDir = mkdtempSync(join(tmpdir(), 'toolsift-start-'));
  dataDirs.push(dataDir);
  return { PORT: String(port), HOST: '127.0.0.1', DATA_DIR: dataDir, LOG_LEVEL: 'info', EMBED_MODEL: 'none', DATABASE_URL: '', REDIS_URL: '' };
}

async function waitFor(check: () => Promise<boolean>, what: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}

const answers = async (url: string): Promise<boolean> =>
  fetch(url).then(
    (response) => response.ok,
    () => false,
  );

beforeAll(async () => {
  // The tree CI tests is built by `npm ci` (prepare); a developer's may be stale: build it now so
  // the test below measures a start on a built tree.
  const build = run(process.execPath, ['scripts/build.mjs'], {});
  expect(await build.exited, build.output()).toBe(0);
}, 180_000);

afterAll(() => {
  for (const dir of dataDirs) rmSync(dir, { recursive: true, force: true });
});

describe('npm start', () => {
  it('skips the compiler on a built tree, and SIGTERM to npm stops the service itself', async () => {
    const port = await freePort();
    const npm = run('npm', ['start', '--silent'], serviceEnv(port));
    try {
      await waitFor(() => answers(`http://127.0.0.1:${port}/healthz`), `/healthz\n${npm.output()}`, 60_000);
      expect(npm.output()).not.toContain('compiling src/');
      npm.child.kill('SIGTERM');
      expect(await npm.exited, npm.output()).not.toBe(null);
      // The node process behind npm must be gone too: the port is free again.
      await waitFor(async () => !(await answers(`http://127.0.0.1:${port}/healthz`)), 'the service to stop', 25_000);
      expect(npm.output()).toContain('"msg":"stopped"');
    } finally {
      if (npm.child.exitCode === null) npm.child.kill('SIGKILL');
    }
  });
});

describe('a port that is taken', () => {
  let blocker: Server;
  let port: number;
  beforeAll(async () => {
    port = await freePort();
    blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(port, '127.0.0.1', resolve));
  });
  afterAll(() => new Promise<void>((resolve) => blocker.close(() => resolve())));

  it('logs the failure, never "listening", and exits 1', async () => {
    const service = run(process.execPath, ['--max-semi-space-size=4', 'dist/src/main.js'], serviceEnv(port));
    expect(await service.exited, service.output()).toBe(1);
    expect(service.output()).toContain('HTTP server failed');
    expect(service.output()).toContain('EADDRINUSE');
    expect(service.output()).not.toContain('toolsift listening');
    // Reported before the store was opened or a model loaded: the port is bound first.
    expect(service.output()).not.toContain('database ready');
  });
});

describe('the moments between listening and ready', () => {
  // An embedding service that holds the start's dimension probe until the test lets it answer:
  // the start is deterministically in the middle of building the service.
  const held: Array<() => void> = [];
  let embeddings: HttpServer;
  let embeddingsUrl: string;
  beforeAll(async () => {
    embeddings = createHttpServer((request, response) => {
      request.resume();
      request.on('end', () =>
        held.push(() => {
          response.writeHead(200, { 'Content-Type': 'application/json' });
          response.end(
            JSON.stringify({
              object: 'list',
              data: [{ object: 'embedding', index: 0, embedding: [0.6, 0.8, 0] }],
              usage: { prompt_tokens: 2, total_tokens: 2 },
            }),
          );
        }),
      );
    });
    await new Promise<void>((resolve) => embeddings.listen(0, '127.0.0.1', resolve));
    embeddingsUrl = `http://127.0.0.1:${(embeddings.address() as AddressInfo).port}/v1`;
  });
  afterAll(() => new Promise<void>((resolve) => embeddings.close(() => resolve())));
  const release = () => {
    for (const answer of held.splice(0)) answer();
  };
  const startHeld = async () => {
    const port = await freePort();
    const env = { ...serviceEnv(port), EMBED_MODEL: 'openai:held', EMBED_BASE_URL: embeddingsUrl, EMBED_SERVICE_TIMEOUT_MS: '60000' };
    const service = run(process.execPath, ['--max-semi-space-size=4', 'dist/src/main.js'], env);
    await waitFor(async () => held.length > 0, `the start to ask the embedding service\n${service.output()}`, 60_000);
    return { service, base: `http://127.0.0.1:${port}` };
  };

  it('answers /healthz, says what is starting on /readyz and 503 with Retry-After elsewhere, then serves', async () => {
    const { service, base } = await startHeld();
    try {
      expect((await fetch(`${base}/healthz`)).status).toBe(200);
      const readiness = await fetch(`${base}/readyz`);
      expect(readiness.status).toBe(503);
      expect(await readiness.json()).toEqual({
        status: 'not_ready',
        components: { start: { status: 'down', reason: 'starting: loading the embedding model openai:held' } },
      });
      const early = await fetch(`${base}/v1/catalogs`);
      expect(early.status).toBe(503);
      expect(early.headers.get('retry-after')).toBe('1');
      expect((await early.json()).error).toMatchObject({ code: 'service_unavailable', message: expect.stringContaining('starting') });
      release();
      await waitFor(async () => (await fetch(`${base}/readyz`)).status === 200, `/readyz\n${service.output()}`, 60_000);
      expect((await fetch(`${base}/v1/catalogs`)).status).toBe(200);
    } finally {
      release();
      service.child.kill('SIGKILL');
      await service.exited;
    }
  });

  it('stops cleanly on SIGTERM while still starting', async () => {
    const { service } = await startHeld();
    try {
      service.child.kill('SIGTERM');
      release();
      expect(await service.exited, service.output()).toBe(0);
      expect(service.output()).toContain('"msg":"stopped"');
      expect(service.output()).not.toContain('toolsift ready');
    } finally {
      release();
      if (service.child.exitCode === null) service.child.kill('SIGKILL');
    }
  });
});
