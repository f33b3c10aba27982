/**
 * W3C Trace Context (https://www.w3.org/TR/trace-context/) carried through the gateway: an agent's
 * `traceparent` and `tracestate`, from its MCP request's `_meta` (the MCP spec's keys) or its HTTP
 * headers, go with the call to the upstream (its tools/call `_meta`), and the trace id goes into the
 * call's audit line, so an operator follows one agent step from the agent through toolsift to the
 * tool server. Without tracing configured, toolsift forwards the context as it came (W3C lets a
 * hop that does not trace pass it on unchanged); with it, what is forwarded is toolsift's own span
 * of the call, in the same trace (tracing/). Only well-formed values pass: anything else from a
 * caller is dropped, never forwarded.
 */

export interface TraceContext {
  traceparent: string;
  tracestate?: string;
}

/** version 00: 2-hex version, 32-hex trace id, 16-hex parent id, 2-hex flags; ids not all zeros. */
const TRACEPARENT = /^00-(?!0{32})([0-9a-f]{32})-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$/;
/** A tracestate member: a key (`vendor` or `tenant@vendor`) and a value of printable ASCII but `,` and `=`. */
const MEMBER = /^[a-z0-9][_0-9a-z*\/@-]{0,255}=[\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,255}[\x21-\x2b\x2d-\x3c\x3e-\x7e]$/;

/** At most 32 well-formed members, 512 characters in all (the spec's bounds); empty members are allowed. */
function validTracestate(value: string): boolean {
  if (value.length > 512) return false;
  const members = value
    .split(',')
    .map((member) => member.trim())
    .filter(Boolean);
  return members.length > 0 && members.length <= 32 && members.every((member) => MEMBER.test(member));
}

/** A trace context from values a caller sent (MCP `_meta` or HTTP headers); undefined when `traceparent` is absent or malformed. */
export function traceContext(source: { traceparent?: unknown; tracestate?: unknown } | undefined): TraceContext | undefined {
  const traceparent = single(source?.traceparent);
  if (!traceparent || !TRACEPARENT.test(traceparent)) return undefined;
  const tracestate = single(source?.tracestate);
  return tracestate && validTracestate(tracestate) ? { traceparent, tracestate } : { traceparent };
}

/** The trace id of a context (its audit lines' `trace_id`). */
export const traceId = (context: TraceContext) => context.traceparent.slice(3, 35);

/** A value given once as a string (a header repeated arrives as an array: not one context). */
const single = (value: unknown) => (typeof value === 'string' ? value.trim() : undefined);
