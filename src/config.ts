import { z } from 'zod';
import { DEFAULT_USE_LITE_NICE } from './embed/use-lite.js';

const booleanFlag = z
  .enum(['true', 'false', '1', '0', 'yes', 'no', 'on', 'off'])
  .transform((value) => ['true', '1', 'yes', 'on'].includes(value));

/** Accepts "25mb", "512kb", "1048576": the same notation express's body parser uses. */
const byteSize = z
  .string()
  .regex(/^\d+(\.\d+)?\s*(b|kb|mb|gb)?$/i, 'expected a size such as 25mb, 512kb or a byte count')
  .transform((value) => {
    const match = /^(\d+(?:\.\d+)?)\s*(b|kb|mb|gb)?$/i.exec(value)!;
    const unit = (match[2] ?? 'b').toLowerCase();
    const factor = { b: 1, kb: 1024, mb: 1024 ** 2, gb: 1024 ** 3 }[unit as 'b' | 'kb' | 'mb' | 'gb'];
    return Math.floor(Number(match[1]) * factor);
  });

/** `key1:tenant1,key2:tenant2`; a key without a tenant maps to the tenant "default". */
const apiKeys = z.string().transform((value, ctx) => {
  const keys = new Map<string, string>();
  for (const entry of value.split(',').map((part) => part.trim()).filter(Boolean)) {
    const parts = entry.split(':').map((part) => part.trim());
    const [key, tenant = 'default'] = parts;
    if (parts.length > 2 || !key || !/^[A-Za-z0-9._-]{1,64}$/.test(tenant)) {
      ctx.addIssue({ code: 'custom', message: `bad entry "${entry}": expected key:tenant` });
      return z.NEVER;
    }
    keys.set(key, tenant);
  }
  return keys;
});

const emptyAsUndefined = (value: unknown) => (value === '' ? undefined : value);

/** A variable set to the empty string (common in compose files and .env templates) counts as unset. */
const dropEmpty = (env: unknown) =>
  typeof env === 'object' && env !== null ? Object.fromEntries(Object.entries(env).filter(([, value]) => value !== '')) : env;

export const configSchema = z.preprocess(dropEmpty, z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  HOST: z.string().default('0.0.0.0'),
  DATABASE_URL: z.preprocess(emptyAsUndefined, z.string().url().optional()),
  DATA_DIR: z.string().min(1).default('./data'),
  REDIS_URL: z.preprocess(emptyAsUndefined, z.string().url().optional()),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  BODY_LIMIT: z.preprocess(emptyAsUndefined, byteSize.prefault('25mb')),
  /** Bytes of request bodies being received at once, over all requests; past it a 503 (Retry-After). */
  BODY_MEMORY: z.preprocess(emptyAsUndefined, byteSize.prefault('256mb')),
  /** The whole request, body included, must arrive within this (ms); else Node answers 408 and closes. */
  BODY_TIMEOUT_MS: z.coerce.number().int().min(1_000).max(3_600_000).default(60_000),
  /** Request headers must arrive within this (ms). */
  HEADERS_TIMEOUT_MS: z.coerce.number().int().min(1_000).max(600_000).default(10_000),
  API_KEYS: z.preprocess(emptyAsUndefined, apiKeys.optional()),
  /**
   * Browser origins allowed to call /mcp (DNS-rebinding defence, as the MCP spec's security
   * section asks): a comma list of origins or hostnames, or `*`. Requests without an Origin header
   * (every non-browser MCP client) are not affected. Default: localhost origins only.
   */
  MCP_ALLOWED_ORIGINS: z.preprocess(emptyAsUndefined, z.string().default('localhost,127.0.0.1,[::1]')),
  /** Host header names /mcp answers to, comma separated, or `*` (default): set it to the names a deployment is reached by. */
  MCP_ALLOWED_HOSTS: z.preprocess(emptyAsUndefined, z.string().default('*')),
  /** Deadline of every PostgreSQL call on the request path (connection and query), ms; past it: 503. */
  DB_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(5_000),
  /**
   * Memory for stored catalogs' in-process BM25 indexes (one per catalog revision), MiB; least
   * recently searched catalogs go first past it. A 100,000-tool catalog takes about 100 MiB.
   */
  CATALOG_INDEX_MEMORY: z.coerce.number().int().min(0).max(1_000_000).default(512),
  /**
   * Read the stored catalogs into process at start (most recently written first, within
   * CATALOG_INDEX_MEMORY) before /readyz answers ready: a replica's first searches then rank in
   * process, not in SQL while each catalog's index is read (search/warm-up.ts).
   */
  CATALOG_WARMUP: z.preprocess(emptyAsUndefined, booleanFlag.prefault('true')),
  /** Local stdio MCP servers to sync, in the mcpServers shape MCP hosts use (see docs/mcp.md). */
  UPSTREAMS_FILE: z.preprocess(emptyAsUndefined, z.string().optional()),
  /** How long call_tool waits for an upstream MCP server before answering isError, ms. */
  UPSTREAM_CALL_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(30_000),
  EMBED_MODEL: z.string().min(1).default('use-lite'),
  MODEL_DIR: z.preprocess(emptyAsUndefined, z.string().optional()),
  ALLOW_REMOTE_MODELS: z.preprocess(emptyAsUndefined, booleanFlag.prefault('false')),
  EMBED_THREADS: z.coerce.number().int().min(1).max(16).default(2),
  /** Nice value of use-lite's model threads on Linux: under load they yield the cores to request handling. 0 = off. */
  EMBED_THREAD_NICE: z.coerce.number().int().min(0).max(19).default(DEFAULT_USE_LITE_NICE),
  EMBED_POOLING: z.preprocess(emptyAsUndefined, z.enum(['mean', 'cls']).optional()),
  EMBED_QUERY_PREFIX: z.preprocess(emptyAsUndefined, z.string().optional()),
  QUERY_CACHE_SIZE: z.coerce.number().int().min(0).default(1000),
  /**
   * How long a gateway selector request waits for its query's embedding, from its arrival. Past
   * it, the request answers from BM25 (`embedder_busy` in logs and metrics); the embedding still
   * finishes and lands in the query cache for the next turn. 0 = never wait (BM25 unless cached).
   * A new tool list's stored vectors are waited for as long (the read goes on for the next turn).
   */
  SELECTOR_BUDGET_MS: z.coerce.number().int().min(0).max(60_000).default(100),
  EMBED_WORKER: z.enum(['inline', 'off']).default('inline'),
  /** Two jobs at once overlap one job's database reads and writes with the other's embedding (bench:embed: 0.64 -> 0.76 of the bare model on 1 worker x 2 threads). */
  EMBED_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(2),
  EMBED_BATCH_SIZE: z.coerce.number().int().min(1).max(1024).default(32),
  /** Redis key prefix of the embedding queue: separates deployments (and test runs) sharing one Redis. */
  QUEUE_PREFIX: z.string().regex(/^[A-Za-z0-9._-]{1,64}$/).default('toolsift'),
  /** Lock and stalled-check period of BullMQ workers: how soon a dead worker's job is taken over. */
  EMBED_STALLED_MS: z.coerce.number().int().min(500).max(600_000).default(30_000),
}));

export type Config = z.infer<typeof configSchema>;

export class ConfigError extends Error {}

/** Parses the environment once; a bad value names the variable and what was expected. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = configSchema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => `  ${issue.path.join('.')}: ${issue.message}`);
    throw new ConfigError(`invalid configuration:\n${lines.join('\n')}`);
  }
  return parsed.data;
}

/** For entry points: the config, or the process ends (exit code 2) with what is wrong. */
export function loadConfigOrExit(env: NodeJS.ProcessEnv = process.env): Config {
  try {
    return loadConfig(env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    console.error(error.message);
    process.exit(2);
  }
}
