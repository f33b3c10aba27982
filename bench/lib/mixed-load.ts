/**
 * `npm run bench -- --mix`: a gateway's steady list and everything else at once. Four closed-loop
 * clients for --duration s, each request drawn at random:
 *   60% the selector with one remembered 258-tool list and a never-seen pattern (the gateway's turn),
 *   25% the selector with a never-seen 100-tool list (new tools: stored, then embedded),
 *   15% a catalog search.
 * The never-seen lists keep the model threads busy with documents while turns ask for query
 * vectors; the question is whether the remembered list's turns keep their latency. Targets: its
 * p99 ≤ 150 ms, zero errors, never an empty answer. RSS is sampled once a second from /proc.
 */
import { readFileSync } from 'node:fs';
import { percentile, sortedAscending } from './stats.js';
import { seededRandom } from '../../test/helpers/seeded-random.js';

export type MixKind = 'remembered_list' | 'new_list' | 'catalog_search';

export interface MixOptions {
  baseUrl: string;
  headers: Record<string, string>;
  pid: number;
  durationSeconds: number;
  connections: number;
  seed: number;
  /** The remembered list's body without its pattern: `{"pattern":<p>,"top_k":5,"tools":<this>}`. */
  rememberedToolsJson: string;
  /** Tools to rename into never-seen lists (gateway shape). */
  toolPool: Array<{ name: string; description?: string; definition?: unknown }>;
  catalog: string;
  nextPattern: () => string;
}

export interface KindResult {
  n: number;
  errors: number;
  empty: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

export interface MixResult {
  seconds: number;
  kinds: Record<MixKind, KindResult>;
  /** Per minute (or per run when shorter): the remembered list's p50 and p99. */
  perMinute: Array<{ minute: number; n: number; p50: number; p99: number }>;
  rssMb: { start: number; end: number; max: number };
  firstErrors: string[];
}

const SHARES: Array<[MixKind, number]> = [
  ['remembered_list', 0.6],
  ['new_list', 0.25],
  ['catalog_search', 0.15],
];
const NEW_LIST_SIZE = 100;

export function rssMegabytes(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? Number.NaN);
  return kb / 1024;
}

export async function runMixedLoad(options: MixOptions): Promise<MixResult> {
  const random = seededRandom(options.seed);
  let listCounter = 0;
  const samples = new Map<MixKind, Array<{ at: number; ms: number }>>(SHARES.map(([kind]) => [kind, []]));
  const failures = new Map<MixKind, { errors: number; empty: number }>(SHARES.map(([kind]) => [kind, { errors: 0, empty: 0 }]));
  const firstErrors: string[] = [];
  const rss = { start: rssMegabytes(options.pid), end: 0, max: 0 };
  rss.max = rss.start;
  const sampler = setInterval(() => {
    try {
      rss.max = Math.max(rss.max, rssMegabytes(options.pid));
    } catch {
      // the process is gone: the load's errors say so
    }
  }, 1000);

  const pick = (): MixKind => {
    let roll = random();
    for (const [kind, share] of SHARES) {
      if (roll < share) return kind;
      roll -= share;
    }
    return 'remembered_list';
  };
  const request = (kind: MixKind): { path: string; body: string; names: (body: unknown) => unknown[] } => {
    const pattern = options.nextPattern();
    if (kind === 'remembered_list') {
      return {
        path: '/v1/tool-discovery/search',
        body: `{"pattern":${JSON.stringify(pattern)},"top_k":5,"tools":${options.rememberedToolsJson}}`,
        names: (body) => (body as { selected_names: unknown[] }).selected_names,
      };
    }
    if (kind === 'new_list') {
      // A list no request sent before: every tool is renamed, so every hash is new.
      listCounter += 1;
      const start = Math.floor(random() * Math.max(1, options.toolPool.length - NEW_LIST_SIZE));
      const tools = options.toolPool.slice(start, start + NEW_LIST_SIZE).map((tool, index) => ({
        ...tool,
        name: `${tool.name}_m${options.seed}_${listCounter}_${index}`,
      }));
      return {
        path: '/v1/tool-discovery/search',
        body: JSON.stringify({ pattern, top_k: 5, tools }),
        names: (body) => (body as { selected_names: unknown[] }).selected_names,
      };
    }
    return {
      path: `/v1/catalogs/${options.catalog}/search`,
      body: JSON.stringify({ query: pattern, top_k: 5 }),
      names: (body) => (body as { results: unknown[] }).results,
    };
  };

  const started = performance.now();
  const deadline = started + options.durationSeconds * 1000;
  const client = async () => {
    while (performance.now() < deadline) {
      const kind = pick();
      const { path, body, names } = request(kind);
      const sent = performance.now();
      try {
        const response = await fetch(`${options.baseUrl}${path}`, { method: 'POST', headers: options.headers, body });
        const text = await response.text();
        const ms = performance.now() - sent;
        if (!response.ok) throw new Error(`${kind}: ${response.status} ${text.slice(0, 200)}`);
        samples.get(kind)!.push({ at: sent - started, ms });
        if (names(JSON.parse(text)).length === 0) failures.get(kind)!.empty += 1;
      } catch (error) {
        failures.get(kind)!.errors += 1;
        if (firstErrors.length < 5) firstErrors.push((error as Error).message);
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: options.connections }, client));
  } finally {
    clearInterval(sampler);
  }
  rss.end = rssMegabytes(options.pid);
  rss.max = Math.max(rss.max, rss.end);

  const kinds = Object.fromEntries(
    SHARES.map(([kind]) => {
      const sorted = sortedAscending(samples.get(kind)!.map(({ ms }) => ms));
      const { errors, empty } = failures.get(kind)!;
      return [
        kind,
        {
          n: sorted.length,
          errors,
          empty,
          p50: percentile(sorted, 50),
          p90: percentile(sorted, 90),
          p99: percentile(sorted, 99),
          max: sorted.at(-1) ?? Number.NaN,
        },
      ];
    }),
  ) as Record<MixKind, KindResult>;
  const window = Math.min(60_000, options.durationSeconds * 1000);
  const perMinute: MixResult['perMinute'] = [];
  const remembered = samples.get('remembered_list')!;
  for (let from = 0; from < options.durationSeconds * 1000; from += window) {
    const sorted = sortedAscending(remembered.filter(({ at }) => at >= from && at < from + window).map(({ ms }) => ms));
    if (sorted.length > 0) perMinute.push({ minute: from / 60_000, n: sorted.length, p50: percentile(sorted, 50), p99: percentile(sorted, 99) });
  }
  return { seconds: (performance.now() - started) / 1000, kinds, perMinute, rssMb: rss, firstErrors };
}
