import { createHash } from 'node:crypto';
import type { CanonicalTool } from './tool.js';

/**
 * JSON with object keys sorted at every depth, so key order never changes the hash. Built by
 * appending to one string: it runs for every never-seen tool on the request path, and the
 * entries, sorted copies and joins of a first version were a tenth of that path's garbage.
 * Keys sort by UTF-16 code units (the default sort, as `<` compares strings).
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) {
    let out = '[';
    for (let index = 0; index < value.length; index++) out += (index === 0 ? '' : ',') + canonicalJson(value[index]);
    return out + ']';
  }
  const record = value as Record<string, unknown>;
  let out = '{';
  for (const key of Object.keys(record).sort()) {
    const item = record[key];
    if (item === undefined) continue;
    out += (out.length === 1 ? '' : ',') + JSON.stringify(key) + ':' + canonicalJson(item);
  }
  return out + '}';
}

/** Bump when the canonical form changes meaning, so old and new documents never share a hash. */
const HASH_VERSION = 'toolsift/v1';

/**
 * The content address of a tool: the same tool arriving as MCP, OpenAI or Anthropic JSON, in any
 * key order, from any tenant, maps to one hash (one document, one set of terms, one embedding).
 */
export function contentHash(tool: CanonicalTool): string {
  const canonical = canonicalJson({
    v: HASH_VERSION,
    name: tool.name,
    description: tool.description,
    inputSchema: tool.inputSchema,
    tags: tool.tags,
    server: tool.server,
  });
  return createHash('sha256').update(canonical).digest('hex');
}
