import type { Server } from 'node:http';
import { loadConfigOrExit } from './config.js';
import { createDeps } from './deps.js';
import { createApp } from './http/app.js';
import { createHttpServer } from './http/server.js';

/**
 * How long a shutdown takes at most, from SIGTERM to exit (inside the 30 s a container runtime
 * gives by default): in-flight requests get all but the last CLOSE_MS of it, closing the queue,
 * the model and the store that last part. What is unfinished then (a batch waiting to retry) is
 * left for the next start, which finds every tool still lacking a vector.
 */
const DRAIN_MS = 20_000;
const CLOSE_MS = 5_000;

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
  // Only the serving process sweeps (not `npm run worker`, nor tests and CLIs built on the same
  // deps); replicas sweeping side by side are safe (store/document-gc.ts). deps.close() stops it.
  deps.documentSweeper.start();
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
  /** `exitCode` 1: the service cannot go on (a supervisor should start it again). */
  const stop = async (signal: string, exitCode = 0) => {
    if (stopping) return;
    stopping = true;
    deps.logger.info({ signal }, 'shutting down: draining requests');
    // In-flight requests finish; keep-alive connections that stay idle are closed, and after
    // DRAIN_MS - CLOSE_MS whatever is still open is cut so a stuck client cannot hold the process
    // forever; at DRAIN_MS the process exits whatever is still closing.
    const force = setTimeout(() => server.closeAllConnections(), DRAIN_MS - CLOSE_MS);
    force.unref();
    const deadline = setTimeout(() => {
      deps.logger.error({ drainMs: DRAIN_MS }, 'shutdown did not finish in time: exiting; unfinished embedding resumes at the next start');
      process.exit(1);
    }, DRAIN_MS);
    deadline.unref();
    server.close(async () => {
      try {
        await deps.close();
        deps.logger.info('stopped');
        process.exit(exitCode);
      } catch (error) {
        deps.logger.error({ err: error }, 'error while closing');
        process.exit(1);
      }
    });
    server.closeIdleConnections();
  };
  // The embedded database's thread kept dying: every request would answer 503 until a restart, so
  // the process ends (exit code 1) for its supervisor, or its operator, to start it again.
  deps.database.onLost?.((error) => {
    deps.logger.fatal({ err: error }, 'the embedded database stopped for good: shutting down');
    void stop('database lost', 1);
  });
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}

main().catch((error: unknown) => {
  console.error(`toolsift failed to start: ${(error as Error).message}`);
  process.exit(1);
});
