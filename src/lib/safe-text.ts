/**
 * Text a store cannot keep as sent: a NUL character (PostgreSQL's text type cannot hold one) or a
 * lone UTF-16 surrogate (not encodable as UTF-8: stored as U+FFFD, silently changing it). The REST
 * API refuses either anywhere in a body (http/input-safety.ts); MCP checks the meta-tools' own
 * fields and passes a proxied call's arguments through (mcp/server.ts).
 */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
/** One scan rules out both in nearly every string (surrogates come in pairs only outside the BMP). */
const MAYBE_UNSAFE = /[\u0000\uD800-\uDFFF]/;

/** What is wrong with `value` as stored text, or undefined. */
export function textProblem(value: string): string | undefined {
  if (!MAYBE_UNSAFE.test(value)) return undefined;
  if (value.includes('\u0000')) return 'contains a NUL character (\\u0000)';
  if (LONE_SURROGATE.test(value)) return 'contains a lone UTF-16 surrogate (not valid Unicode text)';
  return undefined;
}
