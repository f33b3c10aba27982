/**
 * Fusion settings judged leave-one-corpus-out (issue 24), rerunnable:
 *
 *   npx tsx bench/research/fusion-loco.ts [--sets bfcl,livemcpbench,sealtools,toolbench_stable] [--lists <cache.json>] [--settings]
 *                                [--root <folder of datasets, default ../shared/eval>] [--gaps]
 *
 * With `--root`, sets may include the small catalogs of bench/research/small-catalogs.ts (`<corpus>_schema`,
 * `<corpus>_noschema`); a corpus and the sets drawn from it are held out together.
 *
 * First it computes, per corpus and query (clean, and with the eval's typos at 0.2, seed 1), the
 * lists the service fuses: BM25 (exact terms, and with typo matching), the dense list, the two
 * server lists, the signals an adaptive rule may read, and dense lists read from BM25's head
 * (pseudo-relevance feedback). The same code as the service (`documentTerms`, `Bm25Index`,
 * `embeddingText`, USE Lite, `expandTerms`, `serverDocuments`); no exact-name step. `--lists` keeps
 * them in a file, so later runs only re-fuse.
 *
 * Then each family of fusion rules is tried at every setting, three times: with typo matching as
 * shipped (a corrected word does not count as known), without typo matching, and with typo
 * matching where a corrected word counts as known. For each corpus, a setting is chosen
 * on the other corpora (among those keeping hybrid within 0.005 of its better input on each, nDCG@10
 * and R@10, the best mean quality) and scored on the held-out one: that is the
 * leave-one-corpus-out estimate. A family ships only if that estimate keeps hybrid at or above
 * both lists on every corpus.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { documentTerms, embeddingText, queryTerms } from '../../src/ranking/search-text.js';
import { normalizeTools } from '../../src/catalog/tool-formats.js';
import { createUseLiteEmbedder } from '../../src/embed/use-lite.js';
import { meanMetrics, scoreQuery, type QueryMetrics } from '../../src/eval/metrics.js';
import { readJsonl } from '../../src/eval/run-eval.js';
import { distinctTerms } from '../../src/ranking/bm25.js';
import { Bm25Index } from '../../src/ranking/bm25-index.js';
import { denseQueryText, expandTerms, VocabularyIndex } from '../../src/ranking/fuzzy-terms.js';
import { bm25Peak, denseGap, denseWeight, fuseRrf, RRF_DEPTH, type Ranked } from '../../src/ranking/rrf.js';
import { addServerVotes, serverCentroids, serverDocuments, SERVER_BM25_WEIGHT, SERVER_DEPTH, SERVER_VECTOR_WEIGHT } from '../../src/ranking/servers.js';
import { rankByCosine } from '../../src/ranking/vector-scan.js';
import { chooseSetting, evalQueries, source } from './loco.js';

const { values } = parseArgs({
  options: {
    sets: { type: 'string', default: 'bfcl,livemcpbench,sealtools,toolbench_stable' },
    lists: { type: 'string' },
    settings: { type: 'boolean', default: false },
    root: { type: 'string' },
    gaps: { type: 'boolean', default: false },
  },
});
const EVAL_DIR = values.root ? `${values.root.replace(/\/$/, '')}/` : fileURLToPath(new URL('../../../shared/eval/', import.meta.url));
const sets = values.sets!.split(',').map((set) => set.trim());

interface QueryLists {
  relevant: string[];
  groups?: string[][];
  bm25: Ranked;
  fuzzy: Ranked;
  dense: Ranked;
  serverBm25: Ranked;
  serverFuzzy: Ranked;
  serverDense: Ranked;
  /** Share of the query's IDF mass (unknown words at the largest IDF) held by BM25's top tool. */
  coverage: number;
  /** Share of the query's distinct terms the corpus holds. */
  known: number;
  /** The query's IDF mass: the sum of its distinct terms' IDF (unknown words at the largest). */
  idfMass: number;
  /** `known`, counting the words typo matching corrected (ranking/fuzzy-terms.ts expandTerms). */
  knownCorrected: number;
  /** The query's distinct BM25 terms (set after loading, so caches written before it still serve). */
  termCount: number;
  /**
   * Dense lists read from BM25's head (pseudo-relevance feedback, 2026-12-03): `c<m>` ranks tools by
   * cosine to the unit mean vector of the typo-matched BM25 list's top m (those m left out), `r<m>_<beta>`
   * by cosine to the query's vector plus beta times that mean. Absent from caches written before.
   */
  head?: Record<string, Ranked>;
  /**
   * For query-aspect diversification (2026-12-04; set after loading, from the corpus): the query's
   * aspects (its BM25 terms, typo matches included) with their weights (IDF x query weight), and per
   * tool of any list, which aspects it holds.
   */
  aspects?: { weights: number[]; holds: Record<string, number[]> };
}
interface SetLists {
  members: Record<string, string[]>;
  clean: QueryLists[];
  typos: QueryLists[];
}

const HEAD_SIZES = [1, 3, 5];
const HEAD_BETAS = [0.5, 1];
const unit = (v: Float64Array) => {
  const norm = Math.hypot(...v) || 1;
  return v.map((x) => x / norm);
};

/** The `head` lists of QueryLists for one query. */
function headLists(lexical: Ranked, query: ArrayLike<number>, vectorOf: ReadonlyMap<string, Float32Array>): Record<string, Ranked> {
  const out: Record<string, Ranked> = {};
  for (const m of HEAD_SIZES) {
    const head = lexical.slice(0, m).map(([id]) => id);
    const mean = new Float64Array(query.length);
    for (const id of head) vectorOf.get(id)!.forEach((x, d) => (mean[d]! += x));
    const centre = unit(mean);
    out[`c${m}`] = head.length
      ? rankByCosine(centre, vectorOf, RRF_DEPTH + m)
          .filter(([id]) => !head.includes(id))
          .slice(0, RRF_DEPTH)
      : [];
    for (const beta of HEAD_BETAS) out[`r${m}_${beta}`] = rankByCosine(unit(Float64Array.from(query, (x, d) => x + beta * centre[d]!)), vectorOf, RRF_DEPTH);
  }
  return out;
}

async function computeLists(): Promise<Record<string, SetLists>> {
  const embedder = await createUseLiteEmbedder();
  const out: Record<string, SetLists> = {};
  try {
    for (const set of sets) {
      const started = performance.now();
      const { tools } = normalizeTools(readJsonl(`${EVAL_DIR}${set}/catalog.jsonl`));
      const documents = tools.map((tool) => ({ id: tool.name, ...documentTerms(tool) }));
      const index = new Bm25Index(documents);
      const frequencies = new Map<string, number>();
      for (const doc of documents) for (const term of doc.termFreqs.keys()) frequencies.set(term, (frequencies.get(term) ?? 0) + 1);
      const vocabulary = VocabularyIndex.of(frequencies);
      const vectors = await embedder.embedDocuments(tools.map(embeddingText));
      const vectorOf = new Map(tools.map((tool, i) => [tool.name, Float32Array.from(vectors[i]!)]));
      const servers = serverDocuments(tools.map((tool, i) => ({ ...documents[i]!, server: tool.server })));
      const serverIndex = new Bm25Index(servers.documents);
      const centroids = serverCentroids(servers.members, vectorOf);
      const byId = new Map(documents.map((doc) => [doc.id, doc]));
      const { queries, texts: variants } = evalQueries(EVAL_DIR, set);
      const lists: SetLists = { members: Object.fromEntries(servers.members), clean: [], typos: [] };
      for (const variant of ['clean', 'typos'] as const) {
        const texts = variants[variant];
        for (const [i, query] of queries.entries()) {
          const terms = distinctTerms(queryTerms(texts[i]!));
          const expanded = expandTerms(terms, vocabulary);
          const weights = expanded.weights;
          const bm25 = index.search(terms, RRF_DEPTH);
          const vector = await embedder.embedQuery(denseQueryText(texts[i]!, expanded)); // as rankCorpus embeds it
          const idfs = terms.map((term) => index.idf(term));
          const total = idfs.reduce((sum, x) => sum + x, 0);
          const top = bm25[0] ? byId.get(bm25[0][0])! : undefined;
          const held = top ? terms.reduce((sum, term, t) => sum + (top.termFreqs.has(term) ? idfs[t]! : 0), 0) : 0;
          const fuzzy = index.searchWeighted(weights, RRF_DEPTH);
          lists[variant].push({
            head: headLists(fuzzy, vector, vectorOf),
            relevant: query.relevant,
            ...(query.relevant_groups ? { groups: query.relevant_groups } : {}),
            bm25,
            fuzzy,
            dense: rankByCosine(vector, vectorOf, RRF_DEPTH),
            serverBm25: serverIndex.search(terms, 10),
            serverFuzzy: serverIndex.searchWeighted(weights, 10),
            serverDense: rankByCosine(vector, centroids, 10),
            coverage: total > 0 ? held / total : 0,
            idfMass: total,
            knownCorrected: expanded.known + expanded.corrected,
            termCount: terms.length,
            known: terms.length ? terms.filter((term) => frequencies.has(term)).length / terms.length : 1,
          });
        }
      }
      out[set] = lists;
      console.error(`[lists] ${set}: ${tools.length} tools, ${queries.length} queries (${((performance.now() - started) / 1000).toFixed(0)} s)`);
    }
  } finally {
    await embedder.close();
  }
  return out;
}

const all: Record<string, SetLists> = values.lists && existsSync(values.lists) ? JSON.parse(readFileSync(values.lists, 'utf8')) : await computeLists();
if (values.lists && !existsSync(values.lists)) writeFileSync(values.lists, JSON.stringify(all));
for (const set of sets) {
  const { texts } = evalQueries(EVAL_DIR, set);
  const { tools } = normalizeTools(readJsonl(`${EVAL_DIR}${set}/catalog.jsonl`));
  const documents = new Map(tools.map((tool) => [tool.name, documentTerms(tool)]));
  const index = new Bm25Index([...documents].map(([id, doc]) => ({ id, ...doc })));
  const frequencies = new Map<string, number>();
  for (const doc of documents.values()) for (const term of doc.termFreqs.keys()) frequencies.set(term, (frequencies.get(term) ?? 0) + 1);
  const vocabulary = VocabularyIndex.of(frequencies);
  for (const variant of ['clean', 'typos'] as const) {
    all[set]![variant].forEach((q, i) => {
      const terms = distinctTerms(queryTerms(texts[variant][i]!));
      q.termCount = terms.length;
      const weighted = [...expandTerms(terms, vocabulary).weights].filter(([term]) => frequencies.has(term));
      const holds: Record<string, number[]> = {};
      for (const list of [q.bm25, q.fuzzy, q.dense]) {
        for (const [id] of list) {
          const doc = documents.get(id);
          if (doc && !holds[id]) holds[id] = weighted.flatMap(([term], a) => (doc.termFreqs.has(term) ? [a] : []));
        }
      }
      q.aspects = { weights: weighted.map(([term, weight]) => index.idf(term) * weight), holds };
    });
  }
}

if (values.gaps) {
  // The dense gap and two scale-free forms of it, medians over each set's clean queries (docs/ranking.md).
  const median = (xs: number[]) => xs.slice().sort((a, b) => a - b)[xs.length >> 1]!;
  for (const set of sets) {
    const rows = all[set]!.clean.filter((q) => q.dense.length > 1).map((q) => {
      const scores = q.dense.map(([, score]) => score);
      const mean = scores.reduce((sum, x) => sum + x, 0) / scores.length;
      const sd = Math.sqrt(scores.reduce((sum, x) => sum + (x - mean) ** 2, 0) / scores.length);
      const gap = denseGap(q.dense);
      return { gap, span: gap / (scores[0]! - scores.at(-1)!), sd: gap / sd };
    });
    console.log(
      `${set.padEnd(26)} gap ${median(rows.map((r) => r.gap)).toFixed(3)}  gap / span ${median(rows.map((r) => r.span)).toFixed(3)}  gap / sd ${median(rows.map((r) => r.sd)).toFixed(2)}`,
    );
  }
  process.exit(0);
}

/** What a rule sees of one query, and returns: the ranking. */
type Rule = (q: QueryLists, members: ReadonlyMap<string, readonly string[]>, typoMatching: boolean) => string[];

/** Weighted RRF of the tool lists, then server votes as the service adds them. */
function fused(
  q: QueryLists,
  members: ReadonlyMap<string, readonly string[]>,
  typoMatching: boolean,
  weights: { bm25: number; dense: number; servers?: number; fixedServers?: boolean; denseList?: Ranked; extra?: { ranked: Ranked; weight: number } },
): string[] {
  return fusedScores(q, members, typoMatching, weights).map(([id]) => id);
}

function fusedScores(
  q: QueryLists,
  members: ReadonlyMap<string, readonly string[]>,
  typoMatching: boolean,
  weights: { bm25: number; dense: number; servers?: number; fixedServers?: boolean; denseList?: Ranked; extra?: { ranked: Ranked; weight: number } },
): Ranked {
  const lexical = typoMatching ? q.fuzzy : q.bm25;
  const tools = fuseRrf([
    { ranked: lexical, weight: weights.bm25, scaleByScore: true },
    { ranked: weights.denseList ?? q.dense, weight: weights.dense, scaleByScore: false },
    ...(weights.extra ? [{ ...weights.extra, scaleByScore: false }] : []),
  ]);
  const s = weights.servers ?? 1;
  const lists = { bm25: typoMatching ? q.serverFuzzy : q.serverBm25, vector: q.serverDense, members };
  const follow = weights.fixedServers ? { bm25: 1, dense: 0.4 } : weights;
  return addServerVotes(tools, lists, {
    bm25Weight: SERVER_BM25_WEIGHT * s * follow.bm25,
    vectorWeight: SERVER_VECTOR_WEIGHT * s * (follow.dense / 0.4),
    depth: SERVER_DEPTH,
    k: 60,
  }).fused;
}

/**
 * Query-aspect diversification of a fused ranking's top n (xQuAD-like, greedy): each next place
 * goes to the tool maximising its fused score over the top one's plus lambda times the weight of
 * the query's aspects it holds that the tools placed so far leave uncovered (each placed tool
 * holding an aspect keeps (1 - gamma) of its weight), over the query's whole aspect weight.
 */
function diversified(ranked: Ranked, q: QueryLists, n: number, lambda: number, gamma: number): string[] {
  const ids = ranked.map(([id]) => id);
  if (lambda === 0 || !q.aspects || ranked.length < 2) return ids;
  const total = q.aspects.weights.reduce((sum, w) => sum + w, 0);
  if (total <= 0) return ids;
  const left = q.aspects.weights.slice();
  const top = ranked[0]![1] || 1;
  const pool = ranked.slice(0, n).map(([id, score]) => ({ id, rel: score / top, holds: q.aspects!.holds[id] ?? [] }));
  const out: string[] = [];
  while (pool.length > 0) {
    let best = 0;
    let bestValue = -Infinity;
    pool.forEach((tool, i) => {
      const value = tool.rel + (lambda * tool.holds.reduce((sum, a) => sum + left[a]!, 0)) / total;
      if (value > bestValue) (best = i), (bestValue = value);
    });
    const [picked] = pool.splice(best, 1);
    out.push(picked!.id);
    for (const a of picked!.holds) left[a]! *= 1 - gamma;
  }
  return [...out, ...ids.slice(n)];
}

const names = (ranked: Ranked) => ranked.map(([id]) => id);
const single = {
  bm25: ((q, _m, typo) => names(typo ? q.fuzzy : q.bm25)) as Rule,
  dense: ((q) => names(q.dense)) as Rule,
};
const clamp = (x: number, lo: number, hi: number) => Math.min(hi, Math.max(lo, x));

/** BM25's top score over the query's IDF mass: about the share of the query its best tool holds, from the list alone. */
const strength = (q: QueryLists, typoMatching: boolean) => {
  const top = (typoMatching ? q.fuzzy : q.bm25)[0]?.[1] ?? 0;
  return q.idfMass > 0 ? Math.min(1, top / q.idfMass) : 0;
};

/** The share of the query the corpus knows; with typo matching, corrected words count as known. */
/** How a word typo matching corrected counts toward `known`: 0 (unknown), FUZZY_WEIGHT, or 1. */
let correctedCounts = 1;
const known = (q: QueryLists, typoMatching: boolean) => (typoMatching ? q.known + correctedCounts * (q.knownCorrected - q.known) : q.known);

/** BM25's top score over its 10th, as denseWeight reads it. */
const peak = (q: QueryLists, typoMatching: boolean) => bm25Peak(typoMatching ? q.fuzzy : q.bm25);

/** denseWeight before it read the dense gap (2026-11-27): an empty dense list has no gap. */
const withoutGap = (q: QueryLists, typoMatching: boolean) => denseWeight(known(q, typoMatching), typoMatching ? q.fuzzy : q.bm25, []);

const shipped = (q: QueryLists, typoMatching: boolean) => denseWeight(known(q, typoMatching), typoMatching ? q.fuzzy : q.bm25, q.dense);

const families: { label: string; settings: [string, Rule][] }[] = [
  { label: 'before: dense weight 0.4 for every query', settings: [['w 0.4', (q, m, t) => fused(q, m, t, { bm25: 1, dense: 0.4, fixedServers: true })]] },
  {
    label: 'before the dense gap (2026-11-27): denseWeight without it',
    settings: [['no gap', (q, m, t) => fused(q, m, t, { bm25: 1, dense: withoutGap(q, t), fixedServers: true })]],
  },
  {
    label: 'shipped: denseWeight (src/ranking/rrf.ts)',
    settings: [['shipped', (q, m, t) => fused(q, m, t, { bm25: 1, dense: shipped(q, t), fixedServers: true })]],
  },
  {
    label: 'constant dense weight w',
    settings: [0.1, 0.2, 0.3, 0.4, 0.5, 0.7, 1].map((w): [string, Rule] => [`w ${w}`, (q, m, t) => fused(q, m, t, { bm25: 1, dense: w, fixedServers: true })]),
  },
  {
    label: "dense weight w0 + a (1 - coverage), coverage = share of the query's IDF its best BM25 tool holds",
    settings: [0.1, 0.2, 0.3, 0.4].flatMap((w0) =>
      [0.2, 0.4, 0.8, 1.6].map((a): [string, Rule] => [
        `w0 ${w0}, a ${a}`,
        (q, m, t) => fused(q, m, t, { bm25: 1, dense: w0 + a * (1 - q.coverage), fixedServers: true }),
      ]),
    ),
  },
  {
    label: 'BM25 weight coverage^p, dense weight w',
    settings: [0.2, 0.3, 0.4].flatMap((w) =>
      [0.5, 1, 2].map((p): [string, Rule] => [
        `w ${w}, p ${p}`,
        (q, m, t) => fused(q, m, t, { bm25: clamp(q.coverage, 0.05, 1) ** p, dense: w, fixedServers: true }),
      ]),
    ),
  },
  {
    label: "dense weight w0 + a (1 - strength), strength = min(1, BM25 top score / the query's IDF mass)",
    settings: [0.1, 0.2, 0.3, 0.4].flatMap((w0) =>
      [0.2, 0.4, 0.8, 1.6].map((a): [string, Rule] => [
        `w0 ${w0}, a ${a}`,
        (q, m, t) => fused(q, m, t, { bm25: 1, dense: w0 + a * (1 - strength(q, t)), fixedServers: true }),
      ]),
    ),
  },
  {
    label: 'dense weight w0 + a (1 - known)^p, known = share of the query the corpus holds',
    settings: [0, 0.1, 0.2].flatMap((w0) =>
      [0.5, 1, 1.5, 2, 3].flatMap((a) =>
        [0.5, 1, 2].map((p): [string, Rule] => [
          `w0 ${w0}, a ${a}, p ${p}`,
          (q, m, t) => fused(q, m, t, { bm25: 1, dense: w0 + a * (1 - known(q, t)) ** p, fixedServers: true }),
        ]),
      ),
    ),
  },
  {
    label: "the 2026-11-27 family: dense weight min(2, w0 + a (1 - known) (2.5 / peak)^r), peak = BM25's top score over its 10th",
    settings: [0, 0.1, 0.2].flatMap((w0) =>
      [0.5, 1, 1.5, 2].flatMap((a) =>
        [0.5, 1].map((r): [string, Rule] => [
          `w0 ${w0}, a ${a}, r ${r}`,
          (q, m, t) => fused(q, m, t, { bm25: 1, dense: Math.min(2, w0 + a * (1 - known(q, t)) * (2.5 / peak(q, t)) ** r), fixedServers: true }),
        ]),
      ),
    ),
  },
  {
    label: "the 2026-11-27 weight times (dense gap / g)^s, dense gap = the dense list's top cosine minus its 10th",
    settings: [0.08, 0.1, 0.12].flatMap((g) =>
      [0.5, 1, 2].map((sExp): [string, Rule] => [
        `g ${g}, s ${sExp}`,
        (q, m, t) => fused(q, m, t, { bm25: 1, dense: Math.min(2, withoutGap(q, t) * (denseGap(q.dense) / g) ** sExp), fixedServers: true }),
      ]),
    ),
  },
  {
    label: 'the shipped family: the 2026-11-27 weight times max(1, dense gap / g)^s: more say for a dense head that stands out, never less',
    settings: [0.08, 0.1, 0.12].flatMap((g) =>
      [0.5, 1, 2].map((sExp): [string, Rule] => [
        `g ${g}, s ${sExp}`,
        (q, m, t) => fused(q, m, t, { bm25: 1, dense: Math.min(2, withoutGap(q, t) * Math.max(1, denseGap(q.dense) / g) ** sExp), fixedServers: true }),
      ]),
    ),
  },
  {
    label: 'the 2026-11-27 weight plus b max(0, dense gap / g - 1)',
    settings: [0.1, 0.12, 0.15].flatMap((g) =>
      [0.25, 0.5, 1, 2].map((b): [string, Rule] => [
        `g ${g}, b ${b}`,
        (q, m, t) => fused(q, m, t, { bm25: 1, dense: Math.min(2, withoutGap(q, t) + b * Math.max(0, denseGap(q.dense) / g - 1)), fixedServers: true }),
      ]),
    ),
  },
  {
    label: 'min(2, (w0 + a (1 - known) (2.5 / peak)^0.5) (dense gap / g)^s)',
    settings: [0, 0.1, 0.2].flatMap((w0) =>
      [0.5, 1].flatMap((a) =>
        [0.5, 1, 2].map((sExp): [string, Rule] => [
          `w0 ${w0}, a ${a}, s ${sExp}`,
          (q, m, t) =>
            fused(q, m, t, {
              bm25: 1,
              dense: Math.min(2, (w0 + a * (1 - known(q, t)) * (2.5 / peak(q, t)) ** 0.5) * (denseGap(q.dense) / 0.1) ** sExp),
              fixedServers: true,
            }),
        ]),
      ),
    ),
  },
  {
    label: "the shipped weight with a short query's dense say: min(2, (2026-11-27 weight + a max(0, 1 - n / L)) x max(1, gap / 0.1)^2), n = distinct terms",
    settings: [12, 16, 20, 24, 32, 48, 64].flatMap((L) =>
      [0.4, 0.6, 1, 1.5].map((a): [string, Rule] => [
        `L ${L}, a ${a}`,
        (q, m, t) =>
          fused(q, m, t, {
            bm25: 1,
            dense: Math.min(2, (withoutGap(q, t) + a * Math.max(0, 1 - q.termCount / L)) * Math.max(1, denseGap(q.dense) / 0.1) ** 2),
            fixedServers: true,
          }),
      ]),
    ),
  },
  ...(Object.values(all).every((lists) => lists.clean.every((q) => q.head))
    ? [
        {
          label: "neighbours of BM25's head: a third list, tools by cosine to the mean vector of BM25's top m, at weight w",
          settings: HEAD_SIZES.flatMap((mm) =>
            [0.05, 0.1, 0.2, 0.3, 0.5].map((w): [string, Rule] => [
              `m ${mm}, w ${w}`,
              (q, m, t) => fused(q, m, t, { bm25: 1, dense: shipped(q, t), fixedServers: true, extra: { ranked: q.head![`c${mm}`]!, weight: w } }),
            ]),
          ),
        },
        {
          label: "Rocchio from BM25's head: the dense list's query vector plus beta x the unit mean of BM25's top m, at the shipped weight",
          settings: HEAD_SIZES.flatMap((mm) =>
            HEAD_BETAS.map((beta): [string, Rule] => [
              `m ${mm}, beta ${beta}`,
              (q, m, t) => fused(q, m, t, { bm25: 1, dense: shipped(q, t), fixedServers: true, denseList: q.head![`r${mm}_${beta}`]! }),
            ]),
          ),
        },
        {
          label: 'that Rocchio list as a third list at weight w, the dense list kept',
          settings: HEAD_SIZES.flatMap((mm) =>
            HEAD_BETAS.flatMap((beta) =>
              [0.05, 0.1, 0.2, 0.3].map((w): [string, Rule] => [
                `m ${mm}, b ${beta}, w ${w}`,
                (q, m, t) => fused(q, m, t, { bm25: 1, dense: shipped(q, t), fixedServers: true, extra: { ranked: q.head![`r${mm}_${beta}`]!, weight: w } }),
              ]),
            ),
          ),
        },
      ]
    : []),
  {
    label:
      "query-aspect diversification of the shipped ranking's top n: + lambda x the weight of the query's terms a tool holds that the tools above it leave uncovered (each holder keeps 1 - gamma)",
    settings: [
      ['lambda 0', (q, m, t) => fused(q, m, t, { bm25: 1, dense: shipped(q, t), fixedServers: true })] as [string, Rule],
      ...[10, 20, 30].flatMap((n) =>
        [0.02, 0.05, 0.1, 0.2, 0.4].flatMap((lambda) =>
          [0.5, 1].map((gamma): [string, Rule] => [
            `n ${n}, l ${lambda}, g ${gamma}`,
            (q, m, t) => diversified(fusedScores(q, m, t, { bm25: 1, dense: shipped(q, t), fixedServers: true }), q, n, lambda, gamma),
          ]),
        ),
      ),
    ],
  },
  {
    label: 'the shipped setting with server votes following the dense weight instead of fixed',
    settings: [
      ['shipped setting, servers following', (q, m, t) => fused(q, m, t, { bm25: 1, dense: denseWeight(known(q, t), t ? q.fuzzy : q.bm25, q.dense) })],
    ],
  },
];

interface Scores {
  ndcg: number;
  recall: number;
}
function scoreRule(rule: Rule, set: string, variant: 'clean' | 'typos', typoMatching: boolean): { mean: Scores; perQuery: QueryMetrics[] } {
  const lists = all[set]!;
  const members = new Map(Object.entries(lists.members));
  const perQuery = lists[variant].map((q) => scoreQuery(rule(q, members, typoMatching), { relevant: q.relevant, relevantGroups: q.groups }));
  const mean = meanMetrics(perQuery);
  return { mean: { ndcg: mean.ndcg10, recall: mean.recall10 }, perQuery };
}

const f = (x: number) => x.toFixed(3);
for (const [typoMatching, corrected] of [
  [true, 0],
  [false, 0],
  [true, 1],
] as const) {
  correctedCounts = corrected;
  console.log(`\n=== typo matching ${typoMatching ? `on, a corrected word counts ${corrected} of a known one` : 'off'}`);
  const singles = Object.fromEntries(
    sets.map((set) => [
      set,
      { bm25: scoreRule(single.bm25, set, 'clean', typoMatching).mean, dense: scoreRule(single.dense, set, 'clean', typoMatching).mean },
    ]),
  );
  console.log(
    `single lists (nDCG@10 / R@10): ${sets.map((set) => `${set} bm25 ${f(singles[set]!.bm25.ndcg)}/${f(singles[set]!.bm25.recall)} dense ${f(singles[set]!.dense.ndcg)}/${f(singles[set]!.dense.recall)}`).join('; ')}`,
  );
  const margin = (set: string, s: Scores) => {
    const best = singles[set]!;
    return Math.min(s.ndcg - Math.max(best.bm25.ndcg, best.dense.ndcg), s.recall - Math.max(best.bm25.recall, best.dense.recall));
  };
  for (const family of families) {
    const table = family.settings.map(([label, rule]) => {
      const per = Object.fromEntries(sets.map((set) => [set, scoreRule(rule, set, 'clean', typoMatching).mean]));
      const typoShare = Object.fromEntries(sets.map((set) => [set, scoreRule(rule, set, 'typos', typoMatching).mean.ndcg / per[set]!.ndcg]));
      return { label, rule, per, typoShare };
    });
    console.log(`\n${family.label} (${table.length} settings)`);
    if (values.settings || table.length === 1) {
      for (const row of table) {
        const kept = sets.map((set) => `${(100 * row.typoShare[set]!).toFixed(1)}%`).join('/');
        console.log(
          `  ${row.label.padEnd(16)} ${sets.map((set) => `${set} ${f(row.per[set]!.ndcg)}/${f(row.per[set]!.recall)}`).join('  ')}  worst margin ${f(Math.min(...sets.map((set) => margin(set, row.per[set]!))))}  typos kept ${kept}`,
        );
      }
    }
    const choose = (on: string[]) =>
      chooseSetting(table, on, {
        margin: (row, set) => margin(set, row.per[set]!),
        quality: (row, set) => row.per[set]!.ndcg + row.per[set]!.recall,
        typoShare: (row, set) => row.typoShare[set]!,
      });
    const inSample = choose(sets);
    console.log(`  chosen on all ${sets.length}: ${inSample.label}`);
    // Leave one corpus out: choose on the other corpora, score on this one.
    const loco = sets.map((held) => {
      const others = sets.filter((set) => source(set) !== source(held));
      const chosen = choose(others);
      return { held, chosen: chosen.label, clean: chosen.per[held]!, margin: margin(held, chosen.per[held]!), typoShare: chosen.typoShare[held]! };
    });
    for (const row of loco)
      console.log(
        `  held out ${row.held.padEnd(17)} chosen ${row.chosen.padEnd(16)} nDCG@10 ${f(row.clean.ndcg)} R@10 ${f(row.clean.recall)} margin ${f(row.margin)} typo nDCG kept ${(100 * row.typoShare).toFixed(1)}%`,
      );
  }
}
