/**
 * Replay evaluation of learning from use (issue 72), through the service's own code: events are
 * written by `recordFeedback` (what `POST /v1/feedback` and the MCP correlation call) and searches
 * run through `searchCatalog` (what every stored catalog's ranking runs). Each corpus's queries are
 * split in `folds`; the other folds' queries are fed as feedback (each query -> its relevant tools,
 * from ten callers in turn), the held-out fold is ranked with and without learning, and the folds
 * rotate. Scenarios: `clean`; `noisy`, a fifth of the events pointing at a wrong tool (a random
 * non-relevant tool of that query's top 10 without learning); `flood`, the clean events plus one
 * caller sending ten times as many, all pointing at one tool, after random fed queries; `shown`,
 * the clean events each with what the agent was shown (that query's top 10 without learning), as
 * the MCP correlation and feedback quoting a search_id record them.
 */
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import * as catalogService from '../catalog/catalog-service.js';
import type { EmbedQueue } from '../jobs/embed-queue.js';
import { searchCatalog } from '../search/catalog-search.js';
import type { RankDeps } from '../search/hybrid-search.js';
import { forgetFeedback, recordFeedback, STRENGTH } from '../search/feedback.js';
import { LearnedCache, LEARNED_REFRESH_MS } from '../search/learned-cache.js';
import { DEFAULT_LEARNED_PARAMS, type LearnedParams } from '../ranking/learned.js';
import { loadQueries, readJsonl, type EvalQuery } from './run-eval.js';
import { meanMetrics, scoreQuery, type QueryMetrics } from './metrics.js';
import { seededRandom } from './seeded-random.js';

export type ReplayScenario = 'clean' | 'noisy' | 'flood' | 'shown';

export interface ReplayCell {
  all: { ndcg10: number; recall10: number; queries: number };
  /** Queries with a relevant tool that received feedback (the "fed"). */
  fed: { ndcg10: number; recall10: number; queries: number };
  /** Of those, the queries every relevant tool of which received feedback (a recurring task, whole). */
  fedInFull: { ndcg10: number; recall10: number; queries: number };
  unfed: { ndcg10: number; recall10: number; queries: number };
}

/** One held-out query's ranking, with and without learning (--out). */
export interface ReplayRow {
  scenario: ReplayScenario;
  setting: string;
  fold: number;
  id: string;
  query: string;
  relevant: string[];
  fed: 'none' | 'part' | 'full';
  off: string[];
  on: string[];
  ndcg10Off: number;
  ndcg10On: number;
}

export interface ReplayReport {
  dataset: string;
  tools: number;
  off: ReplayCell;
  /** Per scenario, per learned weight. */
  on: Record<string, Record<string, ReplayCell>>;
  /**
   * flood: held-out queries whose top 3 the flood changed unearned: a tool that is not relevant
   * entered it, one neither the ranking without learning nor the clean events' (when the clean
   * scenario ran before) had there (the flooding caller's tool, or another it lifted: a twin that
   * took its place), of all.
   */
  floodMoved?: Record<string, { moved: number; queries: number; tool: string; against: 'clean' | 'off'; entered: string[] }>;
  events: Record<string, number>;
}

const CALLERS = 10;
const NOISE = 0.2;
const FLOOD_FACTOR = 10;

type Fed = ReplayRow['fed'];

function cell(perQuery: { metrics: QueryMetrics; fed: Fed }[]): ReplayCell {
  const summary = (rows: { metrics: QueryMetrics }[]) => {
    const mean = meanMetrics(rows.map((row) => row.metrics));
    return { ndcg10: rows.length ? mean.ndcg10 : 0, recall10: rows.length ? mean.recall10 : 0, queries: rows.length };
  };
  return {
    all: summary(perQuery),
    fed: summary(perQuery.filter((row) => row.fed !== 'none')),
    fedInFull: summary(perQuery.filter((row) => row.fed === 'full')),
    unfed: summary(perQuery.filter((row) => row.fed === 'none')),
  };
}

export async function runReplay(
  deps: { catalog: catalogService.CatalogDeps; search: RankDeps; queue: EmbedQueue | null },
  options: {
    dataset: string;
    queries?: string;
    folds: number;
    scenarios: ReplayScenario[];
    /** Learned settings to rank the held-out fold with (the same events for each), by label. */
    settings: Map<string, Partial<LearnedParams>>;
    seed: number;
    onProgress?: (message: string) => void;
    /** Each held-out query's rankings, as they are made. */
    onRow?: (row: ReplayRow) => void;
  },
): Promise<ReplayReport> {
  const tools = readJsonl(join(options.dataset, 'catalog.jsonl'));
  const queries = loadQueries(options.queries ?? join(options.dataset, 'queries.dev.jsonl'));
  const ref = { tenant: 'replay', name: `replay-${randomBytes(4).toString('hex')}` };
  const learned = new LearnedCache({ retentionSeconds: 3650 * 86_400, halfLifeSeconds: DEFAULT_LEARNED_PARAMS.halfLifeSeconds, refreshMs: LEARNED_REFRESH_MS });
  const withLearning: RankDeps = { ...deps.search, learned };
  const withoutLearning: RankDeps = { ...deps.search, learned: undefined };
  const random = seededRandom(options.seed);
  // Folds: a seeded shuffle, dealt round robin.
  const order = queries.map((query, index) => ({ query, key: random(), index })).sort((a, b) => a.key - b.key);
  const foldOf = new Map(order.map(({ query }, position) => [query.id, position % options.folds]));
  await catalogService.replaceCatalog(deps.catalog, ref, tools);
  try {
    options.onProgress?.(`ingested ${tools.length} tools; embedding`);
    await deps.queue?.whenIdle();
    const search = (rank: RankDeps, query: EvalQuery) => searchCatalog(rank, ref, { query: query.query, topK: 50, mode: 'hybrid' });
    // Without learning: the reference, and each query's top 10 (the noisy events' wrong tools).
    const offRanked = new Map<string, string[]>();
    for (const query of queries)
      offRanked.set(
        query.id,
        (await search(withoutLearning, query)).tools.map((tool) => tool.id),
      );
    const names = tools.map((tool) => String((tool as { name?: unknown }).name ?? ''));
    const floodTool = names[Math.floor(random() * names.length)]!;
    const fedTools = (fold: number) => new Set(queries.filter((query) => foldOf.get(query.id) !== fold).flatMap((query) => query.relevant));
    const fedOf = new Map<number, Set<string>>();
    const isFed = (query: EvalQuery): Fed => {
      const fold = foldOf.get(query.id)!;
      if (!fedOf.has(fold)) fedOf.set(fold, fedTools(fold));
      const fed = fedOf.get(fold)!;
      const count = query.relevant.filter((name) => fed.has(name)).length;
      return count === 0 ? 'none' : count === query.relevant.length ? 'full' : 'part';
    };
    const judge = (query: EvalQuery, ranked: string[]) => scoreQuery(ranked, { relevant: query.relevant, relevantGroups: query.relevant_groups });
    const report: ReplayReport = {
      dataset: options.dataset,
      tools: tools.length,
      off: cell(queries.map((query) => ({ metrics: judge(query, offRanked.get(query.id)!), fed: isFed(query) }))),
      on: {},
      events: {},
    };
    // The clean events' top 3 per setting and query, what the flood's is judged against.
    const cleanTop = new Map<string, string[]>();
    for (const scenario of options.scenarios) {
      const perWeight = new Map<string, { metrics: QueryMetrics; fed: Fed }[]>([...options.settings.keys()].map((label) => [label, []]));
      const moved = new Map<string, number>([...options.settings.keys()].map((label) => [label, 0]));
      const entered = new Map<string, Set<string>>([...options.settings.keys()].map((label) => [label, new Set()]));
      let events = 0;
      for (let fold = 0; fold < options.folds; fold++) {
        await forgetFeedback(withLearning, ref);
        const training = queries.filter((query) => foldOf.get(query.id) !== fold);
        const record = async (query: string, used: string[], caller: string, shown?: string[]) => {
          await recordFeedback(withLearning, ref, { query, used, caller, strength: STRENGTH.used, ...(shown ? { shown } : {}) });
          events += used.length;
        };
        let honest = 0;
        for (const [index, query] of training.entries()) {
          const used = query.relevant.map((name) => {
            if (scenario !== 'noisy' || random() >= NOISE) return name;
            const wrong = offRanked
              .get(query.id)!
              .slice(0, 10)
              .filter((candidate) => !query.relevant.includes(candidate));
            return wrong.length ? wrong[Math.floor(random() * wrong.length)]! : name;
          });
          await record(query.query, used, `caller-${index % CALLERS}`, scenario === 'shown' ? offRanked.get(query.id)!.slice(0, 10) : undefined);
          honest += used.length;
        }
        if (scenario === 'flood') {
          for (let sent = 0; sent < FLOOD_FACTOR * honest; sent++) {
            await record(training[Math.floor(random() * training.length)]!.query, [floodTool], 'flooder');
          }
        }
        for (const query of queries.filter((entry) => foldOf.get(entry.id) === fold)) {
          for (const [weight, setting] of options.settings) {
            Object.assign(learned.params, DEFAULT_LEARNED_PARAMS, { halfLifeSeconds: learned.params.halfLifeSeconds }, setting);
            const ranked = (await search(withLearning, query)).tools.map((tool) => tool.id);
            const metrics = judge(query, ranked);
            perWeight.get(weight)!.push({ metrics, fed: isFed(query) });
            if (options.onRow) {
              const off = offRanked.get(query.id)!;
              options.onRow({
                scenario,
                setting: weight,
                fold,
                id: query.id,
                query: query.query,
                relevant: query.relevant,
                fed: isFed(query),
                off,
                on: ranked,
                ndcg10Off: judge(query, off).ndcg10,
                ndcg10On: metrics.ndcg10,
              });
            }
            if (scenario === 'clean') cleanTop.set(`${weight}\u0000${query.id}`, ranked.slice(0, 3));
            if (scenario === 'flood') {
              const earned = new Set([...offRanked.get(query.id)!.slice(0, 3), ...(cleanTop.get(`${weight}\u0000${query.id}`) ?? []), ...query.relevant]);
              const unearned = ranked.slice(0, 3).filter((tool) => !earned.has(tool));
              if (unearned.length) {
                moved.set(weight, moved.get(weight)! + 1);
                for (const tool of unearned) entered.get(weight)!.add(tool);
              }
            }
          }
        }
        options.onProgress?.(`${scenario}: fold ${fold + 1} of ${options.folds}`);
      }
      report.on[scenario] = Object.fromEntries([...perWeight].map(([label, rows]) => [label, cell(rows)]));
      report.events[scenario] = events;
      if (scenario === 'flood') {
        const against = options.scenarios.indexOf('clean') >= 0 && options.scenarios.indexOf('clean') < options.scenarios.indexOf('flood') ? 'clean' : 'off';
        report.floodMoved = Object.fromEntries(
          [...moved].map(([label, count]) => [label, { moved: count, queries: queries.length, tool: floodTool, against, entered: [...entered.get(label)!] }]),
        );
      }
    }
    await forgetFeedback(withLearning, ref);
    return report;
  } finally {
    await catalogService.deleteCatalog(deps.catalog, ref);
  }
}
