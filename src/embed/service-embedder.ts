/**
 * An embedding service over HTTP, through the official `openai` client: OpenAI itself, Azure
 * OpenAI's v1 endpoint, Ollama, vLLM, LiteLLM's proxy and Hugging Face Text Embeddings Inference
 * all speak its `POST {base}/embeddings`. The client brings timeouts and retries (429 and 5xx,
 * honouring `Retry-After`); this adds batching to the provider's limits, a bound on requests in
 * flight (documents wait, queries have their own), a check of every answer's shape, and a record
 * of the last failure for `/readyz`.
 *
 * The stored model id is `openai:<model>@<dimension>`: a service that starts answering another
 * dimension under the same model name (a swapped deployment) is a new model after a restart, so its
 * vectors are re-embedded in the background as for any model change, and never mixed.
 */
import OpenAI from 'openai';
import { Slots } from '../lib/slots.js';
import { chunk, l2Normalize, type Embedder } from './embedder.js';

export const SERVICE_MODEL_PREFIX = 'openai:';

export interface ServiceEmbedderOptions {
  /** The service's model name (what follows `openai:` in EMBED_MODEL). */
  model: string;
  /** e.g. https://api.openai.com/v1, http://localhost:11434/v1 (Ollama), http://tei:8080/v1. */
  baseUrl: string;
  apiKey?: string;
  /** Sent as `dimensions` (models that can shorten their vectors); otherwise the service's own. */
  dimensions?: number;
  /** Texts per request (TEI accepts 32 by default, OpenAI 2,048). */
  batchSize: number;
  /** Document requests in flight at once. */
  concurrency: number;
  /** A request's deadline, ms. Queries use the smaller of this and QUERY_TIMEOUT_MS. */
  timeoutMs: number;
  /** Retries of a document request (429, 5xx, connection errors); queries retry once. */
  maxRetries: number;
  queryPrefix?: string;
  documentPrefix?: string;
  /** Each request's outcome and the tokens the service counted, for metrics. */
  observe?: (event: { kind: 'query' | 'documents'; outcome: 'ok' | 'error'; texts: number; tokens: number; ms: number }) => void;
  /** A fetch to use instead of the global one (tests). */
  fetch?: typeof fetch;
}

/** A query waits at most this long for the service: the search's own budget is usually shorter. */
const QUERY_TIMEOUT_MS = 10_000;
/** Queries in flight at once: they must not queue behind a catalog's documents. */
const QUERY_CONCURRENCY = 16;
/**
 * Characters of one text sent: tool texts are short, but a pushed description may not be, and a
 * service refuses (TEI without --auto-truncate) or bills an input past its context.
 */
const TEXT_CHARS_MAX = 8_000;

export class ServiceEmbedder implements Embedder {
  readonly modelId: string;
  #client: OpenAI;
  #documents: Slots;
  #queries = new Slots(QUERY_CONCURRENCY);
  #lastFailure: { at: Date; reason: string } | null = null;

  private constructor(
    private readonly options: ServiceEmbedderOptions,
    readonly dimension: number,
    client: OpenAI,
  ) {
    this.modelId = serviceModelId(options.model, dimension);
    this.#client = client;
    this.#documents = new Slots(options.concurrency);
  }

  /**
   * Connects and learns the dimension from one probe (or takes EMBED_DIMENSIONS). Throws with the
   * service's reason when it does not answer: the service is then unavailable and search runs on BM25.
   */
  static async connect(options: ServiceEmbedderOptions): Promise<ServiceEmbedder> {
    const client = new OpenAI({
      apiKey: options.apiKey || 'unused',
      baseURL: options.baseUrl,
      timeout: options.timeoutMs,
      maxRetries: options.maxRetries,
      ...(options.fetch ? { fetch: options.fetch } : {}),
    });
    const probe = new ServiceEmbedder(options, options.dimensions ?? 0, client);
    const [vector] = await probe.#request(['dimension probe'], 'query');
    if (options.dimensions !== undefined && vector!.length !== options.dimensions)
      throw new Error(`${options.baseUrl} answered ${vector!.length} dimensions for "${options.model}", not EMBED_DIMENSIONS=${options.dimensions}`);
    return new ServiceEmbedder(options, vector!.length, client);
  }

  async embedDocuments(texts: string[]): Promise<number[][]> {
    const prefix = this.options.documentPrefix ?? '';
    const batches = await Promise.all(
      chunk(
        texts.map((text) => prefix + text),
        this.options.batchSize,
      ).map((batch) => this.#documents.run(() => this.#request(batch, 'documents'))),
    );
    return batches.flat();
  }

  async embedQuery(text: string): Promise<number[]> {
    const [vector] = await this.#queries.run(() => this.#request([(this.options.queryPrefix ?? '') + text], 'query'));
    return vector!;
  }

  /** The service's last failure within the last minute, for /readyz; undefined when it answers. */
  lastFailure(): string | undefined {
    const failure = this.#lastFailure;
    if (!failure || Date.now() - failure.at.getTime() > 60_000) return undefined;
    return `${failure.reason} (${failure.at.toISOString()})`;
  }

  async close(): Promise<void> {}

  async #request(texts: string[], kind: 'query' | 'documents'): Promise<number[][]> {
    const started = performance.now();
    let tokens = 0;
    try {
      const answer = await this.#client.embeddings.create(
        {
          model: this.options.model,
          input: texts.map((text) => (text.length > TEXT_CHARS_MAX ? text.slice(0, TEXT_CHARS_MAX) : text)),
          // Floats, not the client's default base64: Ollama and some proxies answer floats only.
          encoding_format: 'float',
          ...(this.options.dimensions !== undefined ? { dimensions: this.options.dimensions } : {}),
        },
        kind === 'query' ? { timeout: Math.min(this.options.timeoutMs, QUERY_TIMEOUT_MS), maxRetries: 1 } : {},
      );
      tokens = answer.usage?.prompt_tokens ?? 0;
      const vectors = this.#vectors(answer, texts.length);
      this.#lastFailure = null;
      this.options.observe?.({ kind, outcome: 'ok', texts: texts.length, tokens, ms: performance.now() - started });
      return vectors;
    } catch (error) {
      const reason = describeServiceError(error);
      this.#lastFailure = { at: new Date(), reason };
      this.options.observe?.({ kind, outcome: 'error', texts: texts.length, tokens, ms: performance.now() - started });
      throw Object.assign(new Error(`embedding service ${this.options.baseUrl} (${this.options.model}): ${reason}`), { transient: isTransient(error) });
    }
  }

  /** The answer's vectors in input order, each checked: one per text, numbers, this model's dimension. */
  #vectors(answer: unknown, count: number): number[][] {
    const data = (answer as { data?: unknown } | null)?.data;
    if (!Array.isArray(data) || data.length !== count) throw new Error(`expected ${count} embeddings, got ${Array.isArray(data) ? data.length : 'none'}`);
    const vectors = new Array<number[]>(count);
    for (const [position, item] of data.entries()) {
      const { index, embedding } = (item ?? {}) as { index?: unknown; embedding?: unknown };
      const at = typeof index === 'number' ? index : position;
      if (!Number.isInteger(at) || at < 0 || at >= count || vectors[at]) throw new Error(`embedding index ${String(index)} is out of place`);
      if (!Array.isArray(embedding) || embedding.length === 0 || !embedding.every((value) => typeof value === 'number' && Number.isFinite(value)))
        throw new Error('an embedding is not an array of finite numbers');
      if (this.dimension !== 0 && embedding.length !== this.dimension)
        throw new Error(`an embedding has ${embedding.length} dimensions, not ${this.dimension}: the service changed its model; restart toolsift to re-embed`);
      vectors[at] = l2Normalize(embedding);
    }
    return vectors;
  }
}

export const serviceModelId = (model: string, dimension: number) => `${SERVICE_MODEL_PREFIX}${model}@${dimension}`;

/** The client's error in a line: status and the service's message, never the key. */
/**
 * A failure that may pass by itself: the service unreachable or slow, rate-limited or failing
 * (429, 5xx). A refusal (400, 401, 403, 404, 422) or an answer that is not embeddings is a
 * setting to fix.
 */
function isTransient(error: unknown): boolean {
  if (error instanceof OpenAI.APIConnectionError) return true;
  if (error instanceof OpenAI.APIError) return error.status === undefined || error.status === 408 || error.status === 429 || error.status >= 500;
  return false;
}

function describeServiceError(error: unknown): string {
  if (error instanceof OpenAI.APIError) {
    const status = error.status ? `HTTP ${error.status}` : error.constructor.name;
    const message = error.message?.replace(/\s+/g, ' ').slice(0, 200);
    return message ? `${status}: ${message}` : status;
  }
  return (error as Error)?.message ?? String(error);
}
