/**
 * `npm run bench -- --stalls`: does one client's large write make everyone else wait? While a probe
 * asks `/healthz` and sends a remembered tool list to the selector every 25 ms, one big request
 * runs: the selector with 10,000 never-seen tools, then a PUT of 4,000 tools, then the same PUT
 * gzip-compressed (its Content-Length counts the compressed bytes). The probe's slowest
 * answers during each, and for 10 s after it answered (the selector writes after answering), are
 * the stall. Target: no probe waits more than 200 ms behind the write.
 */
import { gzipSync } from 'node:zlib';
import { percentile, sortedAscending } from './stats.js';

export interface StallOptions {
  baseUrl: string;
  headers: Record<string, string>;
  /** A selector body the service has seen (its tool list is remembered): a cheap turn. */
  rememberedBody: string;
  /** Tools (gateway shape) to rename into never-seen lists. */
  toolPool: Array<{ name: string; description?: string; definition?: unknown }>;
  seed: number;
}

export interface ProbeFigures {
  n: number;
  p50: number;
  p99: number;
  max: number;
}

export interface StallCase {
  name: string;
  /** How long the big request itself took. */
  requestMs: number;
  status: number;
  healthz: ProbeFigures;
  selector: ProbeFigures;
  /** Probes that got no answer (connection reset, non-2xx). */
  failures: string[];
}

const PROBE_EVERY_MS = 25;
/** How long probing goes on after the big request has answered. */
const AFTERMATH_MS = 10_000;

function renamed(pool: StallOptions['toolPool'], count: number, tag: string) {
  return Array.from({ length: count }, (_, index) => {
    const tool = pool[index % pool.length]!;
    return { ...tool, name: `${tool.name}_${tag}_${index}` };
  });
}

function figures(samples: number[]): ProbeFigures {
  const sorted = sortedAscending(samples);
  return { n: sorted.length, p50: percentile(sorted, 50), p99: percentile(sorted, 99), max: sorted.at(-1) ?? Number.NaN };
}

/** Probes `/healthz` and a remembered selector turn until `work` settles; each probe waits for its answer before the next. */
async function probeDuring(options: StallOptions, name: string, work: () => Promise<Response>): Promise<StallCase> {
  const healthz: number[] = [];
  const selector: number[] = [];
  const failures: string[] = [];
  let done = false;
  const probe = async (samples: number[], request: () => Promise<Response>) => {
    while (!done) {
      const sent = performance.now();
      try {
        const response = await request();
        await response.arrayBuffer();
        if (!response.ok) throw new Error(`probe answered ${response.status}`);
      } catch (error) {
        failures.push(`${name}: ${(error as Error).message} ${String((error as { cause?: unknown }).cause ?? '')}`);
      }
      samples.push(performance.now() - sent);
      await new Promise((resolve) => setTimeout(resolve, PROBE_EVERY_MS));
    }
  };
  const probes = Promise.all([
    probe(healthz, () => fetch(`${options.baseUrl}/healthz`)),
    probe(selector, () => fetch(`${options.baseUrl}/v1/tool-discovery/search`, { method: 'POST', headers: options.headers, body: options.rememberedBody })),
  ]);
  // Let the probes settle into their rhythm before the write starts.
  await new Promise((resolve) => setTimeout(resolve, 300));
  const started = performance.now();
  let status = 0;
  try {
    const response = await work();
    await response.arrayBuffer();
    status = response.status;
    // The selector stores never-seen tools after it answers, and embedding follows every write:
    // keep probing while that work runs.
    await new Promise((resolve) => setTimeout(resolve, AFTERMATH_MS));
  } finally {
    done = true;
    await probes;
  }
  return { name, requestMs: performance.now() - started, status, healthz: figures(healthz), selector: figures(selector), failures };
}

export async function runStallProbe(options: StallOptions): Promise<StallCase[]> {
  // The body's text is made before probing starts: JSON.stringify of 10,000 tools (4.3 MB) would
  // hold this process's own event loop, and so the probes' clocks, inside the window.
  const post = (path: string, method: string, body: unknown) => {
    const text = JSON.stringify(body);
    return () => fetch(`${options.baseUrl}${path}`, { method, headers: options.headers, body: text });
  };
  const gzipped = (path: string, body: unknown) => {
    const bytes = new Uint8Array(gzipSync(JSON.stringify(body)));
    return () => fetch(`${options.baseUrl}${path}`, { method: 'PUT', headers: { ...options.headers, 'content-encoding': 'gzip' }, body: bytes });
  };
  return [
    await probeDuring(
      options,
      'selector, 10,000 never-seen tools',
      post('/v1/tool-discovery/search', 'POST', { pattern: 'read a file', top_k: 5, tools: renamed(options.toolPool, 10_000, `s${options.seed}`) }),
    ),
    await probeDuring(options, 'PUT of 4,000 tools', post('/v1/catalogs/stalls', 'PUT', { tools: renamed(options.toolPool, 4_000, `p${options.seed}`) })),
    await probeDuring(
      options,
      'PUT of 4,000 tools, gzip',
      gzipped('/v1/catalogs/stalls-gzip', { tools: renamed(options.toolPool, 4_000, `g${options.seed}`) }),
    ),
  ];
}
