import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';

const root = new URL('../..', import.meta.url).pathname;

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
