// @store-independent: never opens the store the suite is given (vitest.config.ts runs it once, not again on PostgreSQL).
/**
 * A container runs node as PID 1: after a SIGKILL the embedded store's lock says "1", and the
 * restarted service is PID 1 again. It must start (the lock names a process that no longer runs),
 * not loop on "already open". Reproduced with a PID namespace (`unshare --pid --fork --mount-proc`,
 * root only: CI runs as root).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, spawnCaptured, waitUntilAnswering, type CapturedProcess } from '../helpers/process.js';

const root = new URL('../..', import.meta.url).pathname;

describe('restart as PID 1 after SIGKILL', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'toolsift-pid1-'));
  beforeAll(() => {
    const probe = spawnSync('unshare', ['--pid', '--fork', '--mount-proc', 'true']);
    if (probe.status !== 0) throw new Error(`this test needs unshare with PID namespaces (root): ${probe.stderr}`);
    const build = spawnSync(process.execPath, ['scripts/build.mjs'], { cwd: root, encoding: 'utf8' });
    expect(build.status, build.stderr).toBe(0);
  }, 180_000);
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  async function startAsPid1(port: number): Promise<CapturedProcess> {
    const service = spawnCaptured('unshare', ['--pid', '--fork', '--mount-proc', '--kill-child', process.execPath, 'dist/src/main.js'], {
      PORT: String(port),
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      EMBED_MODEL: 'none',
      DATABASE_URL: '',
      REDIS_URL: '',
      LOG_LEVEL: 'info',
    });
    await waitUntilAnswering(service, `http://127.0.0.1:${port}/readyz`, 30_000);
    return service;
  }

  it('starts again on the same data directory', async () => {
    const port = await freePort();
    const first = await startAsPid1(port);
    expect(JSON.parse(readFileSync(join(dataDir, 'toolsift.lock'), 'utf8')).pid).toBe(1);
    const exited = new Promise((resolve) => first.child.once('exit', resolve));
    first.child.kill('SIGKILL'); // unshare dies; --kill-child SIGKILLs the service: the lock stays
    await exited;
    for (
      let tries = 0;
      tries < 100 &&
      (await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(1_000) }).then(
        () => true,
        () => false,
      ));
      tries++
    ) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(JSON.parse(readFileSync(join(dataDir, 'toolsift.lock'), 'utf8')).pid).toBe(1);
    const second = await startAsPid1(port);
    expect(second.output()).not.toContain('already open');
    second.child.kill('SIGKILL');
    await new Promise((resolve) => second.child.once('exit', resolve));
  }, 120_000);
});
