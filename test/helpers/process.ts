import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:net';

const root = new URL('../..', import.meta.url).pathname;

/**
 * The SECRETS_KEY of every test app and every service a test starts (upstream header values are
 * sealed with it): fixed, because the shared database outlives a run on PostgreSQL and a service
 * started on a store holding credentials without their key does not start. A test of other keys
 * (rotation, a missing key) uses a scratch database of its own: a start re-seals every stored
 * credential with its first key.
 */
export const TEST_SECRETS_KEY = Buffer.alloc(32, 7).toString('base64');

/** A TCP port nothing listens on right now, for a server process a test starts. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

/** The MCP reference server from npm (@modelcontextprotocol/server-everything) over Streamable HTTP on `port`, at /mcp. */
export async function startEverything(port: number): Promise<ChildProcess> {
  const child = spawn(process.execPath, [`${root}node_modules/@modelcontextprotocol/server-everything/dist/index.js`, 'streamableHttp'], {
    env: { ...process.env, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stderr!.on('data', (chunk) => (output += String(chunk)));
  child.stdout!.on('data', (chunk) => (output += String(chunk)));
  for (let tries = 0; ; tries++) {
    if (output.includes('listening on port')) return child;
    if (child.exitCode !== null || tries > 200) throw new Error(`server-everything did not start:\n${output}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * Writes an UPSTREAMS_FILE at `file` whose servers are the real server-filesystem from npm over
 * stdio, each on its folder, in its catalog (and tenant; default: the service's `default`).
 */
export function writeFilesystemUpstreams(
  file: string,
  servers: Record<string, { folder: string; catalog: string; tenant?: string; settings?: Record<string, unknown> }>,
): void {
  const mcpServers = Object.fromEntries(
    Object.entries(servers).map(([name, { folder, catalog, tenant, settings }]) => [
      name,
      {
        command: process.execPath,
        args: [`${root}node_modules/@modelcontextprotocol/server-filesystem/dist/index.js`, folder],
        catalog,
        ...(tenant ? { tenant } : {}),
        ...settings,
      },
    ]),
  );
  writeFileSync(file, JSON.stringify({ mcpServers }));
}

/** A child process with its stdout and stderr kept together, and its exit code once it exits. */
export interface CapturedProcess {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

/** Spawns `command args` in the repository with `env` over this process's environment, capturing its output. */
export function spawnCaptured(command: string, args: string[], env: Record<string, string>): CapturedProcess {
  const child = spawn(command, args, { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (chunk) => (output += String(chunk)));
  child.stderr!.on('data', (chunk) => (output += String(chunk)));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => output, exited };
}

/**
 * Waits until `url` answers 200; throws with the process's output when it exits first or
 * `timeoutMs` passes.
 */
export async function waitUntilAnswering(service: CapturedProcess, url: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (
      await fetch(url, { signal: AbortSignal.timeout(1_000) }).then(
        (response) => response.status === 200,
        () => false,
      )
    )
      return;
    if (service.child.exitCode !== null || Date.now() > deadline) {
      throw new Error(`${url} did not answer (exit ${service.child.exitCode}):\n${service.output()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** The service from source (`src/main.ts`) on a free port with `env`, once `/readyz` answers 200. */
export async function startService(env: Record<string, string>, timeoutMs = 60_000): Promise<CapturedProcess & { base: string }> {
  const port = await freePort();
  const service = spawnCaptured(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    PORT: String(port),
    HOST: '127.0.0.1',
    SECRETS_KEY: TEST_SECRETS_KEY,
    ...env,
  });
  const base = `http://127.0.0.1:${port}`;
  try {
    await waitUntilAnswering(service, `${base}/readyz`, timeoutMs);
  } catch (error) {
    service.child.kill('SIGKILL');
    throw error;
  }
  return { ...service, base };
}
