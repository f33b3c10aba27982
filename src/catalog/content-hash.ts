import { createHash } from 'node:crypto';
import { canonicalJson } from '../lib/canonical-json.js';
import type { CanonicalTool } from '../lib/tool.js';

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
