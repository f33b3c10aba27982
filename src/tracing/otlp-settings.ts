/**
 * The OTLP trace exporter's settings from OpenTelemetry's standard variables
 * (https://opentelemetry.io/docs/specs/otel/configuration/sdk-environment-variables/ and
 * .../protocol/exporter/), read and checked by config.ts at start. Nothing here loads the SDK.
 */

/** The variables as config.ts parsed them. */
export interface OtlpVariables {
  OTEL_SDK_DISABLED: boolean;
  OTEL_TRACES_EXPORTER: 'otlp' | 'none';
  OTEL_EXPORTER_OTLP_ENDPOINT?: string;
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?: string;
  OTEL_EXPORTER_OTLP_HEADERS?: string;
  OTEL_EXPORTER_OTLP_TRACES_HEADERS?: string;
  OTEL_SERVICE_NAME?: string;
  OTEL_RESOURCE_ATTRIBUTES?: string;
  OTEL_TRACES_SAMPLER: TraceSampler;
  OTEL_TRACES_SAMPLER_ARG?: number;
}

export const TRACE_SAMPLERS = [
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
  'always_on',
  'always_off',
  'traceidratio',
] as const;
export type TraceSampler = (typeof TRACE_SAMPLERS)[number];

export const DEFAULT_SERVICE_NAME = 'toolsift';

export interface OtlpSettings {
  /** Where spans are POSTed (OTLP/HTTP, JSON). */
  url: string;
  /** Sent with every export (a collector's credentials): never logged. */
  headers: Record<string, string>;
  serviceName: string;
  resourceAttributes: Record<string, string>;
  sampler: TraceSampler;
  /** The ratio of the `traceidratio` samplers, 0-1. */
  ratio: number;
}

/** The exporter's settings, or undefined when tracing is off: no endpoint, OTEL_TRACES_EXPORTER=none or OTEL_SDK_DISABLED. */
export function otlpSettings(variables: OtlpVariables, serviceVersion?: string): OtlpSettings | undefined {
  if (variables.OTEL_SDK_DISABLED || variables.OTEL_TRACES_EXPORTER === 'none') return undefined;
  const url = tracesUrl(variables);
  if (!url) return undefined;
  const resourceAttributes: Record<string, string> = {
    ...(serviceVersion ? { 'service.version': serviceVersion } : {}),
    ...keyValueList(variables.OTEL_RESOURCE_ATTRIBUTES ?? ''),
  };
  return {
    url,
    // A member of the traces' own list replaces the shared list's member of the same name.
    headers: { ...keyValueList(variables.OTEL_EXPORTER_OTLP_HEADERS ?? ''), ...keyValueList(variables.OTEL_EXPORTER_OTLP_TRACES_HEADERS ?? '') },
    // OTEL_SERVICE_NAME over OTEL_RESOURCE_ATTRIBUTES' service.name, as the specification orders them.
    serviceName: variables.OTEL_SERVICE_NAME ?? resourceAttributes['service.name'] ?? DEFAULT_SERVICE_NAME,
    resourceAttributes,
    sampler: variables.OTEL_TRACES_SAMPLER,
    ratio: variables.OTEL_TRACES_SAMPLER_ARG ?? 1,
  };
}

/**
 * The traces URL: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as given, else OTEL_EXPORTER_OTLP_ENDPOINT with
 * `v1/traces` added to its path (the specification's rule for the shared endpoint).
 */
export function tracesUrl(variables: Pick<OtlpVariables, 'OTEL_EXPORTER_OTLP_ENDPOINT' | 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'>): string | undefined {
  if (variables.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) return new URL(variables.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT).href;
  if (!variables.OTEL_EXPORTER_OTLP_ENDPOINT) return undefined;
  const base = new URL(variables.OTEL_EXPORTER_OTLP_ENDPOINT);
  base.pathname = `${base.pathname.replace(/\/+$/, '')}/v1/traces`;
  return base.href;
}

/** An HTTP header name (RFC 9110 token). */
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/**
 * A `name=value,name2=value2` list (OTEL_EXPORTER_OTLP_HEADERS, OTEL_RESOURCE_ATTRIBUTES: the W3C
 * baggage format, values percent-encoded). Throws naming the member by position, never showing a
 * value: these lists hold a collector's credentials.
 */
export function keyValueList(value: string): Record<string, string> {
  const entries: Record<string, string> = {};
  const members = value.split(',');
  members.forEach((member, index) => {
    if (member.trim() === '') return;
    const at = member.indexOf('=');
    const name = at < 0 ? '' : member.slice(0, at).trim();
    if (!TOKEN.test(name)) throw new Error(`member ${index + 1} of ${members.length} is not name=value`);
    let decoded: string;
    try {
      decoded = decodeURIComponent(member.slice(at + 1).trim());
    } catch {
      throw new Error(`member ${index + 1} ("${name}"): its value has a malformed percent-escape`);
    }
    if ([...decoded].some((char) => char < ' ' || char === '\x7f')) throw new Error(`member ${index + 1} ("${name}"): its value holds a control character`);
    entries[name] = decoded;
  });
  return entries;
}
