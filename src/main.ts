import type { RequestListener, Server } from 'node:http';
import { loadConfigOrExit } from './config.js';
import type { Deps } from './deps.js';
import { createHttpServer } from './http/server.js';
import { startingListener } from './http/starting.js';
import { createLogger } from './logger.js';

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

/**
 * `npm start`: read config, listen, then build deps and serve; SIGTERM/SIGINT drain and close.
 *
 * The port is bound first, before the database, the model or the catalogs are touched: a taken
 * port is reported at once, and /healthz answers within the process's own start (about a second)
 * while /readyz says what is still starting. Every other request meanwhile answers 503 with
 * Retry-After (http/starting.ts); the service's own app replaces that listener when deps are built.
 */
async function main(): Promise<void> {
  if (process.argv.includes('--help') || process.argv.includes('-h')) {
    console.log(USAGE);
    process.exit(0);
  }
  const config = loadConfigOrExit();
  const logger = createLogger(config.LOG_LEVEL);
  let phase = 'opening the store';
  let serve: RequestListener = startingListener(() => phase);
  // A failure to listen (EADDRINUSE, EACCES) goes to the 'error' handler below, never the callback.
  const server: Server = createHttpServer(config, (request, response) => serve(request, response));
  let deps: Deps | undefined;
  server.on('error', async (error) => {
    logger.fatal({ err: error }, 'HTTP server failed');
    await deps?.close();
    process.exit(1);
  });
  await new Promise<void>((resolve) => server.listen(config.PORT, config.HOST, resolve));
  logger.info({ port: config.PORT, host: config.HOST }, 'toolsift listening');

  let stopping = false;
  let exitCode = 0;
  /** `code` 1: the service cannot go on (a supervisor should start it again). */
  const stop = (signal: string, code = 0) => {
    if (stopping) return;
    stopping = true;
    exitCode = code;
    logger.info({ signal }, 'shutting down: draining requests');
    // At DRAIN_MS the process exits whatever is still closing (or still starting).
    const deadline = setTimeout(() => {
      logger.error({ drainMs: DRAIN_MS }, 'shutdown did not finish in time: exiting; unfinished embedding resumes at the next start');
      process.exit(1);
    }, DRAIN_MS);
    deadline.unref();
    // Still starting: the start below closes what it built once createDeps returns.
    if (deps) void drain(deps);
  };
  /**
   * In-flight requests finish; keep-alive connections that stay idle are closed, and after
   * DRAIN_MS - CLOSE_MS whatever is still open is cut so a stuck client cannot hold the process forever.
   */
  const drain = (built: Deps) => {
    const force = setTimeout(() => server.closeAllConnections(), DRAIN_MS - CLOSE_MS);
    force.unref();
    server.close(async () => {
      try {
        await built.close();
        logger.info('stopped');
        process.exit(exitCode);
      } catch (error) {
        logger.error({ err: error }, 'error while closing');
        process.exit(1);
      }
    });
    server.closeIdleConnections();
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));

  // Imported after listening: the modules behind deps (the store, the model's runtime) take a
  // while to load on a slow machine, and /healthz should not wait for them.
  const { createDeps } = await import('./deps.js');
  const built = await createDeps(config, { logger, onPhase: (next) => (phase = next) });
  deps = built;
  if (stopping) {
    drain(built);
    return;
  }
  if (!config.API_KEYS || config.API_KEYS.size === 0) {
    logger.warn('API_KEYS is not set: every endpoint is open and all callers share the "default" tenant');
  }
  // Only the serving process sweeps (not `npm run worker`, nor tests and CLIs built on the same
  // deps); replicas sweeping side by side are safe (store/document-gc.ts). deps.close() stops it.
  built.documentSweeper.start();
  // The embedded database's thread kept dying: every request would answer 503 until a restart, so
  // the process ends (exit code 1) for its supervisor, or its operator, to start it again.
  built.database.onLost?.((error) => {
    logger.fatal({ err: error }, 'the embedded database stopped for good: shutting down');
    stop('database lost', 1);
  });
  const { createApp } = await import('./http/app.js');
  serve = createApp(built);
  logger.info({ port: config.PORT, host: config.HOST }, 'toolsift ready');
}

main().catch((error: unknown) => {
  console.error(`toolsift failed to start: ${(error as Error).message}`);
  process.exit(1);
});
