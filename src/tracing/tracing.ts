/**
 * toolsift's own spans of the traces that cross it (an agent's request, the meta-tool it calls, the
 * upstream call that runs a tool) and of its own work (an upstream's sync), behind one interface:
 * the OpenTelemetry SDK exporting over OTLP (otlp.ts, loaded only when configured) or nothing at
 * all. Spans are handed their parent explicitly, as a W3C trace context (lib/trace-context.ts),
 * never through an ambient context: the context a span gives its children is also what is
 * forwarded to an upstream, so the trace reads agent -> toolsift -> upstream. Without tracing the
 * parent passes through unchanged, and what is forwarded is what the caller sent.
 *
 * What a span may carry is written here: names of tenants, catalogs, tools, prompts, resources and
 * upstreams, outcomes and counts; never a query, a tool's arguments or results, a prompt's
 * arguments, a resource's URI, a key or a header value (docs/security.md).
 */
import type { TraceContext } from '../lib/trace-context.js';

export type SpanKind = 'server' | 'client' | 'internal';

export type SpanAttributes = Record<string, string | number | boolean | undefined>;

export interface SpanOptions {
  kind: SpanKind;
  /** The caller's context, or the span this one runs within; absent: a new trace. */
  parent?: TraceContext;
  /** Spans of other traces this one belongs with (the HTTP request of an MCP call that named its own parent). */
  links?: TraceContext[];
  attributes?: SpanAttributes;
}

/** One operation of a trace, ended exactly once. */
export interface GatewaySpan {
  /** What this span's children continue, and what a call it makes forwards: its own context, or (not tracing) its parent's. */
  readonly context: TraceContext | undefined;
  set(attributes: SpanAttributes): void;
  /** The name once it is known (an HTTP request's route is, only after routing). */
  rename(name: string): void;
  /** `error`: the span failed, and this is why as a short class (`tool_error`, `timeout`, `503`), never a message. */
  end(error?: string): void;
}

export interface Tracing {
  readonly enabled: boolean;
  start(name: string, options: SpanOptions): GatewaySpan;
  /** Exports the spans still queued (within a bound: a collector that is down does not hold the shutdown), then stops. */
  close(): Promise<void>;
}

/** A span that records nothing: its children and calls see its parent's context, as if it were not there. */
const passThrough = (parent: TraceContext | undefined): GatewaySpan => ({ context: parent, set() {}, rename() {}, end() {} });
const NO_PARENT = passThrough(undefined);

/** Tracing off (no OTLP endpoint configured): no SDK is loaded, and trace context is forwarded as it came. */
export const NO_TRACING: Tracing = {
  enabled: false,
  start: (_name, options) => (options.parent ? passThrough(options.parent) : NO_PARENT),
  close: async () => {},
};

/** Ends `span` when `work` settles: with `errorOf(value)` when it resolves, with the error's class when it rejects. */
export async function endWith<T>(span: GatewaySpan, work: Promise<T>, errorOf: (value: T) => string | undefined): Promise<T> {
  try {
    const value = await work;
    span.end(errorOf(value));
    return value;
  } catch (error) {
    span.end(errorClass(error));
    throw error;
  }
}

/** An error's class for `error.type`: its name, never its message (which may quote a caller's input). */
export const errorClass = (error: unknown): string => (error instanceof Error ? error.name : 'error');

/*
 * Attribute names. OpenTelemetry's semantic conventions where there is one: HTTP's (stable), and
 * MCP's and GenAI's (development status, in the GenAI conventions; copied here, as the conventions
 * package advises for unstable names, rather than imported). The rest are toolsift's own.
 */
/** MCP: the JSON-RPC method (`tools/call`, `tools/list`, `prompts/get`, `resources/read`). */
export const MCP_METHOD_NAME = 'mcp.method.name';
/** GenAI: the tool a `tools/call` runs (a meta-tool on toolsift's span, the upstream's tool on the upstream's). */
export const GEN_AI_TOOL_NAME = 'gen_ai.tool.name';
/** GenAI: the prompt a `prompts/get` gives. */
export const GEN_AI_PROMPT_NAME = 'gen_ai.prompt.name';
/** GenAI: `execute_tool` for a tool call. */
export const GEN_AI_OPERATION_NAME = 'gen_ai.operation.name';
export const EXECUTE_TOOL = 'execute_tool';
/** Why a span failed: `tool_error` for a result with isError (the MCP conventions' value), else the gateway's own class of failure. */
export const ERROR_TYPE = 'error.type';
export const TENANT = 'toolsift.tenant';
export const CATALOG = 'toolsift.catalog';
/** The catalog tool a `call_tool` (or a draft `tools/call`) names. */
export const TOOL = 'toolsift.tool';
export const UPSTREAM = 'toolsift.upstream';
/** `ok`, `tool_error`, `error`, or an upstream call's audit outcome. */
export const OUTCOME = 'toolsift.outcome';
/** The resource a `resources/read` reads, by its registered name (`catalog-index`): a URI may carry what a caller typed. */
export const RESOURCE = 'toolsift.resource';
/** How many results a meta-tool answered (search results, tools described, names listed, a program's calls), or tools a list held. */
export const RESULTS = 'toolsift.results';
/** Set when an answer was made in a degraded way (`store_error`, `embedder_busy`, ...). */
export const DEGRADED = 'toolsift.degraded';

/** What an upstream `tools/call` span says of its call (the MCP client span conventions). */
export const upstreamCallAttributes = (call: { tenant: string; catalog: string; upstream: string; tool: string }): SpanAttributes => ({
  [MCP_METHOD_NAME]: 'tools/call',
  [GEN_AI_OPERATION_NAME]: EXECUTE_TOOL,
  [GEN_AI_TOOL_NAME]: call.tool,
  [TENANT]: call.tenant,
  [CATALOG]: call.catalog,
  [UPSTREAM]: call.upstream,
});

/** An upstream call's `error.type`: the gateway's words for a call that did not complete, `tool_error` for a result with isError. */
export const upstreamCallError = (result: { isError?: boolean; failure?: string }): string | undefined =>
  result.failure ?? (result.isError ? 'tool_error' : undefined);
