import type { Server } from 'node:http';
import { loadConfigOrExit } from './config.js';
import { createDeps } from './deps.js';
import { createApp } from './http/app.js';
import { createHttpServer } from './http/server.js';

/** How long in-flight requests get to finish after SIGTERM. */
const DRAIN_MS = 20_000;

const USAGE = `toolsift: tool discovery over HTTP and MCP.
usage: npm start            (or: node --max-semi-space-size=4 dist/src/main.js)
Configuration is read from environment variables (PORT, DATABASE_URL, REDIS_URL, API_KEYS, EMBED_MODEL, ...);
see the README's configuration table. Docs at http://localhost:8080/docs once running.`;

/** `npm start`: read config, build deps, serve HTTP; SIGTERM/SIGINT drain and close. */
async function main(): Promise<void> {
  if (process.argv.includes('--help') || process.argv.includes('-h')) {
    console.log(USAGE);
    process.exit(0);
  }
  const config = loadConfigOrExit();
  const deps = await createDeps(config);
  if (!config.API_KEYS || config.API_KEYS.size === 0) {
    deps.logger.warn('API_KEYS is not set: every endpoint is open and all callers share the "default" tenant');
  }
  const app = createApp(deps);
  // A failure to listen (EADDRINUSE, EACCES) goes to the 'error' handler below, never the callback.
  const server: Server = createHttpServer(config, app);
  server.listen(config.PORT, config.HOST, () => {
    deps.logger.info({ port: config.PORT, host: config.HOST }, 'toolsift listening');
  });
  server.on('error', async (error) => {
    deps.logger.fatal({ err: error }, 'HTTP server failed');
    await deps.close();
    process.exit(1);
  });

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    deps.logger.info({ signal }, 'shutting down: draining requests');
    // In-flight requests finish; keep-alive connections that stay idle are closed, and after
    // DRAIN_MS whatever is still open is cut so a stuck client cannot hold the process forever.
    const force = setTimeout(() => server.closeAllConnections(), DRAIN_MS);
    force.unref();
    server.close(async () => {
      try {
        await deps.close();
        deps.logger.info('stopped');
        process.exit(0);
      } catch (error) {
        deps.logger.error({ err: error }, 'error while closing');
        process.exit(1);
      }
    });
    server.closeIdleConnections();
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}

main().catch((error: unknown) => {
  console.error(`toolsift failed to start: ${(error as Error).message}`);
  process.exit(1);
});
