/**
 * How the MCP surface reaches a tool's upstream MCP server. The MCP endpoint (`call_tool`) depends
 * on this interface only; `src/upstream/` implements it (connections to remote servers over
 * Streamable HTTP or SSE, supervised stdio children from UPSTREAMS_FILE).
 */
import type { TraceContext } from '../lib/trace-context.js';
import type { UpstreamRow } from '../store/upstream-store.js';

/** An MCP `CallToolResult` as the upstream returned it; passed through unchanged. */
export interface UpstreamCallResult {
  content: Array<Record<string, unknown>>;
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
  /** Set (with isError) when the catalog has no upstream of that name: nothing was called. */
  unknownUpstream?: boolean;
  /** Set (with isError) when the call did not complete: the gateway's own words for why (audit), never the upstream's text. */
  failure?: string;
  [key: string]: unknown;
}

export interface UpstreamCallInput {
  tenant: string;
  catalog: string;
  /** The tool's `server`, which for synced tools is the upstream's name. */
  server: string;
  /** The tool's name as the upstream knows it. */
  tool: string;
  arguments: Record<string, unknown>;
  signal?: AbortSignal;
  /** The upstream's row when the caller read it with the tool (null: none is registered); read here when absent. */
  upstream?: UpstreamRow | null;
  /** The agent's W3C trace context, sent in the call's `_meta` (MCP's traceparent and tracestate keys). */
  trace?: TraceContext;
}

export interface UpstreamCaller {
  /** Whether (tenant, catalog) has an upstream named `server` that calls can go to. */
  has(tenant: string, catalog: string, server: string): Promise<boolean>;
  /**
   * Calls the tool on its upstream. Never throws for upstream trouble (down, slower than
   * UPSTREAM_CALL_TIMEOUT_MS, protocol error): returns `{ isError: true, content: [text reason] }`.
   */
  callTool(input: UpstreamCallInput): Promise<UpstreamCallResult>;
}
