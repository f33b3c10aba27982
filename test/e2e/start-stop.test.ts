/**
 * Starting and stopping the way a newcomer and a process manager do: `npm start` on a built tree
 * (no tsc before every start), SIGTERM sent to npm's own process reaching the service, and a port
 * that is taken reported as a failure only (no "listening" line first).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
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
  });
});
