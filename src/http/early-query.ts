/**
 * The selector's query starts on the model while its tool list is still arriving. A gateway's body
 * opens with the query (`{"pattern": "...", ...` or `{"query": "...", ...`) and ends with a few
 * hundred KB of tools resent every turn; the model is the slowest step of a turn, and its start
 * waited for those bytes to arrive and be read (0.5-1 ms a turn, docs/benchmarks.md, "The
 * selector's repeated list").
 *
 * Only a head start, never an answer: the text the selector will embed is guessed from the first
 * bytes (the query as a remembered list turns it into its dense text, typos' likely words added,
 * with the list used last: a gateway resends the same one) and asked of an embedder whose calls
 * for one text share a model call (`Embedder.sharesQueries`, the query cache). The selector then
 * asks for the text it embeds as always, from the whole body: when the guess was right it finds
 * the vector under way; when it was not (another list, a key repeated later in the body) one model
 * call was spent for nothing. Without a sharing embedder nothing starts early.
 */
import type { RequestHandler } from 'express';
import type { Embedder } from '../embed/embedder.js';
import type { LruCache } from '../lib/lru-cache.js';
import { cutQuery } from '../lib/query-length.js';
import { expandQuery } from '../search/hybrid-search.js';
import type { CachedToolList } from '../search/selector.js';
import { isEscaped, skipWhitespace } from './json-span.js';

/** The keys whose string a selector body may open with: gateways <= 0.5.2 and >= 0.5.3. */
const LEADING_KEYS = ['"pattern"', '"query"'].map((key) => Buffer.from(key));
/** Longest quoted query read from the first bytes (longer ones, rare and cut anyway, wait for the body). */
const LEADING_QUERY_BYTES = 16 * 1024;

/**
 * The query a body's first bytes open with (the value of a leading "pattern" or "query" key, cut
 * as the selector cuts it), or undefined when they open otherwise, the string is not complete in
 * them, or it is blank.
 */
export function leadingQuery(head: Buffer): string | undefined {
  let at = head[0] === 0xef && head[1] === 0xbb && head[2] === 0xbf ? 3 : 0;
  at = skipWhitespace(head, at);
  if (head[at] !== 0x7b) return undefined;
  at = skipWhitespace(head, at + 1);
  const key = LEADING_KEYS.find(
    (candidate) => at + candidate.length <= head.length && head.compare(candidate, 0, candidate.length, at, at + candidate.length) === 0,
  );
  if (!key) return undefined;
  at = skipWhitespace(head, at + key.length);
  if (head[at] !== 0x3a) return undefined;
  const start = skipWhitespace(head, at + 1);
  if (head[start] !== 0x22) return undefined;
  let end = head.indexOf(0x22, start + 1);
  while (end !== -1 && isEscaped(head, end)) end = head.indexOf(0x22, end + 1);
  if (end === -1 || end - start > LEADING_QUERY_BYTES) return undefined;
  let text: unknown;
  try {
    text = JSON.parse(head.toString('utf8', start, end + 1));
  } catch {
    return undefined;
  }
  if (typeof text !== 'string') return undefined;
  const query = cutQuery(text);
  return query.trim() === '' ? undefined : query;
}

/**
 * `readBody` (express.raw) for the selector's routes, with the query of the body's first bytes
 * handed to the model as they arrive (see the file comment). The first chunk is read beside the
 * body reader, which has its own listener by then, so nothing is taken from it; a compressed body
 * is left alone (its first bytes are not the JSON).
 */
export function withEarlyQuery(
  readBody: RequestHandler,
  selector: { embedder: Embedder | null; toolListCache: LruCache<string, CachedToolList> },
): RequestHandler {
  return (req, res, next) => {
    readBody(req, res, next);
    const embedder = selector.embedder;
    const encoding = req.headers['content-encoding'];
    if (!embedder?.sharesQueries || req.readableEnded || (encoding !== undefined && encoding.toLowerCase() !== 'identity')) return;
    const first = (chunk: unknown) => {
      req.off('data', first);
      const query = Buffer.isBuffer(chunk) ? leadingQuery(chunk) : undefined;
      if (query === undefined) return;
      // The dense text search/selector.ts embeds for a remembered list (its `expandQuery`).
      const list = selector.toolListCache.newest();
      const text = list ? expandQuery(query, list.bm25.vocabulary()).text : query;
      // A failure is the selector's to report, when it asks for the same text.
      embedder.embedQuery(text).catch(() => {});
    };
    req.on('data', first);
  };
}
