// @store-independent: reads the environment it is given and the text of src/, nothing else.
/**
 * OpenTelemetry's variables as toolsift reads them: a malformed endpoint, header list, protocol or
 * sampler stops the start naming the variable (never showing a header's value), and the exporter's
 * settings follow the specification's rules (the traces endpoint as given, the shared one with
 * /v1/traces; the traces' headers over the shared ones; OTEL_SERVICE_NAME first). Unset: tracing is
 * off, and a span passes its parent's context through unchanged.
 */
import { mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { otlpSettings } from '../../src/tracing/otlp-settings.js';
import { NO_TRACING } from '../../src/tracing/tracing.js';

/** The problem lines of the ConfigError that loading `env` throws. */
function problems(env: NodeJS.ProcessEnv): string[] {
  try {
    loadConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message.split('\n').filter((line) => line.startsWith('  '));
  }
  throw new Error(`expected ${JSON.stringify(env)} to be rejected`);
}

describe('OpenTelemetry configuration', () => {
  it.each([
    ['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', 'localhost:4318'],
    ['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', 'http//collector:4318/v1/traces'],
    ['OTEL_EXPORTER_OTLP_ENDPOINT', 'collector:4318'],
    ['OTEL_EXPORTER_OTLP_ENDPOINT', 'ftp://collector:4318'],
    ['OTEL_EXPORTER_OTLP_ENDPOINT', 'http://'],
  ])('rejects a malformed endpoint, %s=%s, naming the variable', (name, value) => {
    const lines = problems({ [name]: value });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(`${name}: expected the collector's http(s) URL`);
  });

  it('rejects a malformed header list naming the variable and the member, never its value', () => {
    for (const [name, value] of [
      ['OTEL_EXPORTER_OTLP_HEADERS', 'Bearer s3cr3t-token'],
      ['OTEL_EXPORTER_OTLP_TRACES_HEADERS', 'authorization=Bearer%zzs3cr3t-token'],
      ['OTEL_EXPORTER_OTLP_HEADERS', 'x-key=s3cr3t-token%0d%0ax-injected: 1'],
      ['OTEL_RESOURCE_ATTRIBUTES', 'deployment environment=s3cr3t-token'],
    ] as const) {
      const lines = problems({ [name]: value });
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(new RegExp(`^  ${name}: member 1`));
      expect(lines[0]).not.toContain('s3cr3t');
    }
  });

  it('reads a header list from a file (<NAME>_FILE), as the other secrets', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'toolsift-otel-')), 'headers');
    writeFileSync(file, 'authorization=Bearer%20from-file\n');
    const config = loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_EXPORTER_OTLP_HEADERS_FILE: file });
    expect(otlpSettings(config)?.headers).toEqual({ authorization: 'Bearer from-file' });
  });

  it('refuses gRPC (toolsift sends OTLP/HTTP), a sampler it does not have and a ratio outside 0-1', () => {
    expect(problems({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })[0]).toContain('not gRPC');
    expect(problems({ OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'grpc' })[0]).toContain('OTEL_EXPORTER_OTLP_TRACES_PROTOCOL');
    expect(loadConfig({ OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json' })).toBeDefined();
    expect(problems({ OTEL_TRACES_SAMPLER: 'jaeger_remote' })[0]).toContain('OTEL_TRACES_SAMPLER');
    expect(problems({ OTEL_TRACES_SAMPLER_ARG: '1.5' })[0]).toContain('OTEL_TRACES_SAMPLER_ARG');
    expect(problems({ OTEL_TRACES_EXPORTER: 'zipkin' })[0]).toContain('OTEL_TRACES_EXPORTER');
  });

  it('is off unless an endpoint is set, and off with OTEL_TRACES_EXPORTER=none or OTEL_SDK_DISABLED=true', () => {
    expect(otlpSettings(loadConfig({}))).toBeUndefined();
    expect(otlpSettings(loadConfig({ OTEL_SERVICE_NAME: 'x', OTEL_EXPORTER_OTLP_HEADERS: 'a=b' }))).toBeUndefined();
    expect(otlpSettings(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_TRACES_EXPORTER: 'none' }))).toBeUndefined();
    expect(otlpSettings(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SDK_DISABLED: 'true' }))).toBeUndefined();
  });

  it("takes the traces endpoint as given and adds v1/traces to the shared one's path", () => {
    const url = (env: NodeJS.ProcessEnv) => otlpSettings(loadConfig(env))?.url;
    expect(url({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toBe('http://collector:4318/v1/traces');
    expect(url({ OTEL_EXPORTER_OTLP_ENDPOINT: 'https://otel.example.com/ingest/' })).toBe('https://otel.example.com/ingest/v1/traces');
    expect(url({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://b:4318/custom' })).toBe('http://b:4318/custom');
  });

  it("merges the header lists (the traces' own wins per name) and orders the service names as the specification does", () => {
    const settings = otlpSettings(
      loadConfig({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
        OTEL_EXPORTER_OTLP_HEADERS: 'authorization=shared, x-tenant=ops',
        OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'authorization=Bearer%20traces',
        OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=prod,service.name=from-attributes',
      }),
      '1.2.3',
    );
    expect(settings).toMatchObject({
      headers: { authorization: 'Bearer traces', 'x-tenant': 'ops' },
      serviceName: 'from-attributes',
      resourceAttributes: { 'deployment.environment': 'prod', 'service.version': '1.2.3' },
      sampler: 'parentbased_always_on',
      ratio: 1,
    });
    expect(otlpSettings(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' }))?.serviceName).toBe('toolsift');
    expect(
      otlpSettings(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SERVICE_NAME: 'gw', OTEL_RESOURCE_ATTRIBUTES: 'service.name=x' }))
        ?.serviceName,
    ).toBe('gw');
  });

  it("without tracing, a span hands on its parent's context unchanged (what is forwarded stays what the caller sent)", () => {
    const parent = { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', tracestate: 'congo=t61rcWkgMzE' };
    const span = NO_TRACING.start('tools/call x', { kind: 'client', parent });
    expect(span.context).toBe(parent);
    span.end('tool_error');
    expect(NO_TRACING.start('GET', { kind: 'server' }).context).toBeUndefined();
  });

  it('loads the SDK only when configured: one module imports it, and only deps.ts imports that one, dynamically', () => {
    const src = fileURLToPath(new URL('../../src/', import.meta.url));
    const files = (dir: string): string[] =>
      readdirSync(dir).flatMap((name) => (statSync(join(dir, name)).isDirectory() ? files(join(dir, name)) : name.endsWith('.ts') ? [join(dir, name)] : []));
    const sources = files(src).map((file) => ({ file: relative(src, file), text: readFileSync(file, 'utf8') }));
    expect(sources.filter(({ text }) => /from '@opentelemetry\//.test(text)).map(({ file }) => file)).toEqual(['tracing/otlp.ts']);
    expect(
      sources.filter(({ text }) => /tracing\/otlp\.js'/.test(text)).map(({ file, text }) => [file, /import\('\.\/tracing\/otlp\.js'\)/.test(text)]),
    ).toEqual([['deps.ts', true]]);
  });
});
