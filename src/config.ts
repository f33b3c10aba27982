import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { DEFAULT_USE_LITE_NICE } from './embed/use-lite.js';
import { parseSecretKeys } from './lib/secret-box.js';
import { parseAllowList } from './upstream/address-policy.js';
import { KeysFileError, parseKeysFile, type KeyPolicy } from './trust/policy.js';
import { RESULT_SCAN_CHARS_DEFAULT } from './mcp/result-scan.js';
import { parseEgressProxy } from './upstream/egress-proxy.js';
import { clientMetadataUrlProblem } from './upstream/client-metadata.js';
import { keyValueList, TRACE_SAMPLERS } from './tracing/otlp-settings.js';

const booleanFlag = z.enum(['true', 'false', '1', '0', 'yes', 'no', 'on', 'off']).transform((value) => ['true', '1', 'yes', 'on'].includes(value));

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
  for (const entry of value
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean)) {
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

/** A collector's OTLP/HTTP address. */
const otlpEndpoint = z.preprocess(
  emptyAsUndefined,
  z.url({ protocol: /^https?$/, error: "expected the collector's http(s) URL, such as http://localhost:4318" }).optional(),
);

/** An optional string that `parse` takes; what `parse` throws is the issue (its message, which must not quote a secret). */
const parsedString = (parse: (value: string) => unknown) =>
  z.preprocess(
    emptyAsUndefined,
    z
      .string()
      .optional()
      .superRefine((value, context) => {
        if (value === undefined) return;
        try {
          parse(value);
        } catch (error) {
          context.addIssue({ code: 'custom', message: (error as Error).message });
        }
      }),
  );

/** A `name=value,...` list (OTEL_EXPORTER_OTLP_HEADERS, OTEL_RESOURCE_ATTRIBUTES); a problem is named by position, never by value. */
const keyValueVariable = parsedString(keyValueList);

/** OTLP's protocols: the two over HTTP are taken (toolsift sends JSON to the HTTP port); grpc is another port and transport. */
const otlpProtocol = z.preprocess(
  emptyAsUndefined,
  z
    .enum(['http/protobuf', 'http/json', 'grpc'])
    .optional()
    .refine(
      (value) => value !== 'grpc',
      "toolsift exports OTLP over HTTP (JSON), not gRPC: set http/json and point the endpoint at the collector's HTTP port (4318)",
    ),
);

/** A variable set to the empty string (common in compose files and .env templates) counts as unset. */
const dropEmpty = (env: unknown) =>
  typeof env === 'object' && env !== null ? Object.fromEntries(Object.entries(env).filter(([, value]) => value !== '')) : env;

export const configSchema = z.preprocess(
  dropEmpty,
  z.object({
    PORT: z.coerce.number().int().min(0).max(65535).default(8080),
    /** Where to listen; unset: 127.0.0.1 without API_KEYS (an open service is not offered to the network), 0.0.0.0 with them. */
    HOST: z.preprocess(emptyAsUndefined, z.string().optional()),
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
     * A JSON file of keys with per-key scopes (trust/policy.ts, docs/security.md): `{"keys": [{"key",
     * "tenant", "id"?, "catalogs"?, "tools"?, "servers"?, "call"?, "write"?, "manage"?}]}`. Read at
     * start, beside API_KEYS (a key in both is an error).
     */
    API_KEYS_FILE: z.preprocess(emptyAsUndefined, z.string().optional()),
    /**
     * Browser origins allowed to call any route (DNS-rebinding defence, as the MCP spec's security
     * section asks): a comma list of origins or hostnames, or `*`. Requests without an Origin header
     * (every non-browser client) are not affected; a page served by this instance (same origin as an
     * allowed Host) always is. MCP_ALLOWED_ORIGINS is the older name.
     */
    ALLOWED_ORIGINS: z.preprocess(emptyAsUndefined, z.string().default('localhost,127.0.0.1,[::1]')),
    /**
     * Host header names every route answers to, comma separated, or `*`. Unset: the loopback names
     * without API_KEYS (a page on another name cannot rebind to an open service), any with them.
     * MCP_ALLOWED_HOSTS is the older name.
     */
    ALLOWED_HOSTS: z.preprocess(emptyAsUndefined, z.string().optional()),
    /** Bearer token /metrics requires when API_KEYS is set (Prometheus' `authorization` setting); unset then: /metrics answers 401. */
    METRICS_TOKEN: z.preprocess(emptyAsUndefined, z.string().min(16, 'METRICS_TOKEN must be at least 16 characters').optional()),
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
    /**
     * Addresses upstream MCP servers may be reached at besides public ones: CIDRs (10.0.0.0/8,
     * fd00::/8, 127.0.0.1/32) and host names (mcp.internal, *.corp.example), comma separated.
     * Loopback, private, link-local (cloud metadata), CGNAT, multicast and unspecified addresses are
     * refused otherwise, however spelled. Stdio servers from UPSTREAMS_FILE are not affected.
     */
    UPSTREAM_ALLOW: z.preprocess(
      emptyAsUndefined,
      z
        .string()
        .default('')
        .superRefine((value, context) => {
          try {
            parseAllowList(value);
          } catch (error) {
            context.addIssue({ code: 'custom', message: (error as Error).message });
          }
        }),
    ),
    /**
     * The operator's egress proxy for remote upstreams (and their OAuth servers): `http(s)://[user:
     * password@]host:port`, asked to CONNECT a tunnel over which TLS runs end to end (upstream/
     * egress-proxy.ts). The address policy applies first, as without it. Unset: direct connections.
     * Not read from HTTPS_PROXY, which a host may set for other tools.
     */
    UPSTREAM_PROXY: z.preprocess(
      emptyAsUndefined,
      z
        .string()
        .optional()
        .superRefine((value, context) => {
          try {
            parseEgressProxy(value);
          } catch (error) {
            context.addIssue({ code: 'custom', message: (error as Error).message });
          }
        }),
    ),
    /** What the proxy is asked to reach: `address` (the one toolsift resolved and judged; default) or `name` (for proxies that filter by name; the proxy then resolves it). */
    UPSTREAM_PROXY_CONNECT: z.enum(['address', 'name']).default('address'),
    /** Hosts reached without the proxy, comma separated: names, `.suffix` or `*.suffix`, addresses, `*`. */
    UPSTREAM_NO_PROXY: z.string().default(''),
    /**
     * Seals the credentials the store keeps (upstream header values, OAuth tokens and client
     * secrets) with AES-256-GCM (lib/secret-box.ts): 32 random bytes as base64 or hex (`openssl rand
     * -base64 32`), optionally named `<id>:<key>`; a comma list rotates (the first seals, all open,
     * values sealed with another are re-sealed at start). Unset: upstreams with headers or OAuth are
     * refused, and a store holding credentials does not start.
     */
    SECRETS_KEY: parsedString(parseSecretKeys),
    /** Deadline of connecting to an upstream and listing its tools (registration, sync, refresh), ms. */
    UPSTREAM_CONNECT_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(10_000),
    /**
     * Where an operator's browser comes back after authorizing an OAuth upstream: toolsift's
     * GET /oauth/callback as the browser reaches it (https://toolsift.example.com/oauth/callback).
     * Unset: the start request's own scheme and Host.
     */
    OAUTH_REDIRECT_URL: z.preprocess(emptyAsUndefined, z.url({ protocol: /^https?$/ }).optional()),
    /**
     * toolsift's /oauth/client-metadata as upstreams' authorization servers reach it
     * (https://toolsift.example.com/oauth/client-metadata): each tenant's client ID metadata
     * document is `<it>/<digest>.json`, its URL the tenant's client_id with servers that advertise
     * support, in place of dynamic client registration (authorization code grant, no configured
     * client). Needs OAUTH_REDIRECT_URL, which the documents name. Unset: no document is served,
     * and toolsift registers itself as before.
     */
    OAUTH_CLIENT_METADATA_URL: z.preprocess(
      emptyAsUndefined,
      z
        .string()
        .optional()
        .superRefine((value, context) => {
          const problem = value === undefined ? undefined : clientMetadataUrlProblem(value);
          if (problem) context.addIssue({ code: 'custom', message: problem });
        }),
    ),
    /** Largest upstream answer (a call's result, a page of tools/list), counted as it streams in; past it the call ends isError. */
    UPSTREAM_MAX_RESULT_BYTES: z.preprocess(emptyAsUndefined, byteSize.prefault('4mb')),
    /**
     * What a REST push does with a tool the definition scanner rates high (hidden instructions,
     * invisible characters, credential theft): refuse (400 naming the tool and finding), warn
     * (stored, findings in the answer) or off. Upstream syncs always quarantine such tools.
     */
    SCAN_POLICY: z.enum(['refuse', 'warn', 'off']).default('refuse'),
    /**
     * What a proxied call's result (MCP call_tool, run_code's calls) gets when it holds text addressed
     * to the model (an injected instruction, a forged system message, hidden characters carrying
     * text): flag (passed after a notice the model reads first, findings in _meta), block (withheld:
     * an isError result naming the findings) or off.
     */
    RESULT_SCAN: z.enum(['flag', 'block', 'off']).default('flag'),
    /**
     * The least an upstream's or a catalog's own `result_scan` may set for its results: off
     * (default: a catalog's writers choose, looser or stricter than RESULT_SCAN), flag, or block. A
     * registration or PATCH asking for less is refused (400).
     */
    RESULT_SCAN_MIN: z.enum(['off', 'flag', 'block']).default('off'),
    /**
     * What one tenant may store, for a service shared by teams: tools over all its catalogs (pushed
     * and synced), and catalogs. A write past either is a 403 `quota_exceeded` and writes nothing;
     * a write that shrinks is always taken. Unset: no bound.
     */
    TENANT_MAX_TOOLS: z.preprocess(emptyAsUndefined, z.coerce.number().int().min(1).max(100_000_000).optional()),
    TENANT_MAX_CATALOGS: z.preprocess(emptyAsUndefined, z.coerce.number().int().min(1).max(1_000_000).optional()),
    /** Bytes of tool definitions one tenant's catalogs may store (each row's JSON as stored, pushed and synced); unset: no bound. */
    TENANT_MAX_BYTES: z.preprocess(emptyAsUndefined, byteSize.refine((bytes) => bytes >= 1, 'expected at least 1 byte').optional()),
    /** Upstream MCP servers one tenant may register through the API (UPSTREAMS_FILE's are not counted); unset: no bound. */
    TENANT_MAX_UPSTREAMS: z.preprocess(emptyAsUndefined, z.coerce.number().int().min(1).max(1_000_000).optional()),
    /** Requests a minute each API key may send, for keys without their own `requests_per_minute` (API_KEYS_FILE); unset: no limit. Shared by the replicas through Redis with REDIS_URL, else per process. */
    RATE_LIMIT_PER_MINUTE: z.preprocess(emptyAsUndefined, z.coerce.number().int().min(1).max(1_000_000).optional()),
    /** Text of one result the scan reads (26-53 ms of one core per 256 KiB, bench:scan); with RESULT_SCAN=block a result with more text is withheld. */
    RESULT_SCAN_MAX_CHARS: z.coerce
      .number()
      .int()
      .min(1024)
      .max(64 * 1024 * 1024)
      .default(RESULT_SCAN_CHARS_DEFAULT),
    /** Documents no catalog holds and no request used for this long are removed in the background, hours. */
    DOCUMENT_RETENTION_HOURS: z.coerce.number().min(0.01).max(87_600).default(24),
    /** Learning from use (issue 72): what agents use after a search ranks the next similar search. off: nothing recorded or read. */
    LEARNING: z.enum(['on', 'off']).default('on'),
    /** Feedback events (queries as text, the tools used) older than this are removed in the background, days. */
    FEEDBACK_RETENTION_DAYS: z.coerce.number().min(0.01).max(3650).default(90),
    /** An event's weight halves every this many days. */
    FEEDBACK_HALF_LIFE_DAYS: z.coerce.number().min(0.01).max(3650).default(30),
    /**
     * Memory for the catalogs' learned indexes in process, MiB; least recently searched catalogs go
     * first past it (read again from the store when searched). 100,000 events take about 135 MiB.
     */
    LEARNED_MEMORY: z.coerce.number().int().min(1).max(1_000_000).default(512),
    /**
     * Code mode (issue 73): the run_code meta-tool runs agents' programs in a WebAssembly sandbox.
     * Off by default: one approved run_code is many tool calls (docs/security.md).
     */
    CODE_MODE: z.enum(['on', 'off']).default('off'),
    /** Worker threads running programs, each one program at a time; started as needed. */
    CODE_MODE_WORKERS: z.coerce.number().int().min(1).max(64).default(2),
    /** Nice value of those threads on Linux: a busy program yields the cores to request handling. 0 = off. */
    CODE_MODE_NICE: z.coerce.number().int().min(0).max(19).default(15),
    /** A program's wall time, waiting on tools included, ms. */
    CODE_MODE_WALL_MS: z.coerce.number().int().min(100).max(600_000).default(30_000),
    /** A program's own running time (the engine's interrupt handler), ms. */
    CODE_MODE_CPU_MS: z.coerce.number().int().min(10).max(600_000).default(5_000),
    /** A program's engine heap. */
    CODE_MODE_MEMORY: z.preprocess(emptyAsUndefined, byteSize.prefault('64mb')),
    /** Where a program's return value, and its console output, are each cut. */
    CODE_MODE_OUTPUT_BYTES: z.preprocess(emptyAsUndefined, byteSize.prefault('32kb')),
    /** Tool calls one program may make. */
    CODE_MODE_MAX_CALLS: z.coerce.number().int().min(1).max(100_000).default(200),
    /** A program's source size. */
    CODE_MODE_PROGRAM_BYTES: z.preprocess(emptyAsUndefined, byteSize.prefault('64kb')),
    /**
     * Prototypes of draft MCP proposals on /mcp (docs/mcp.md): SEP-2636's tools/catalog and
     * tools/describe, SEP-2564's namePatterns filter, tools/call by a catalog tool's address, and an
     * AgentCore-style search tool. Off by default: drafts change before they are final.
     */
    MCP_DRAFTS: z.enum(['on', 'off']).default('off'),
    EMBED_MODEL: z.string().min(1).default('use-lite'),
    /** Whether EMBED_MODEL reads queries in other languages than English; unset: known from its id (ranking/language.ts: USE Lite does not). */
    EMBED_MULTILINGUAL: z.preprocess(emptyAsUndefined, booleanFlag.optional()),
    /** `EMBED_MODEL=openai:<model>`: the service's base URL (OpenAI's embeddings API: OpenAI, Azure OpenAI v1, Ollama, vLLM, LiteLLM, TEI). */
    EMBED_BASE_URL: z.preprocess(emptyAsUndefined, z.url({ protocol: /^https?$/ }).default('https://api.openai.com/v1')),
    EMBED_API_KEY: z.preprocess(emptyAsUndefined, z.string().optional()),
    /** Sent as `dimensions` (models that shorten their vectors, e.g. text-embedding-3-*); unset: the model's own. */
    EMBED_DIMENSIONS: z.preprocess(emptyAsUndefined, z.coerce.number().int().min(1).max(16_000).optional()),
    /** Texts per request to the service, its requests in flight, and a request's deadline (ms) and retries. */
    EMBED_SERVICE_BATCH: z.coerce.number().int().min(1).max(2048).default(32),
    EMBED_SERVICE_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(4),
    EMBED_SERVICE_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(30_000),
    EMBED_SERVICE_RETRIES: z.coerce.number().int().min(0).max(10).default(5),
    /** A rerank service (TEI's /rerank or a Cohere-style /v1/rerank): the hybrid ranking's head reordered by it. Unset: no rerank stage. */
    RERANK_URL: z.preprocess(emptyAsUndefined, z.url({ protocol: /^https?$/ }).optional()),
    RERANK_API_KEY: z.preprocess(emptyAsUndefined, z.string().optional()),
    RERANK_MODEL: z.preprocess(emptyAsUndefined, z.string().optional()),
    /** tei ({query, texts}) or cohere ({model, query, documents}); unset: cohere when the path ends in /v1/rerank or /v2/rerank. */
    RERANK_FORMAT: z.preprocess(emptyAsUndefined, z.enum(['tei', 'cohere']).optional()),
    /** How many of the fused list's first tools the reranker reorders. */
    RERANK_TOP_N: z.coerce.number().int().min(2).max(200).default(30),
    /** How long a search waits for the reranker; past it the fused order stands (`rerank: "timeout"`). */
    RERANK_DEADLINE_MS: z.coerce.number().int().min(1).max(60_000).default(300),
    /** fuse: weighted RRF of the fused and the reranker's order (the reranker weighs twice); replace: the reranker's order. */
    RERANK_MODE: z.enum(['fuse', 'replace']).default('fuse'),
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
    QUEUE_PREFIX: z
      .string()
      .regex(/^[A-Za-z0-9._-]{1,64}$/)
      .default('toolsift'),
    /** Lock and stalled-check period of BullMQ workers: how soon a dead worker's job is taken over. */
    EMBED_STALLED_MS: z.coerce.number().int().min(500).max(600_000).default(30_000),
    /**
     * OpenTelemetry tracing (tracing/): toolsift's spans of the traces crossing it, exported over
     * OTLP/HTTP to the operator's collector. On when either endpoint is set; the traces endpoint is
     * used as given, the shared one with /v1/traces added to its path. Unset: no SDK is loaded.
     */
    OTEL_EXPORTER_OTLP_ENDPOINT: otlpEndpoint,
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: otlpEndpoint,
    /** `name=value,...` (values percent-encoded) sent with each export: a collector's credentials, never logged. The traces' own list wins per name. */
    OTEL_EXPORTER_OTLP_HEADERS: keyValueVariable,
    OTEL_EXPORTER_OTLP_TRACES_HEADERS: keyValueVariable,
    /** What the operator expects the endpoint to speak; toolsift sends OTLP/HTTP as JSON, which a collector's HTTP receiver takes beside protobuf. */
    OTEL_EXPORTER_OTLP_PROTOCOL: otlpProtocol,
    OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: otlpProtocol,
    /** The spans' service.name; unset: OTEL_RESOURCE_ATTRIBUTES' service.name, else "toolsift". */
    OTEL_SERVICE_NAME: z.preprocess(emptyAsUndefined, z.string().max(256).optional()),
    /** More resource attributes of every span, `key=value,...` (deployment.environment, service.namespace, ...). */
    OTEL_RESOURCE_ATTRIBUTES: keyValueVariable,
    /** Which traces are recorded; parent-based samplers follow the caller's sampled flag. */
    OTEL_TRACES_SAMPLER: z.enum(TRACE_SAMPLERS).default('parentbased_always_on'),
    /** The traceidratio samplers' ratio, 0-1 (default 1). */
    OTEL_TRACES_SAMPLER_ARG: z.preprocess(emptyAsUndefined, z.coerce.number().min(0).max(1).optional()),
    /** none: no spans even with an endpoint set (the endpoint may be there for another signal or process). */
    OTEL_TRACES_EXPORTER: z.enum(['otlp', 'none'], { error: 'toolsift exports traces over OTLP only: otlp, or none for no spans' }).default('otlp'),
    /** true: no spans, whatever else is set (the specification's switch for the whole SDK). */
    OTEL_SDK_DISABLED: z.preprocess(emptyAsUndefined, booleanFlag.prefault('false')),
  }),
);

/**
 * The environment as parsed, with the defaults that depend on other variables (HOST, ALLOWED_HOSTS)
 * resolved. API_KEYS holds every key (API_KEYS' and API_KEYS_FILE's) by its tenant; KEY_POLICIES the
 * scopes of the keys file's (a key without an entry there has full access within its tenant).
 */
export type Config = Omit<z.infer<typeof configSchema>, 'HOST' | 'ALLOWED_HOSTS'> & {
  HOST: string;
  ALLOWED_HOSTS: string;
  KEY_POLICIES?: Map<string, KeyPolicy>;
};

const LOOPBACK_HOSTS = 'localhost,127.0.0.1,[::1]';

/** Fills the defaults that depend on other variables, and takes the older MCP_ALLOWED_* names. */
export function resolveConfig(parsed: z.infer<typeof configSchema> & { KEY_POLICIES?: Map<string, KeyPolicy> }, env: Record<string, unknown> = {}): Config {
  const keyed = (parsed.API_KEYS?.size ?? 0) > 0;
  const older = (name: string) => (typeof env[name] === 'string' && env[name] !== '' ? (env[name] as string) : undefined);
  return {
    ...parsed,
    HOST: parsed.HOST ?? (keyed ? '0.0.0.0' : '127.0.0.1'),
    ALLOWED_HOSTS: parsed.ALLOWED_HOSTS ?? older('MCP_ALLOWED_HOSTS') ?? (keyed ? '*' : LOOPBACK_HOSTS),
    ALLOWED_ORIGINS:
      env.ALLOWED_ORIGINS === undefined || env.ALLOWED_ORIGINS === '' ? (older('MCP_ALLOWED_ORIGINS') ?? parsed.ALLOWED_ORIGINS) : parsed.ALLOWED_ORIGINS,
  };
}

export class ConfigError extends Error {}

/**
 * Secrets an operator may give as files, `<NAME>_FILE` (the convention of Docker's and Kubernetes'
 * secrets): a value read from a file stays out of the environment, which `ps e`, /proc/<pid>/environ
 * and crash reports show. Not API_KEYS: API_KEYS_FILE is already its keys file (JSON, with scopes).
 */
export const FILE_VARIABLES = [
  'SECRETS_KEY',
  'METRICS_TOKEN',
  'DATABASE_URL',
  'REDIS_URL',
  'EMBED_API_KEY',
  'RERANK_API_KEY',
  'UPSTREAM_PROXY',
  'OTEL_EXPORTER_OTLP_HEADERS',
  'OTEL_EXPORTER_OTLP_TRACES_HEADERS',
] as const;

/** `env` with each `<NAME>_FILE`'s content as `<NAME>` (a final line break dropped); an error never shows a value. */
function withSecretFiles(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const read: NodeJS.ProcessEnv = {};
  const problems: string[] = [];
  for (const name of FILE_VARIABLES) {
    const file = env[`${name}_FILE`];
    if (!file) continue;
    if (env[name]) {
      problems.push(`${name}_FILE: ${name} is set too: give one of them`);
      continue;
    }
    try {
      read[name] = readFileSync(file, 'utf8').replace(/\r?\n$/, '');
    } catch (error) {
      problems.push(`${name}_FILE: cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
      continue;
    }
    // An empty file is a mistake in a secret's mount, not a wish to leave the variable unset.
    if (read[name] === '') problems.push(`${name}_FILE: ${file} is empty`);
  }
  if (problems.length) throw new ConfigError(`invalid configuration:\n${problems.map((line) => `  ${line}`).join('\n')}`);
  return { ...env, ...read };
}

/** Parses the environment once; a bad value names the variable and what was expected. */
export function loadConfig(environment: NodeJS.ProcessEnv = process.env): Config {
  const env = withSecretFiles(environment);
  const parsed = configSchema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => `  ${issue.path.join('.')}: ${issue.message}`);
    throw new ConfigError(`invalid configuration:\n${lines.join('\n')}`);
  }
  // The client ID metadata document names one callback for every authorization: each start request's own Host cannot be it.
  if (parsed.data.OAUTH_CLIENT_METADATA_URL !== undefined && parsed.data.OAUTH_REDIRECT_URL === undefined)
    throw new ConfigError('invalid configuration:\n  OAUTH_CLIENT_METADATA_URL: needs OAUTH_REDIRECT_URL, the callback the document names');
  return resolveConfig(withKeysFile(parsed.data), env);
}

/** API_KEYS_FILE's keys added to API_KEYS (by tenant) and their scopes to KEY_POLICIES; a bad file names the key and field. */
function withKeysFile(parsed: z.infer<typeof configSchema>): z.infer<typeof configSchema> & { KEY_POLICIES?: Map<string, KeyPolicy> } {
  if (!parsed.API_KEYS_FILE) return parsed;
  const fail = (message: string) => new ConfigError(`invalid configuration:\n  API_KEYS_FILE: ${message}`);
  let text: string;
  try {
    text = readFileSync(parsed.API_KEYS_FILE, 'utf8');
  } catch (error) {
    throw fail(`cannot read ${parsed.API_KEYS_FILE}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
  let policies: Map<string, KeyPolicy>;
  try {
    policies = parseKeysFile(text);
  } catch (error) {
    if (error instanceof KeysFileError) throw fail(`${parsed.API_KEYS_FILE}: ${error.message}`);
    throw error;
  }
  const keys = new Map(parsed.API_KEYS ?? []);
  for (const [key, policy] of policies) {
    if (keys.has(key)) throw fail(`key "${policy.id}" is also in API_KEYS: give each key once`);
    keys.set(key, policy.tenant);
  }
  return { ...parsed, API_KEYS: keys, KEY_POLICIES: policies };
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
