import { createHash } from 'node:crypto';
import type { CanonicalTool } from './tool.js';

/** JSON with object keys sorted at every depth, so key order never changes the hash. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, item]) => item !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${canonicalJson(item)}`).join(',')}}`;
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
