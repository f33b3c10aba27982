/**
 * The service in a bench's own process: the HTTP app over `createDeps` on a free loopback port,
 * on `database` or a fresh in-memory PGlite. Benches that time the service from outside start it
 * as a process instead (bench/selector.ts, bench/lib/mixed-load.ts).
 */
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { loadConfig } from '../../src/config.js';
import { createDeps, type Deps } from '../../src/deps.js';
import { createApp } from '../../src/http/app.js';
import { openPglite, type Database } from '../../src/store/database.js';

export interface InProcessService {
  deps: Deps;
  /** `http://127.0.0.1:<port>` */
  base: string;
  /** Stops listening, then closes the service and the database. */
  close: () => Promise<void>;
}

/** `env` is read as the service reads its environment (loadConfig); logs are silent and the selector's budget is a minute unless `env` says otherwise. */
export async function startInProcess(env: Record<string, string>, database?: Database): Promise<InProcessService> {
  const config = loadConfig({ LOG_LEVEL: 'silent', SELECTOR_BUDGET_MS: '60000', ...env });
  if (!database) {
    database = await openPglite('memory://');
    await database.migrate();
  }
  const deps = await createDeps(config, { database, logger: pino({ level: 'silent' }) });
  const server = createApp(deps).listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const store = database;
  return {
    deps,
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      await new Promise((resolve) => server.close(resolve));
      await deps.close();
      await store.close();
    },
  };
}
