import type { Config } from './config.js';
import type { CatalogDeps } from './catalog/catalog-service.js';
import type { ReadinessCheck } from './http/health.js';
import { createLogger, type Logger } from './logger.js';
import { openDatabase, type Database } from './store/database.js';

/** Everything the service is made of, built once from the config and passed down. */
export interface Deps {
  config: Config;
  logger: Logger;
  database: Database;
  catalog: CatalogDeps;
  readiness: ReadinessCheck[];
  close(): Promise<void>;
}

export interface DepsOverrides {
  logger?: Logger;
  /** An already open (and migrated) database, e.g. the one a test run shares. */
  database?: Database;
}

export async function createDeps(config: Config, overrides: DepsOverrides = {}): Promise<Deps> {
  const logger = overrides.logger ?? createLogger(config.LOG_LEVEL);
  const ownsDatabase = !overrides.database;
  const database = overrides.database ?? (await openDatabase({ databaseUrl: config.DATABASE_URL, dataDir: config.DATA_DIR }));
  try {
    if (ownsDatabase) await database.migrate();
  } catch (error) {
    await database.close();
    throw error;
  }
  logger.info({ store: database.kind, ...(database.kind === 'pglite' ? { dataDir: config.DATA_DIR } : {}) }, 'database ready');

  const readiness: ReadinessCheck[] = [
    { name: 'database', required: true, check: async () => ({ kind: database.kind, ...(await database.check()) }) },
  ];

  return {
    config,
    logger,
    database,
    catalog: { db: database.db },
    readiness,
    async close() {
      if (ownsDatabase) await database.close();
    },
  };
}
