/**
 * One rule for a query's length on every interface (REST search, feedback, tool-search, MCP
 * search_tools and the drafts' tools/catalog): at most QUERY_CHARS_MAX characters. The gateway
 * selector, which promises never to fail closed, cuts a longer one (`cutQuery`) where the others
 * answer 400 (MCP: an isError result) naming the limit: a query that long is a client's mistake,
 * and only the selector is called where a refusal would break an agent's turn.
 */
export const QUERY_CHARS_MAX = 10_000;

/** The query's first QUERY_CHARS_MAX characters, never half a surrogate pair. */
export function cutQuery(query: string): string {
  if (query.length <= QUERY_CHARS_MAX) return query;
  const cut = query.slice(0, QUERY_CHARS_MAX);
  return /[\uD800-\uDBFF]$/.test(cut) ? cut.slice(0, -1) : cut;
}
