import type { Config } from './config.js';
import type { CatalogDeps } from './catalog/catalog-service.js';
import type { Embedder, EmbedderStatus } from './embed/embedder.js';
import { loadEmbedder } from './embed/create-embedder.js';
import { withQueryCache } from './embed/query-cache.js';
import type { ReadinessCheck } from './http/health.js';
import type { EmbedQueue } from './jobs/embed-queue.js';
import { InProcessEmbedQueue } from './jobs/in-process-queue.js';
import { createLogger, type Logger } from './logger.js';
import type { RankDeps } from './search/hybrid-search.js';
import { openDatabase, type Database } from './store/database.js';
import { ensureVectorIndex } from './store/search-store.js';

/** Everything the service is made of, built once from the config and passed down. */
export interface Deps {
  config: Config;
  logger: Logger;
  database: Database;
  /** null when EMBED_MODEL=none or the model failed to load (see embedderStatus). */
  embedder: Embedder | null;
  embedderStatus: EmbedderStatus;
  /** null when there is no embedder: nothing to compute. */
  queue: EmbedQueue | null;
  catalog: CatalogDeps;
  search: RankDeps;
  readiness: ReadinessCheck[];
  close(): Promise<void>;
}

export interface DepsOverrides {
  logger?: Logger;
  /** An already open (and migrated) database, e.g. the one a test run shares. */
  database?: Database;
  /** An already loaded embedder (tests share one model across files); not closed by close(). */
  embedder?: Embedder | null;
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

  const ownsEmbedder = overrides.embedder === undefined;
  const loaded =
    overrides.embedder !== undefined
      ? {
          embedder: overrides.embedder,
          status: { state: overrides.embedder ? 'ready' : 'disabled', modelId: overrides.embedder?.modelId ?? 'none' } as EmbedderStatus,
        }
      : await loadEmbedder(
          {
            model: config.EMBED_MODEL,
            modelDir: config.MODEL_DIR,
            allowRemote: config.ALLOW_REMOTE_MODELS,
            threads: config.EMBED_THREADS,
            pooling: config.EMBED_POOLING,
            queryPrefix: config.EMBED_QUERY_PREFIX,
          },
          logger,
        );
  const embedder = loaded.embedder && config.QUERY_CACHE_SIZE > 0 ? withQueryCache(loaded.embedder, config.QUERY_CACHE_SIZE) : loaded.embedder;
  if (embedder) await ensureVectorIndex(database.db, embedder.modelId, embedder.dimension);

  const queue: EmbedQueue | null =
    embedder && config.EMBED_WORKER === 'inline'
      ? new InProcessEmbedQueue(database.db, embedder, {
          batchSize: config.EMBED_BATCH_SIZE,
          concurrency: config.EMBED_CONCURRENCY,
          logger,
        })
      : null;
  // Whatever an earlier run stored but did not embed (a crash, a restart) is picked up again.
  if (queue) {
    const jobs = await queue.enqueueMissing();
    if (jobs.length > 0) logger.info({ jobs: jobs.length }, 'resuming embedding of stored documents');
  }

  const readiness: ReadinessCheck[] = [
    { name: 'database', required: true, check: async () => ({ kind: database.kind, ...(await database.check()) }) },
    {
      name: 'embedder',
      required: false,
      check: async () => {
        if (loaded.status.state !== 'ready') {
          throw new Error(`${loaded.status.modelId}: ${loaded.status.state}${loaded.status.reason ? ` (${loaded.status.reason})` : ''}; ranking with BM25 only`);
        }
        return { model: loaded.status.modelId, dimension: embedder?.dimension };
      },
    },
  ];

  return {
    config,
    logger,
    database,
    embedder,
    embedderStatus: loaded.status,
    queue,
    catalog: { db: database.db, onDocumentsWritten: queue ? (hashes) => queue.enqueue(hashes) : undefined },
    search: { db: database.db, embedder },
    readiness,
    async close() {
      await queue?.close();
      if (ownsEmbedder) await embedder?.close();
      if (ownsDatabase) await database.close();
    },
  };
}
