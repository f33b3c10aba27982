/**
 * A rerank service over HTTP: Hugging Face Text Embeddings Inference's `POST /rerank`
 * (`{query, texts}` -> `[{index, score}]`) or the Cohere-style `POST /v1/rerank` that Cohere, Jina,
 * Voyage, vLLM and LiteLLM's proxy speak (`{model, query, documents, top_n}` ->
 * `{results: [{index, relevance_score}]}`; Voyage's `data` and `top_k` are read too). One request per
 * search, bounded by the caller's deadline; every answer is checked before it is used.
 */

export type RerankFormat = 'tei' | 'cohere';

export interface RerankerOptions {
  /** The endpoint itself, e.g. http://tei:8080/rerank or https://api.cohere.com/v2/rerank. */
  url: string;
  apiKey?: string;
  model?: string;
  /** tei or cohere; by default cohere when the path ends in /v1/rerank or /v2/rerank, else tei. */
  format?: RerankFormat;
  fetch?: typeof fetch;
}

export interface Reranker {
  /** Scores of `texts` for `query`, in the texts' order (higher is better). */
  rerank(query: string, texts: readonly string[], signal?: AbortSignal): Promise<number[]>;
}

/** Characters of one text sent: a reranker reads a few hundred tokens of each. */
const TEXT_CHARS_MAX = 2_000;

export function rerankFormat(url: string, format?: RerankFormat): RerankFormat {
  if (format) return format;
  return /\/v[12]\/rerank\/?$/.test(new URL(url).pathname) ? 'cohere' : 'tei';
}

export function createReranker(options: RerankerOptions): Reranker {
  const format = rerankFormat(options.url, options.format);
  const send = options.fetch ?? fetch;
  return {
    async rerank(query, texts, signal) {
      if (texts.length === 0) return [];
      const documents = texts.map((text) => (text.length > TEXT_CHARS_MAX ? text.slice(0, TEXT_CHARS_MAX) : text));
      const body =
        format === 'tei'
          ? { query, texts: documents, truncate: true }
          : { ...(options.model ? { model: options.model } : {}), query, documents, top_n: documents.length };
      const response = await send(options.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {}) },
        body: JSON.stringify(body),
        signal,
      });
      if (!response.ok) throw new Error(`rerank service answered HTTP ${response.status}`);
      const answer: unknown = await response.json().catch(() => {
        throw new Error('rerank service answered something that is not JSON');
      });
      return scoresOf(answer, texts.length);
    },
  };
}

/** The answer's scores in input order; throws when an entry is missing, repeated or not a number. */
export function scoresOf(answer: unknown, count: number): number[] {
  const entries = Array.isArray(answer)
    ? answer
    : Array.isArray((answer as { results?: unknown })?.results)
      ? (answer as { results: unknown[] }).results
      : Array.isArray((answer as { data?: unknown })?.data)
        ? (answer as { data: unknown[] }).data
        : undefined;
  if (!entries) throw new Error('rerank answer has no list of scores');
  if (entries.length !== count) throw new Error(`rerank answer scores ${entries.length} of ${count} texts`);
  const scores = new Array<number>(count).fill(Number.NaN);
  for (const entry of entries) {
    const { index, score, relevance_score } = (entry ?? {}) as { index?: unknown; score?: unknown; relevance_score?: unknown };
    const value = typeof relevance_score === 'number' ? relevance_score : score;
    if (!Number.isInteger(index) || (index as number) < 0 || (index as number) >= count || !Number.isNaN(scores[index as number]!))
      throw new Error(`rerank answer has an index out of place: ${String(index)}`);
    if (typeof value !== 'number' || !Number.isFinite(value)) throw new Error('rerank answer has a score that is not a number');
    scores[index as number] = value;
  }
  return scores;
}
