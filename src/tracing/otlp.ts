/**
 * Tracing with the OpenTelemetry SDK: spans batched (BatchSpanProcessor) and exported over OTLP/HTTP
 * as JSON to the operator's collector. Loaded by deps.ts only when an endpoint is configured.
 *
 * Nothing global is registered (no tracer provider, context manager or propagator): parents are
 * passed explicitly (tracing.ts), so libraries that trace through the global API (drizzle, for
 * one) stay silent, and two services in one process do not share spans. Exporting never touches a
 * request: the batch leaves on a timer, a full queue drops spans, and a collector that is down
 * costs a warning a minute in the log. The collector is reached directly (node's HTTP client), not
 * through the upstreams' address policy or proxy: its address comes from the environment only.
 */
import {
  createTraceState,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Span,
  type SpanContext,
  type Tracer,
} from '@opentelemetry/api';
import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BasicTracerProvider,
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  type ReadableSpan,
  type Sampler,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-base';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';
import type { TraceContext } from '../lib/trace-context.js';
import type { Logger } from '../logger.js';
import type { OtlpSettings } from './otlp-settings.js';
import { ERROR_TYPE, type GatewaySpan, type SpanAttributes, type SpanOptions, type Tracing } from './tracing.js';

/** At most one warning this often about failing exports: a collector that is down is a line a minute, not one a batch. */
const EXPORT_WARNING_MS = 60_000;
/** How long close() waits for the last spans to leave: a collector that is down must not hold the shutdown (main.ts gives closing 5 s). */
const CLOSE_FLUSH_MS = 2_000;

const KINDS = { server: SpanKind.SERVER, client: SpanKind.CLIENT, internal: SpanKind.INTERNAL } as const;

export function startOtlpTracing(settings: OtlpSettings, logger: Logger, version: string): Tracing {
  const exporter = new WarningExporter(new OTLPTraceExporter({ url: settings.url, headers: settings.headers }), collectorName(settings.url), logger);
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ ...settings.resourceAttributes, [ATTR_SERVICE_NAME]: settings.serviceName }),
    sampler: sampler(settings),
    spanProcessors: [new BatchSpanProcessor(exporter)],
  });
  logger.info(
    { collector: collectorName(settings.url), serviceName: settings.serviceName, sampler: settings.sampler },
    'tracing: exporting spans over OTLP/HTTP',
  );
  return new OtlpTracing(provider.getTracer('toolsift', version), provider, logger);
}

class OtlpTracing implements Tracing {
  readonly enabled = true;
  readonly #tracer: Tracer;
  readonly #provider: BasicTracerProvider;
  readonly #logger: Logger;
  /** Contexts this process's spans gave out: their children get the span as a local parent, not a remote one. */
  readonly #local = new WeakMap<TraceContext, Context>();

  constructor(tracer: Tracer, provider: BasicTracerProvider, logger: Logger) {
    this.#tracer = tracer;
    this.#provider = provider;
    this.#logger = logger;
  }

  start(name: string, options: SpanOptions): GatewaySpan {
    const parent = options.parent ? (this.#local.get(options.parent) ?? remoteParent(options.parent)) : ROOT_CONTEXT;
    const links = options.links?.map((link) => ({ context: this.#spanContext(link) }));
    const span = this.#tracer.startSpan(name, { kind: KINDS[options.kind], attributes: defined(options.attributes), ...(links ? { links } : {}) }, parent);
    const context = traceContextOf(span);
    this.#local.set(context, trace.setSpan(ROOT_CONTEXT, span));
    return {
      context,
      set: (attributes) => span.setAttributes(defined(attributes)),
      rename: (next) => span.updateName(next),
      end: (error) => {
        if (error) {
          span.setAttribute(ERROR_TYPE, error);
          span.setStatus({ code: SpanStatusCode.ERROR });
        }
        span.end();
      },
    };
  }

  /** A context as a link names it: one of this process's spans as it is, any other as a caller sent it. */
  #spanContext(context: TraceContext): SpanContext {
    const local = this.#local.get(context);
    return (local && trace.getSpanContext(local)) ?? remoteSpanContext(context);
  }

  async close(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => {
      timer = setTimeout(() => resolve('late'), CLOSE_FLUSH_MS);
    });
    const shutdown = this.#provider.shutdown().then(
      () => 'done' as const,
      () => 'failed' as const,
    );
    const done = await Promise.race([shutdown, late]);
    clearTimeout(timer);
    if (done !== 'done') this.#logger.warn({ waitedMs: CLOSE_FLUSH_MS }, 'tracing: the last spans were not all exported at shutdown');
  }
}

/** The W3C context a caller sent (or one of ours, seen as a value) as the parent of a span. */
const remoteParent = (parent: TraceContext): Context => trace.setSpanContext(ROOT_CONTEXT, remoteSpanContext(parent));

function remoteSpanContext(context: TraceContext): SpanContext {
  const [, traceId, spanId, flags] = context.traceparent.split('-') as [string, string, string, string];
  return {
    traceId,
    spanId,
    traceFlags: Number.parseInt(flags, 16),
    isRemote: true,
    ...(context.tracestate ? { traceState: createTraceState(context.tracestate) } : {}),
  };
}

/** A span's own context as W3C headers: what its children continue and what an upstream call forwards (the caller's tracestate kept). */
function traceContextOf(span: Span): TraceContext {
  const own = span.spanContext();
  const traceparent = `00-${own.traceId}-${own.spanId}-${(own.traceFlags & 0xff).toString(16).padStart(2, '0')}`;
  const tracestate = own.traceState?.serialize();
  return tracestate ? { traceparent, tracestate } : { traceparent };
}

const defined = (attributes: SpanAttributes = {}): Attributes =>
  Object.fromEntries(Object.entries(attributes).filter(([, value]) => value !== undefined)) as Attributes;

function sampler({ sampler: name, ratio }: OtlpSettings): Sampler {
  const root = name.endsWith('always_off')
    ? new AlwaysOffSampler()
    : name.endsWith('traceidratio')
      ? new TraceIdRatioBasedSampler(ratio)
      : new AlwaysOnSampler();
  return name.startsWith('parentbased_') ? new ParentBasedSampler({ root }) : root;
}

/** The collector as a log line may name it: scheme, host and path, without credentials or a query. */
function collectorName(url: string): string {
  const parsed = new URL(url);
  return `${parsed.origin}${parsed.pathname}`;
}

/** The OTLP exporter, with its failures said in the log at most once a minute (the SDK's own reports go to a diag logger nobody set). */
class WarningExporter implements SpanExporter {
  readonly #exporter: SpanExporter;
  readonly #collector: string;
  readonly #logger: Logger;
  #warnedAt = Number.NEGATIVE_INFINITY;
  #dropped = 0;

  constructor(exporter: SpanExporter, collector: string, logger: Logger) {
    this.#exporter = exporter;
    this.#collector = collector;
    this.#logger = logger;
  }

  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    this.#exporter.export(spans, (result) => {
      if (result.code !== ExportResultCode.SUCCESS) this.#failed(spans.length, result.error);
      done(result);
    });
  }

  #failed(spans: number, error: Error | undefined): void {
    this.#dropped += spans;
    const now = performance.now();
    if (now - this.#warnedAt < EXPORT_WARNING_MS) return;
    // The error's words (a status text, a socket error), never the response body or a header.
    this.#logger.warn(
      { collector: this.#collector, spansDropped: this.#dropped, error: error?.message, code: (error as { code?: unknown } | undefined)?.code },
      'tracing: spans could not be exported (requests are not affected; at most one such line a minute)',
    );
    this.#warnedAt = now;
    this.#dropped = 0;
  }

  shutdown(): Promise<void> {
    return this.#exporter.shutdown();
  }

  forceFlush(): Promise<void> {
    return this.#exporter.forceFlush?.() ?? Promise.resolve();
  }
}
