import createFetchClient, { type Client } from 'openapi-fetch';
import type { paths } from './schema.js';

export type { components, operations, paths } from './schema.js';

export interface ToolsiftClientOptions {
  baseUrl: string;
  /** Sent as `Authorization: Bearer <key>` when the service has API_KEYS. */
  apiKey?: string;
  fetch?: typeof fetch;
}

/**
 * A typed client for toolsift, generated from openapi.yaml (`npm run client:generate` writes
 * schema.d.ts; openapi-fetch does the calls). Paths, bodies and answers are checked by tsc.
 */
export function createToolsiftClient(options: ToolsiftClientOptions): Client<paths> {
  return createFetchClient<paths>({
    baseUrl: options.baseUrl,
    headers: options.apiKey ? { Authorization: `Bearer ${options.apiKey}` } : {},
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
}

export {
  agentsToolSearch,
  aiSdkSearch,
  anthropicToolResult,
  DEFAULT_TIMEOUT_MS,
  keywordMatch,
  narrowTools,
  openaiToolSearchOutput,
  rankToolNames,
  ToolsiftUnavailable,
  toolSearchParameters,
  useTracker,
  type SearchOptions,
  type UseTracker,
} from './tool-search.js';
