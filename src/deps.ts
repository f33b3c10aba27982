import type { Config } from './config.js';
import type { TenantLimits } from './store/catalog-store.js';
import type { CatalogDeps, WrittenChanges } from './catalog/catalog-service.js';
import type { Embedder, EmbedderStatus } from './embed/embedder.js';
import { loadEmbedder } from './embed/create-embedder.js';
import { withVectorFile } from './embed/vector-file.js';
import { withQueryCache } from './embed/query-cache.js';
import type { ReadinessCheck } from './http/health.js';
import type { EmbedQueue } from './jobs/embed-queue.js';
import { InProcessEmbedQueue } from './jobs/in-process-queue.js';
import { BullmqEmbedQueue, connectRedis } from './jobs/bullmq-queue.js';
import { startEmbedWorker, type EmbedWorker } from './jobs/bullmq-worker.js';
import { redisBuckets, type SharedBuckets } from './store/shared-buckets.js';
import { parseEgressProxy } from './upstream/egress-proxy.js';
import { DISABLED_MODEL } from './embed/create-embedder.js';
import { TermsRefresh } from './catalog/refresh-terms.js';
import { refreshDefinitionTokens } from './catalog/refresh-tokens.js';
import { TokenCounter } from './catalog/tokens.js';
import { startTokenThread } from './catalog/token-thread.js';
import { createLogger, type Logger } from './logger.js';
import { createMetrics, type Metrics, type MetricSources } from './metrics.js';
import type { RankDeps } from './search/hybrid-search.js';
import type { SelectorDeps } from './search/selector.js';
import { BackgroundWork } from './lib/background-work.js';
import { KnownBytes } from './lib/known-bytes.js';
import { LruCache } from './lib/lru-cache.js';
import { VectorCache } from './store/vector-cache.js';
import { CatalogVectorCache } from './search/catalog-vectors.js';
import { SeenTools } from './search/seen-tools.js';
import { CatalogIndexCache } from './search/catalog-index.js';
import { CatalogEmbeddingStatus } from './catalog/embedding-status.js';
import { ServerStatsCache } from './search/server-stats.js';
import { DocumentSweeper, documentUseIntervalMs, retentionMs, SWEEP_PAGE } from './store/document-gc.js';
import { PURGE_PAGE, purgeFeedback } from './store/feedback-store.js';
import { LEARNED_REFRESH_MS, LearnedCache } from './search/learned-cache.js';
import { RecentSearches } from './search/feedback.js';
import { DocumentUse } from './store/document-use.js';
import { openDatabase, type Database } from './store/database.js';
import { ensureVectorIndex } from './store/search-store.js';
import { SELECTOR_STORE_SLICE, STORE_CONCURRENCY, STORE_SLICE } from './store/tool-store.js';
import { readUpstreamsFile, UpstreamService } from './upstream/upstreams.js';
import { parseAllowList } from './upstream/address-policy.js';
import { createSecretBox, type SecretBox } from './lib/secret-box.js';
import { sealStoredSecrets } from './store/stored-secrets.js';
import { auditLog, type AuditLog } from './audit.js';
import { SandboxPool, type SandboxLimits } from './sandbox/sandbox-pool.js';
import { createReranker } from './embed/reranker.js';
import type { RerankStage } from './search/hybrid-search.js';
import { serviceVersion } from './lib/paths.js';
import { RegexSandbox } from './search/patterns.js';
import { loadEnglishWords } from './ranking/dictionary.js';
import { TOOL_LIST_BYTES, TOOL_LIST_CACHE_LISTS, TOOL_LIST_CACHE_TOOLS } from './search/selector.js';
import { StoreBreaker } from './search/store-breaker.js';
import { newWarmUp, WARM_UP_READY_MAX_MS, warmCatalogs } from './search/warm-up.js';
import { NO_TRACING, type Tracing } from './tracing/tracing.js';
import { otlpSettings } from './tracing/otlp-settings.js';

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
  /** The BullMQ worker running inside this process (REDIS_URL with EMBED_WORKER=inline). */
  embedWorker: EmbedWorker | null;
  catalog: CatalogDeps;
  search: RankDeps;
  selector: SelectorDeps;
  /** Upstream MCP servers synced into catalogs; call_tool reaches tools through it. */
  upstreams: UpstreamService;
  /** The gateway's audit trail: proxied calls, pins, quarantines, decisions, refused addresses. */
  audit: AuditLog;
  /** Seals the credentials the store keeps (SECRETS_KEY; lib/secret-box.ts). */
  secrets: SecretBox;
  /** Code mode's worker pool (CODE_MODE=on), else null. */
  sandbox: SandboxPool | null;
  readiness: ReadinessCheck[];
  metrics: Metrics;
  /** Removes stored documents nothing uses any more (store/document-gc.ts); started by `npm start` only. */
  documentSweeper: DocumentSweeper;
  /** Rate limits' buckets in Redis (REDIS_URL with a limit set), shared by the replicas; null: per process. */
  rateBuckets: SharedBuckets | null;
  /** Spans exported over OTLP (OTEL_EXPORTER_OTLP_*), else NO_TRACING. */
  tracing: Tracing;
  close(): Promise<void>;
}

export interface DepsOverrides {
  logger?: Logger;
  /** An already open (and migrated) database, e.g. the one a test run shares. */
  database?: Database;
  /** An already loaded embedder (tests share one model across files); not closed by close(). */
  embedder?: Embedder | null;
  /** False for a process that answers no searches (`npm run worker`): nothing search-only is loaded. */
  searches?: boolean;
  /** Told what the start is doing, for /readyz while the port already answers (main.ts). */
  onPhase?: (phase: string) => void;
  /** The background refresh of older BM25 terms waits for this too (tests search while terms are stale). */
  holdTermsRefresh?: Promise<unknown>;
  /** The model's vectors kept in (and answered from) this file (embed/vector-file.ts): `npm run eval -- --vector-file`. */
  vectorFile?: string;
}

export async function createDeps(config: Config, overrides: DepsOverrides = {}): Promise<Deps> {
  const logger = overrides.logger ?? createLogger(config.LOG_LEVEL);
  const phase = overrides.onPhase ?? (() => {});
  const ownsDatabase = !overrides.database;
  const database = overrides.database ?? (await openDatabase({ databaseUrl: config.DATABASE_URL, dataDir: config.DATA_DIR, timeoutMs: config.DB_TIMEOUT_MS }));
  try {
    phase('migrating the store');
    if (ownsDatabase) await database.migrate();
  } catch (error) {
    await database.close();
    throw database.kind === 'postgres' ? explainConnectError(error, config.DATABASE_URL!) : error;
  }
  logger.info({ store: database.kind, ...(database.kind === 'pglite' ? { dataDir: config.DATA_DIR } : {}) }, 'database ready');
  // Credentials in the store are sealed with SECRETS_KEY's first key before anything uses them
  // (plaintext of an older release, values of a rotated-out key); a store SECRETS_KEY cannot serve stops the start.
  const secrets = createSecretBox(config.SECRETS_KEY);
  try {
    phase('sealing stored credentials (SECRETS_KEY)');
    await sealStoredSecrets(database.db, secrets, logger);
  } catch (error) {
    if (ownsDatabase) await database.close();
    throw error;
  }
  // Terms of an older BM25 recipe are recomputed in the background once the catalogs are read
  // (below); meanwhile searches rank from in-process indexes, one recipe in every score.
  const termsRefresh = new TermsRefresh(database.db, logger, STORE_SLICE[database.kind]);
  await termsRefresh.check();
  // Definition tokens are counted off the main thread (started in the background; see token-thread.ts).
  const tokenCounter = startTokenThread(logger);
  await refreshDefinitionTokens(database.db, tokenCounter, logger);

  const ownsEmbedder = overrides.embedder === undefined;
  phase(`loading the embedding model ${config.EMBED_MODEL}`);
  let serviceEvents: (event: { kind: 'query' | 'documents'; outcome: 'ok' | 'error'; tokens: number; ms: number }) => void = () => {};
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
            threadNice: config.EMBED_THREAD_NICE,
            pooling: config.EMBED_POOLING,
            queryPrefix: config.EMBED_QUERY_PREFIX,
            service: {
              baseUrl: config.EMBED_BASE_URL,
              apiKey: config.EMBED_API_KEY,
              dimensions: config.EMBED_DIMENSIONS,
              batchSize: config.EMBED_SERVICE_BATCH,
              concurrency: config.EMBED_SERVICE_CONCURRENCY,
              timeoutMs: config.EMBED_SERVICE_TIMEOUT_MS,
              maxRetries: config.EMBED_SERVICE_RETRIES,
              // Metrics are built after the model (they read its status): events reach them once they exist.
              observe: (event) => serviceEvents(event),
            },
          },
          logger,
        );
  const model = loaded.embedder && overrides.vectorFile ? withVectorFile(loaded.embedder, overrides.vectorFile) : loaded.embedder;
  const embedder = model && config.QUERY_CACHE_SIZE > 0 ? withQueryCache(model, config.QUERY_CACHE_SIZE) : model;
  // The English words that tell typos apart for the dense query (~12 MB), read now rather than on the
  // first query with a misspelled word (~40 ms); without a model, or in a worker, nothing reads them.
  if (embedder && overrides.searches !== false) loadEnglishWords();
  if (embedder) await ensureVectorIndex(database.adminDb, embedder.modelId, embedder.dimension);

  // Built before the queue so workers can count what they write; the queue is read at scrape time.
  // The indexes are built below; a scrape reads them once they are.
  let indexMemory: MetricSources['memory'];
  const metrics = createMetrics({ queue: () => queue, embedder: () => loaded.status, memory: () => indexMemory?.() ?? {} });
  serviceEvents = ({ kind, outcome, tokens, ms }) => {
    metrics.embedServiceRequests.observe({ kind, outcome }, ms / 1000);
    if (tokens > 0) metrics.embedServiceTokens.inc({ kind }, tokens);
  };
  let queue: EmbedQueue | null = null;
  let embedWorker: EmbedWorker | null = null;
  phase('connecting the embedding queue');
  try {
    if (config.REDIS_URL && config.EMBED_MODEL !== DISABLED_MODEL) {
      // Redis unreachable at start is fatal (connectRedis names the URL): silently embedding
      // in-process would leave the separate workers idle and replicas doing the work twice.
      // A process whose model failed to load still enqueues; workers with the model do the work.
      queue = new BullmqEmbedQueue(database.db, {
        connection: await connectRedis(config.REDIS_URL),
        model: embedder?.modelId ?? config.EMBED_MODEL,
        batchSize: config.EMBED_BATCH_SIZE,
        prefix: config.QUEUE_PREFIX,
        logger,
      });
      if (embedder && config.EMBED_WORKER === 'inline') {
        embedWorker = await startEmbedWorker({
          db: database.db,
          embedder,
          redisUrl: config.REDIS_URL,
          prefix: config.QUEUE_PREFIX,
          concurrency: config.EMBED_CONCURRENCY,
          stalledMs: config.EMBED_STALLED_MS,
          logger,
          onEmbedded: (count) => metrics.embeddingsWritten.inc({ model: embedder.modelId }, count),
        });
      }
    } else if (embedder && config.EMBED_WORKER === 'inline') {
      queue = new InProcessEmbedQueue(database.db, embedder, {
        batchSize: config.EMBED_BATCH_SIZE,
        concurrency: config.EMBED_CONCURRENCY,
        logger,
        onEmbedded: (count) => metrics.embeddingsWritten.inc({ model: embedder.modelId }, count),
      });
    }
  } catch (error) {
    await queue?.close();
    await tokenCounter.close();
    if (ownsEmbedder) await embedder?.close();
    if (ownsDatabase) await database.close();
    throw error;
  }
  // Whatever an earlier run stored but did not embed (a crash, a restart) is picked up again.
  if (queue) {
    const jobs = await queue.enqueueMissing();
    if (jobs.length > 0) logger.info({ jobs: jobs.length }, 'resuming embedding of stored documents');
  }

  const readiness: ReadinessCheck[] = [
    { name: 'database', required: true, check: async () => ({ kind: database.kind, ...(await database.check()) }) },
    {
      // A configured model that cannot load (a wrong EMBED_MODEL, a missing folder or package, a
      // service refusing the key or the model) makes the service unready, so a rollout with it
      // stops at its first replica; searches it is sent meanwhile rank with BM25. An embedding
      // service that was only unreachable, and every failure after a good start, only report.
      name: 'embedder',
      required: loaded.status.state === 'unavailable' && !loaded.status.transient,
      check: async () => {
        if (loaded.status.state !== 'ready') {
          throw new Error(
            `${loaded.status.modelId}: ${loaded.status.state}${loaded.status.reason ? ` (${loaded.status.reason})` : ''}; ranking with BM25 only`,
          );
        }
        // An embedding service that stopped answering: searches rank with BM25 until it is back.
        const failure = embedder?.lastFailure?.();
        if (failure) throw new Error(`${loaded.status.modelId}: the embedding service is failing (${failure}); ranking with BM25 only`);
        return { model: loaded.status.modelId, dimension: embedder?.dimension };
      },
    },
    {
      // Not required: search and reads work without Redis; ingestion answers 503 until it is back.
      name: 'queue',
      required: false,
      check: async () => {
        if (!queue) return { kind: 'none' };
        const { kind, model, ...counts } = await queue.status();
        if (kind === 'bullmq' && counts.workers === 0) {
          // Search stays available; embedding does not progress until a worker runs.
          const age = counts.oldestWaitingMs ? `, the oldest waiting ${Math.round(counts.oldestWaitingMs / 1000)} s` : '';
          throw new Error(
            `embedding not ready: no worker consumes the queue (${counts.waiting} jobs waiting${age}); start \`npm run worker\` or set EMBED_WORKER=inline`,
          );
        }
        return { kind, model, inlineWorker: embedWorker !== null || kind === 'in-process', ...counts };
      },
    },
  ];

  // One count of a catalog's embedding progress serves its readers and its searches.
  const embeddingStatus = new CatalogEmbeddingStatus();
  const catalogIndexes = new CatalogIndexCache(database.adminDb, config.CATALOG_INDEX_MEMORY * 2 ** 20);
  // Vectors by content hash, shared by request lists and catalogs of up to VECTORS_IN_PROCESS_MAX tools.
  const vectorCache = new VectorCache();
  const catalogDeps = {
    db: database.db,
    // A searched catalog's new index is derived as the write answers: its next search here finds it
    // ready. Through the request path's connections: a search may join this derivation, and must
    // not wait past DB_TIMEOUT_MS for it.
    onCatalogChanged: (catalog: { id: number; revision: number }, written?: WrittenChanges) => catalogIndexes.refresh(catalog, database.db, written),
    writeSlice: STORE_SLICE[database.kind],
    writeConcurrency: STORE_CONCURRENCY[database.kind],
    onDocumentsWritten: queue ? (hashes: string[]) => queue!.enqueue(hashes) : undefined,
    embedding: queue ? { model: embedder?.modelId ?? config.EMBED_MODEL, failedHashes: () => queue!.failedHashes(), status: embeddingStatus } : undefined,
    tokenCounter,
    scanPolicy: config.SCAN_POLICY,
    resultScanMin: config.RESULT_SCAN_MIN,
    tenantLimits: tenantLimits(config),
  };
  // The OpenTelemetry SDK is loaded only when an endpoint is configured (a worker's too: it serves no
  // requests, but the upstreams' syncs it runs are spans).
  const tracingSettings = otlpSettings(config, serviceVersion());
  const tracing = tracingSettings ? (await import('./tracing/otlp.js')).startOtlpTracing(tracingSettings, logger, serviceVersion()) : NO_TRACING;
  const audit = auditLog(logger, metrics);
  const upstreams = new UpstreamService({
    db: database.db,
    tracing,
    catalog: catalogDeps,
    stdioServers: config.UPSTREAMS_FILE ? readUpstreamsFile(config.UPSTREAMS_FILE) : undefined,
    logger,
    metrics,
    audit,
    callTimeoutMs: config.UPSTREAM_CALL_TIMEOUT_MS,
    connectTimeoutMs: config.UPSTREAM_CONNECT_TIMEOUT_MS,
    maxResultBytes: config.UPSTREAM_MAX_RESULT_BYTES,
    allow: parseAllowList(config.UPSTREAM_ALLOW),
    version: serviceVersion(),
    secrets,
    resultScanMin: config.RESULT_SCAN_MIN,
    proxy: parseEgressProxy(config.UPSTREAM_PROXY, config.UPSTREAM_PROXY_CONNECT, config.UPSTREAM_NO_PROXY),
    // config.ts refuses the metadata URL without the redirect URL the document names.
    clientMetadata:
      config.OAUTH_CLIENT_METADATA_URL && config.OAUTH_REDIRECT_URL
        ? { base: config.OAUTH_CLIENT_METADATA_URL, redirectUri: config.OAUTH_REDIRECT_URL }
        : undefined,
  });
  upstreams.start();
  const rateBuckets = await sharedRateBuckets(config, logger);
  phase('starting the stdio upstream servers (UPSTREAMS_FILE)');
  await upstreams.startStdioServers();

  // Code mode's sandbox: one worker started now (loading the engine and the transpiler), the rest as programs come.
  const sandbox =
    config.CODE_MODE === 'on'
      ? new SandboxPool({
          workers: config.CODE_MODE_WORKERS,
          nice: config.CODE_MODE_NICE,
          limits: sandboxLimits(config),
          onWorkerLost: (reason) => {
            logger.warn({ reason }, 'code mode: a sandbox worker was replaced');
            metrics.sandboxWorkersLost.inc();
          },
        })
      : null;
  sandbox?.warm().catch((error: Error) => logger.error({ err: error }, 'code mode: the sandbox did not start'));

  // Documents no catalog holds and no request used within DOCUMENT_RETENTION_HOURS are swept;
  // requests mark the documents they use (at most once an interval each).
  const retention = retentionMs(config.DOCUMENT_RETENTION_HOURS);
  const documentUse = new DocumentUse(database.db, { everyMs: documentUseIntervalMs(retention), logger });
  const documentSweeper = new DocumentSweeper(database.db, {
    retentionMs: retention,
    everyMs: documentUseIntervalMs(retention),
    pageSize: SWEEP_PAGE[database.kind],
    logger,
    onRemoved: (count) => metrics.documentsRemoved.inc(count),
    alsoSweep: async () => {
      const { expired, stale } = await purgeFeedback(database.db, config.FEEDBACK_RETENTION_DAYS * 86_400, PURGE_PAGE[database.kind]);
      if (expired > 0) logger.info({ removed: expired, retentionDays: config.FEEDBACK_RETENTION_DAYS }, 'removed feedback events past their retention');
      if (stale > 0) logger.info({ removed: stale }, 'removed feedback events of tool definitions their catalogs no longer hold');
    },
  });

  // The rerank stage (RERANK_URL): every hybrid ranking's head, within its deadline.
  const rerank: RerankStage | undefined = config.RERANK_URL
    ? {
        reranker: createReranker({ url: config.RERANK_URL, apiKey: config.RERANK_API_KEY, model: config.RERANK_MODEL, format: config.RERANK_FORMAT }),
        topN: config.RERANK_TOP_N,
        deadlineMs: config.RERANK_DEADLINE_MS,
        mode: config.RERANK_MODE,
        observe: (outcome, ms) => metrics.rerankRequests.observe({ outcome }, ms / 1000),
      }
    : undefined;

  const selector: SelectorDeps = {
    db: database.db,
    embedder,
    ...(config.EMBED_MULTILINGUAL === undefined ? {} : { multilingual: config.EMBED_MULTILINGUAL }),
    ...(rerank ? { rerank } : {}),
    vectors: vectorCache,
    queue,
    toolCache: new LruCache(20_000),
    toolListCache: new LruCache(TOOL_LIST_CACHE_LISTS, { max: TOOL_LIST_CACHE_TOOLS, weigh: (list) => list.tools.length }),
    toolListBytes: new KnownBytes(TOOL_LIST_BYTES),
    background: new BackgroundWork(),
    regexSandbox: new RegexSandbox(),
    budgetMs: config.SELECTOR_BUDGET_MS,
    writeSlice: SELECTOR_STORE_SLICE[database.kind],
    tokens: new TokenCounter(tokenCounter),
    tokenCounter,
    documentUse,
    logger,
    metrics,
  };
  const search = {
    db: database.db,
    embedder,
    ...(config.EMBED_MULTILINGUAL === undefined ? {} : { multilingual: config.EMBED_MULTILINGUAL }),
    ...(rerank ? { rerank } : {}),
    serverStats: new ServerStatsCache(),
    catalogIndexes,
    storedTerms: termsRefresh,
    embeddingStatus,
    catalogVectors: new CatalogVectorCache(vectorCache),
    storeBreaker: new StoreBreaker(),
    seenTools: new SeenTools(),
    ...(config.LEARNING === 'on'
      ? {
          learned: new LearnedCache({
            retentionSeconds: config.FEEDBACK_RETENTION_DAYS * 86_400,
            halfLifeSeconds: config.FEEDBACK_HALF_LIFE_DAYS * 86_400,
            refreshMs: LEARNED_REFRESH_MS,
            memoryBytes: config.LEARNED_MEMORY * 2 ** 20,
          }),
        }
      : {}),
    recentSearches: new RecentSearches(),
  };
  indexMemory = () => ({
    catalog_index: { bytes: catalogIndexes.bytes, budget: catalogIndexes.budget },
    ...(search.learned ? { learned_index: { bytes: search.learned.bytes, budget: search.learned.budget } } : {}),
  });
  // Catalogs read into process before the service says it is ready (not in a worker process, which answers no searches).
  let closing = false;
  const warmUp = newWarmUp();
  const warming = config.CATALOG_WARMUP && overrides.searches !== false;
  const warmUpStarted = performance.now();
  if (warming) {
    void warmCatalogs(search, database.adminDb, warmUp, () => closing).then(() => {
      const { state, ...done } = warmUp;
      if (state === 'failed') logger.warn(done, 'catalogs not read at start; each is read on its first search');
      else logger.info({ ...done, ms: Math.round(done.ms), index_mb: Math.round(catalogIndexes.bytes / 2 ** 20) }, 'catalogs read at start');
    });
  } else {
    warmUp.state = 'done';
  }
  let termsHeld = overrides.holdTermsRefresh !== undefined;
  const releaseTerms = () => {
    termsHeld = false;
  };
  void overrides.holdTermsRefresh?.then(releaseTerms, releaseTerms);
  termsRefresh.start(() => !termsHeld && (warmUp.state !== 'reading' || performance.now() - warmUpStarted >= WARM_UP_READY_MAX_MS));
  readiness.push({
    // Not required: searches rank correctly meanwhile (in process), only the SQL fallback waits.
    name: 'terms',
    required: false,
    check: async () => termsRefresh.report(),
  });
  readiness.push({
    name: 'catalogs',
    required: true,
    check: async () => {
      const elapsed = performance.now() - warmUpStarted;
      if (warmUp.state === 'reading' && elapsed < WARM_UP_READY_MAX_MS) {
        throw new Error(`reading the stored catalogs into process: ${warmUp.read + warmUp.skipped} of ${warmUp.of || '?'} (CATALOG_WARMUP)`);
      }
      return warming
        ? {
            read_at_start: warmUp.read,
            of: warmUp.of,
            skipped: warmUp.skipped,
            ...(warmUp.state === 'reading' ? { still_reading: true } : {}),
            ...(warmUp.reason ? { reason: warmUp.reason } : {}),
          }
        : { read_at_start: 'off' };
    },
  });
  return {
    config,
    logger,
    database,
    embedder,
    embedderStatus: loaded.status,
    queue,
    embedWorker,
    catalog: catalogDeps,
    search,
    selector,
    upstreams,
    sandbox,
    audit,
    secrets,
    readiness,
    metrics,
    documentSweeper,
    rateBuckets,
    tracing,
    async close() {
      closing = true;
      await rateBuckets?.close();
      await documentSweeper.stop();
      await termsRefresh.stop();
      await upstreams.close();
      await sandbox?.close();
      // The last spans go to the collector (within a bound) once no request or call makes more.
      await tracing.close();
      // Marks of documents used are written, then answered selector requests may still be storing
      // their new tools (and queueing their embeddings).
      await documentUse.flush();
      await selector.background.settled();
      await tokenCounter.close();
      await embedWorker?.close();
      await queue?.close();
      if (ownsEmbedder) await embedder?.close();
      if (ownsDatabase) await database.close();
    },
  };
}

/**
 * Rate limits shared by the replicas: with REDIS_URL and a limit set (RATE_LIMIT_PER_MINUTE or a
 * key's `requests_per_minute`), the buckets are Redis's. A Redis not reachable at start leaves them
 * to each process, said in the log: a limit is never a reason not to serve.
 */
async function sharedRateBuckets(config: Config, logger: Logger): Promise<SharedBuckets | null> {
  const limited = config.RATE_LIMIT_PER_MINUTE !== undefined || [...(config.KEY_POLICIES?.values() ?? [])].some((policy) => policy.requestsPerMinute);
  if (!config.REDIS_URL || !limited) return null;
  try {
    return redisBuckets(await connectRedis(config.REDIS_URL));
  } catch (error) {
    logger.warn({ reason: (error as Error).message }, 'rate limits: Redis unreachable at start; each process counts its own requests');
    return null;
  }
}

/** Code mode's limits as the environment sets them (CODE_MODE_*). */
export function sandboxLimits(config: Config): SandboxLimits {
  return {
    wallMs: config.CODE_MODE_WALL_MS,
    cpuMs: config.CODE_MODE_CPU_MS,
    memoryBytes: config.CODE_MODE_MEMORY,
    outputBytes: config.CODE_MODE_OUTPUT_BYTES,
    maxCalls: config.CODE_MODE_MAX_CALLS,
    programBytes: config.CODE_MODE_PROGRAM_BYTES,
  };
}

/** A start-up failure on PostgreSQL that names the setting and the fix, not only the socket error. */
function explainConnectError(error: unknown, url: string): Error {
  const message = (error as Error).message ?? String(error);
  const code = (error as { code?: string }).code;
  let shown = url;
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    shown = parsed.toString();
  } catch {
    // not a URL: shown as given
  }
  if (code === '3D000' || /database .* does not exist/.test(message)) {
    const name = (() => {
      try {
        return new URL(url).pathname.slice(1);
      } catch {
        return '<name>';
      }
    })();
    return new Error(`DATABASE_URL ${shown}: ${message}; create it first (e.g. createdb ${name}), or unset DATABASE_URL for the embedded store`);
  }
  if (/ECONNREFUSED|ENOTFOUND|EHOSTUNREACH|timeout exceeded when trying to connect|ETIMEDOUT/.test(`${message} ${code ?? ''}`)) {
    return new Error(`DATABASE_URL ${shown}: cannot reach PostgreSQL (${message}); start it, fix the URL, or unset DATABASE_URL for the embedded store`);
  }
  return error instanceof Error ? error : new Error(message);
}

/** TENANT_MAX_*: undefined when none is set (no bound, and no count on any write). */
function tenantLimits(config: Config): TenantLimits | undefined {
  const limits: TenantLimits = {
    ...(config.TENANT_MAX_TOOLS ? { maxTools: config.TENANT_MAX_TOOLS } : {}),
    ...(config.TENANT_MAX_CATALOGS ? { maxCatalogs: config.TENANT_MAX_CATALOGS } : {}),
    ...(config.TENANT_MAX_BYTES ? { maxBytes: config.TENANT_MAX_BYTES } : {}),
    ...(config.TENANT_MAX_UPSTREAMS ? { maxUpstreams: config.TENANT_MAX_UPSTREAMS } : {}),
  };
  return Object.keys(limits).length > 0 ? limits : undefined;
}
