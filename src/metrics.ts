import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/**
 * The service's Prometheus metrics, on a registry of its own (no prom-client global), built once
 * in deps.ts and handed to whatever records into it.
 */
export interface Metrics {
  registry: Registry;
  httpDuration: Histogram<'method' | 'route' | 'status'>;
  selectorNames: Histogram;
  selectorFallbacks: Counter<'reason'>;
  selectorBlankPatterns: Counter;
  selectorConfidence: Histogram;
  stageDuration: Histogram<'endpoint' | 'stage'>;
  searchDegraded: Counter<'endpoint' | 'reason'>;
  searchLanguages: Counter<'endpoint' | 'language' | 'understood'>;
  embeddingsWritten: Counter<'model'>;
  documentsRemoved: Counter;
  mcpRequests: Counter<'method' | 'tool' | 'outcome'>;
  mcpUpstreamCalls: Histogram<'upstream' | 'outcome'>;
  codeRuns: Histogram<'outcome'>;
  embedServiceRequests: Histogram<'kind' | 'outcome'>;
  embedServiceTokens: Counter<'kind'>;
  rerankRequests: Histogram<'outcome'>;
  sandboxWorkersLost: Counter;
  auditEvents: Counter<'event' | 'outcome'>;
  rateLimited: Counter<'key'>;
  rateLimitFallbacks: Counter<string>;
  policyDecisions: Counter<'surface' | 'action' | 'decision'>;
  upstreamOAuth: Counter<'action' | 'outcome'>;
  toolTokens: Counter<'endpoint' | 'tenant' | 'kind'>;
}

/**
 * What the gauges read when scraped: the queue's job counts and the model's state. Structural, so
 * metrics (a leaf every layer records into) knows nothing of the queue or the embedder.
 */
export interface MetricSources {
  queue: () => { status(): Promise<Record<'waiting' | 'active' | 'completed' | 'failed', number>> } | null;
  embedder: () => { modelId: string; state: string };
  /** The in-process indexes bounded by a setting: what each holds (estimated) and its budget. */
  memory?: () => Partial<Record<'catalog_index' | 'learned_index', { bytes: number; budget: number }>>;
}

export function createMetrics(sources: MetricSources): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'toolsift_' });
  const metrics: Metrics = {
    registry,
    httpDuration: new Histogram({
      name: 'toolsift_http_request_duration_seconds',
      help: 'HTTP request latency by route template, method and status.',
      labelNames: ['method', 'route', 'status'],
      buckets: [0.002, 0.005, 0.01, 0.02, 0.035, 0.05, 0.075, 0.1, 0.2, 0.5, 1, 2.5, 10],
      registers: [registry],
    }),
    selectorNames: new Histogram({
      name: 'toolsift_selector_names_returned',
      help: 'Tool names returned per selector request.',
      buckets: [0, 1, 2, 3, 5, 8, 10, 20, 50],
      registers: [registry],
    }),
    selectorConfidence: new Histogram({
      name: 'toolsift_selector_answer_confidence',
      help: "Confidence of each selector answer (its best tool's calibrated probability of being relevant); the answer is never empty whatever it is.",
      buckets: [0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1],
      registers: [registry],
    }),
    selectorFallbacks: new Counter({
      name: 'toolsift_selector_fallbacks_total',
      help: 'Selector answers not from the full hybrid ranking, by reason.',
      labelNames: ['reason'],
      registers: [registry],
    }),
    selectorBlankPatterns: new Counter({
      name: 'toolsift_selector_blank_patterns_total',
      help: 'Selector requests whose pattern/query was blank.',
      registers: [registry],
    }),
    stageDuration: new Histogram({
      name: 'toolsift_search_stage_duration_seconds',
      help: 'Time per search stage (parse, store, query embedding, ranking) by endpoint.',
      labelNames: ['endpoint', 'stage'],
      buckets: [0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 1],
      registers: [registry],
    }),
    searchDegraded: new Counter({
      name: 'toolsift_search_degraded_total',
      help: "Search answers (catalog search, tool-search, MCP search_tools) not from the full hybrid ranking, by endpoint and reason: the embedder unavailable, busy or failing, a catalog's vectors still being written, a catalog ranked by meaning alone while its stored BM25 terms are recomputed (terms_refreshing), a query in a language the model does not read (query_language), or the store (tool-search over inline tools; tool-search and MCP search_tools over a catalog answered from memory). The gateway selector counts its own in toolsift_selector_fallbacks_total.",
      labelNames: ['endpoint', 'reason'],
      registers: [registry],
    }),
    searchLanguages: new Counter({
      name: 'toolsift_search_query_languages_total',
      help: 'Searches (catalog search, tool-search, MCP search_tools, the gateway selector over inline tools and over a catalog) whose query is not in English, by endpoint, language (BCP 47: de, fr, es, it, pt, nl, zh, ja, ko, or und-<Script>) and whether the embedding model reads it (understood=false: ranked by BM25 first, answered with degraded query_language; ranking/language.ts).',
      labelNames: ['endpoint', 'language', 'understood'],
      registers: [registry],
    }),
    embeddingsWritten: new Counter({
      name: 'toolsift_embeddings_written_total',
      help: 'Tool vectors written by this process (rate() gives embeddings per second).',
      labelNames: ['model'],
      registers: [registry],
    }),
    documentsRemoved: new Counter({
      name: 'toolsift_documents_removed_total',
      help: "Stored tool documents (with their terms and vectors) removed by this process's sweep: no catalog held them and no request used them within DOCUMENT_RETENTION_HOURS.",
      registers: [registry],
    }),
    mcpRequests: new Counter({
      name: 'toolsift_mcp_requests_total',
      help: 'MCP meta-tool calls and resource reads by method, tool and outcome (ok, tool_error, error).',
      labelNames: ['method', 'tool', 'outcome'],
      registers: [registry],
    }),
    toolTokens: new Counter({
      name: 'toolsift_tool_definition_tokens_total',
      help: 'Estimated definition tokens (o200k) of the tools offered to a tool search and of those it selected, by endpoint and tenant: offered - selected is what deferring saved.',
      labelNames: ['endpoint', 'tenant', 'kind'],
      registers: [registry],
    }),
    mcpUpstreamCalls: new Histogram({
      name: 'toolsift_mcp_upstream_call_duration_seconds',
      help: "call_tool calls and run_code programs' calls proxied to upstream MCP servers, by upstream and outcome.",
      labelNames: ['upstream', 'outcome'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    }),
    embedServiceRequests: new Histogram({
      name: 'toolsift_embed_service_request_duration_seconds',
      help: "Requests to the embedding service (EMBED_MODEL=openai:<model>), by kind (query, documents) and outcome (ok, error: after the client's retries).",
      labelNames: ['kind', 'outcome'],
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    }),
    embedServiceTokens: new Counter({
      name: 'toolsift_embed_service_tokens_total',
      help: 'Input tokens the embedding service counted (its usage.prompt_tokens), by kind (query, documents).',
      labelNames: ['kind'],
      registers: [registry],
    }),
    rerankRequests: new Histogram({
      name: 'toolsift_rerank_duration_seconds',
      help: 'The rerank stage (RERANK_URL) by outcome: ok, timeout (past RERANK_DEADLINE_MS) or error; on either of the last two the fused order stands.',
      labelNames: ['outcome'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [registry],
    }),
    codeRuns: new Histogram({
      name: 'toolsift_code_run_duration_seconds',
      help: 'run_code programs by outcome (ok, syntax, runtime, limit, cancelled, internal): wall time from the request to the answer.',
      labelNames: ['outcome'],
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers: [registry],
    }),
    sandboxWorkersLost: new Counter({
      name: 'toolsift_sandbox_workers_lost_total',
      help: 'Sandbox worker threads that died or were terminated (a stopped program that did not end in time); each is replaced.',
      registers: [registry],
    }),
    rateLimited: new Counter({
      name: 'toolsift_rate_limited_total',
      help: 'Requests answered 429 because their API key was past its requests a minute (API_KEYS_FILE requests_per_minute, RATE_LIMIT_PER_MINUTE), by key id.',
      labelNames: ['key'],
      registers: [registry],
    }),
    rateLimitFallbacks: new Counter({
      name: 'toolsift_rate_limit_fallbacks_total',
      help: "Requests whose rate limit was decided by this process's bucket because the shared one (Redis, REDIS_URL) failed or was slower than 50 ms: while it counts, replicas count apart.",
      registers: [registry],
    }),
    auditEvents: new Counter({
      name: 'toolsift_audit_events_total',
      help: 'Gateway audit events (src/audit.ts): proxied calls, pins, quarantines, approvals, rejections, name conflicts and refused addresses, by outcome.',
      labelNames: ['event', 'outcome'],
      registers: [registry],
    }),
    policyDecisions: new Counter({
      name: 'toolsift_policy_decisions_total',
      help: 'Per-key policy decisions (API_KEYS_FILE scopes) by surface (rest, mcp), action (see_catalog, see_tool, call, write) and decision (allow, deny); denials are also audit lines.',
      labelNames: ['surface', 'action', 'decision'],
      registers: [registry],
    }),
    upstreamOAuth: new Counter({
      name: 'toolsift_upstream_oauth_total',
      help: 'OAuth to upstream MCP servers by action (start, callback, token, refresh, step_up: a 403 insufficient_scope answered; state: a stored token, client or discovery sealed for another upstream or URL, forgotten) and outcome (ok, error); an error is also in the upstream status and an audit line.',
      labelNames: ['action', 'outcome'],
      registers: [registry],
    }),
  };
  const queueJobs = new Gauge({
    name: 'toolsift_queue_jobs',
    help: 'Embedding jobs by state (waiting, active, completed, failed), as the queue reports them.',
    labelNames: ['state'],
    registers: [registry],
    async collect() {
      const queue = sources.queue();
      if (!queue) return;
      try {
        const status = await queue.status();
        for (const state of ['waiting', 'active', 'completed', 'failed'] as const) this.set({ state }, status[state]);
      } catch {
        // An unreachable queue shows as missing samples; /readyz says why.
      }
    },
  });
  void queueJobs;
  new Gauge({
    name: 'toolsift_index_memory_bytes',
    help: 'Memory the in-process indexes hold (estimated), by kind (catalog_index: CATALOG_INDEX_MEMORY; learned_index: LEARNED_MEMORY) and bound (held, budget).',
    labelNames: ['kind', 'bound'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [kind, held] of Object.entries(sources.memory?.() ?? {})) {
        this.set({ kind, bound: 'held' }, held.bytes);
        this.set({ kind, bound: 'budget' }, held.budget);
      }
    },
  });
  new Gauge({
    name: 'toolsift_model_state',
    help: 'Embedding model load state: 1 for the current state of the configured model.',
    labelNames: ['model', 'state'],
    registers: [registry],
    collect() {
      const status = sources.embedder();
      this.reset();
      this.set({ model: status.modelId, state: status.state }, 1);
    },
  });
  return metrics;
}

/**
 * One search's record: each stage's time (its `<stage>_ms` timings; `total_ms` is the request's,
 * which the HTTP histogram has) and, when it was not the full hybrid ranking, why.
 */
export function recordSearch(
  metrics: Metrics | undefined,
  endpoint: string,
  timings: Readonly<Record<string, number>>,
  degraded?: string,
  language?: { tag: string; understood: boolean },
): void {
  if (!metrics) return;
  if (language) metrics.searchLanguages.inc({ endpoint, language: language.tag, understood: String(language.understood) });
  for (const [key, ms] of Object.entries(timings)) {
    if (key !== 'total_ms') metrics.stageDuration.observe({ endpoint, stage: key.replace(/_ms$/, '') }, ms / 1000);
  }
  if (degraded) metrics.searchDegraded.inc({ endpoint, reason: degraded });
}
