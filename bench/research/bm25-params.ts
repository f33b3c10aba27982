/**
 * BM25's k1, b and the name's weight (how many times a tool's name counts in its document), and
 * RM3 feedback on BM25's terms, judged leave-one-corpus-out with the shipped fusion
 * (docs/ranking.md, 2026-12-03 and 2026-12-04), rerunnable:
 *
 *   npx tsx bench/research/bm25-params.ts --lists <fusion-loco's cache.json> [--root <folder>] [--sets ...]
 *                                [--k1 0.6,0.9,1.2,1.6,2] [--b 0.3,0.5,0.75,0.9] [--name-weights 2]
 *                                [--feedback docs:terms:lambda,...]
 *
 * The dense and dense-server lists come from bench/research/fusion-loco.ts's `--lists` cache (same root and
 * sets); BM25, typo matching and the BM25 server list are recomputed per setting with the service's
 * code, then fused as the service fuses them (denseWeight, server votes; no exact-name step).
 * The constraint of docs/ranking.md's rule reads the better single list of either the row's BM25 or
 * the shipped one, so a setting cannot pass by weakening BM25.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { documentTerms, queryTerms, schemaParameters, NAME_WEIGHT, SCHEMA_WEIGHT } from '../../src/ranking/search-text.js';
import { normalizeTools } from '../../src/catalog/tool-formats.js';
import { meanMetrics, scoreQuery, type QueryMetrics } from '../../src/eval/metrics.js';
import { readJsonl, type EvalQuery } from '../../src/eval/run-eval.js';
import { BM25_B, BM25_K1, BM25_TERM_UNIT, distinctTerms } from '../../src/ranking/bm25.js';
import { Bm25Index } from '../../src/ranking/bm25-index.js';
import { expandTerms, VocabularyIndex } from '../../src/ranking/fuzzy-terms.js';
import { denseWeight, fuseRrf, RRF_DEPTH, type Ranked } from '../../src/ranking/rrf.js';
import { addServerVotes, serverDocuments, SERVER_BM25_WEIGHT, SERVER_DEPTH, SERVER_VECTOR_WEIGHT } from '../../src/ranking/servers.js';
import { tokenize } from '../../src/ranking/tokenizer.js';
import { chooseSetting, evalQueries, source } from './loco.js';

const { values } = parseArgs({
  options: {
    lists: { type: 'string' },
    root: { type: 'string' },
    sets: { type: 'string', default: 'bfcl,livemcpbench,sealtools,toolbench_stable' },
    k1: { type: 'string', default: '0.6,0.9,1.2,1.6,2' },
    b: { type: 'string', default: '0.3,0.5,0.75,0.9' },
    'name-weights': { type: 'string', default: String(NAME_WEIGHT) },
    // The parameters' text (names and descriptions) counted at this weight beside the name's and the
    // description's (SCHEMA_WEIGHT as shipped; 1 before 2026-12-05). Term counts are integers in
    // Bm25Index, so a weight w runs as every other field counted 4 times and the schema 4w times,
    // with k1 x 4 (BM25_TERM_UNIT's rule): the shipped figures exactly at w = SCHEMA_WEIGHT.
    'schema-weights': { type: 'string', default: String(SCHEMA_WEIGHT) },
    // Pseudo-relevance feedback on BM25's terms (RM3), as "docs:terms:lambda,...": each setting adds
    // rows beside the no-feedback one (run it with one k1, b and name weight).
    feedback: { type: 'string', default: '' },
  },
});
if (!values.lists) {
  console.error(
    'usage: npx tsx bench/research/bm25-params.ts --lists <bench/research/fusion-loco.ts cache> [--root ...] [--sets ...] [--k1 ...] [--b ...] [--name-weights ...]',
  );
  process.exit(2);
}
const EVAL = values.root ? `${values.root.replace(/\/$/, '')}/` : fileURLToPath(new URL('../../../shared/eval/', import.meta.url));
const sets = values.sets!.split(',').map((set) => set.trim());
const cache = JSON.parse(readFileSync(values.lists, 'utf8'));
const numbers = (list: string) => list.split(',').map(Number);
const k1s = numbers(values.k1!);
const bs = numbers(values.b!);
const nameWeights = numbers(values['name-weights']!);
const schemaWeights = numbers(values['schema-weights']!);
const SCHEMA_SCALE = 4;
for (const w of schemaWeights)
  if (!Number.isInteger(w * SCHEMA_SCALE) || w < 0 || w > 1) throw new Error(`--schema-weights: ${w} is not a multiple of 1/${SCHEMA_SCALE} from 0 to 1`);
if (schemaWeights.some((w) => w !== SCHEMA_WEIGHT) && nameWeights.some((w) => w !== NAME_WEIGHT))
  throw new Error('--schema-weights runs with the shipped name weight only');
interface Feedback {
  docs: number;
  terms: number;
  lambda: number;
}
const feedbacks: (Feedback | null)[] = [
  null,
  ...values
    .feedback!.split(',')
    .filter(Boolean)
    .map((spec) => {
      const [docs, terms, lambda] = spec.split(':').map(Number);
      return { docs: docs!, terms: terms!, lambda: lambda! };
    }),
];

/**
 * RM3: the query's terms interpolated with the terms of BM25's top `docs` tools, each tool's term
 * distribution (tf / length) weighted by its share of the head's scores; the `terms` likeliest
 * kept. The query's own weight total is kept, so BM25's scores stay on the query's scale.
 */
function rm3(
  weights: ReadonlyMap<string, number>,
  head: [string, number][],
  documents: ReadonlyMap<string, { termFreqs: ReadonlyMap<string, number>; length: number }>,
  fb: Feedback,
): Map<string, number> {
  const total = head.reduce((sum, [, score]) => sum + score, 0);
  const likely = new Map<string, number>();
  if (total > 0)
    for (const [id, score] of head) {
      const doc = documents.get(id)!;
      for (const [term, tf] of doc.termFreqs) likely.set(term, (likely.get(term) ?? 0) + ((score / total) * tf) / doc.length);
    }
  const kept = [...likely].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).slice(0, fb.terms);
  const keptMass = kept.reduce((sum, [, p]) => sum + p, 0);
  const queryMass = [...weights.values()].reduce((sum, w) => sum + w, 0);
  const out = new Map<string, number>();
  for (const [term, w] of weights) out.set(term, fb.lambda * w);
  if (keptMass > 0) for (const [term, p] of kept) out.set(term, (out.get(term) ?? 0) + ((1 - fb.lambda) * queryMass * p) / keptMass);
  return out;
}

interface Prepared {
  tools: ReturnType<typeof normalizeTools>['tools'];
  queries: EvalQuery[];
  texts: { clean: string[]; typos: string[] };
}
const prepared: Record<string, Prepared> = {};
for (const set of sets) {
  const { tools } = normalizeTools(readJsonl(`${EVAL}${set}/catalog.jsonl`));
  prepared[set] = { tools, ...evalQueries(EVAL, set) };
}

interface S {
  ndcg: number;
  recall: number;
}
interface Figures {
  hybrid: S;
  bm25: S;
  dense: S;
}
interface CachedQuery {
  dense: Ranked;
  serverDense: Ranked;
}
const cached = (set: string, variant: 'clean' | 'typos', i: number): CachedQuery => cache[set][variant][i];

/** Hybrid and both single lists on one set at one setting, clean and with the eval's typos. */
function run(set: string, k1: number, b: number, nameWeight: number, fb: Feedback | null, schemaWeight = SCHEMA_WEIGHT): Record<'clean' | 'typos', Figures> {
  const { tools, queries, texts } = prepared[set]!;
  const documents = tools.map((tool) => {
    const terms = documentTerms(tool);
    if (schemaWeight !== SCHEMA_WEIGHT) {
      // The shipped counts (BM25_TERM_UNIT per unit of weight) in SCHEMA_SCALE units, then the parameters' terms moved to SCHEMA_SCALE x schemaWeight.
      const tf = new Map([...terms.termFreqs].map(([term, count]) => [term, (count * SCHEMA_SCALE) / BM25_TERM_UNIT]));
      let length = (terms.length * SCHEMA_SCALE) / BM25_TERM_UNIT;
      const less = SCHEMA_SCALE * (SCHEMA_WEIGHT - schemaWeight);
      for (const parameter of schemaParameters(tool.inputSchema)) {
        for (const term of [...tokenize(parameter.name), ...tokenize(parameter.description)]) {
          tf.set(term, tf.get(term)! - less);
          length -= less;
        }
      }
      for (const [term, count] of tf) if (count <= 0) tf.delete(term);
      return { id: tool.name, termFreqs: tf, length };
    }
    if (nameWeight === NAME_WEIGHT) return { id: tool.name, ...terms };
    // The name's terms counted nameWeight times instead of NAME_WEIGHT.
    const tf = new Map(terms.termFreqs);
    let length = terms.length;
    for (const term of tokenize(tool.name)) {
      tf.set(term, (tf.get(term) ?? 0) + (nameWeight - NAME_WEIGHT) * BM25_TERM_UNIT);
      length += (nameWeight - NAME_WEIGHT) * BM25_TERM_UNIT;
    }
    for (const [term, count] of tf) if (count <= 0) tf.delete(term);
    return { id: tool.name, termFreqs: tf, length };
  });
  const params = { k1, b, unit: schemaWeight === SCHEMA_WEIGHT ? BM25_TERM_UNIT : SCHEMA_SCALE };
  const index = new Bm25Index(documents, params);
  const frequencies = new Map<string, number>();
  for (const doc of documents) for (const term of doc.termFreqs.keys()) frequencies.set(term, (frequencies.get(term) ?? 0) + 1);
  const vocabulary = VocabularyIndex.of(frequencies);
  const servers = serverDocuments(tools.map((tool, i) => ({ ...documents[i]!, server: tool.server })));
  const serverIndex = new Bm25Index(servers.documents, params);
  const members = servers.members;
  const byId = new Map(documents.map((doc) => [doc.id, doc]));
  const out = {} as Record<'clean' | 'typos', Figures>;
  for (const variant of ['clean', 'typos'] as const) {
    const hybrid: QueryMetrics[] = [];
    const bm25: QueryMetrics[] = [];
    const dense: QueryMetrics[] = [];
    for (const [i, query] of queries.entries()) {
      const terms = distinctTerms(queryTerms(texts[variant][i]!));
      const expanded = expandTerms(terms, vocabulary);
      const first = index.searchWeighted(expanded.weights, RRF_DEPTH);
      const weights = fb ? rm3(expanded.weights, first.slice(0, fb.docs), byId, fb) : expanded.weights;
      const fuzzy = fb ? index.searchWeighted(weights, RRF_DEPTH) : first;
      const { dense: denseList, serverDense } = cached(set, variant, i);
      const toolsFused = fuseRrf([
        { ranked: fuzzy, weight: 1, scaleByScore: true },
        { ranked: denseList, weight: denseWeight(expanded.known, fuzzy, denseList), scaleByScore: false },
      ]);
      const lists = { bm25: serverIndex.searchWeighted(weights, 10), vector: serverDense, members };
      const ranking = addServerVotes(toolsFused, lists, {
        bm25Weight: SERVER_BM25_WEIGHT,
        vectorWeight: SERVER_VECTOR_WEIGHT,
        depth: SERVER_DEPTH,
        k: 60,
      }).fused.map(([id]) => id);
      const rel = { relevant: query.relevant, relevantGroups: query.relevant_groups };
      hybrid.push(scoreQuery(ranking, rel));
      bm25.push(
        scoreQuery(
          fuzzy.map(([id]) => id),
          rel,
        ),
      );
      dense.push(
        scoreQuery(
          denseList.map(([id]) => id),
          rel,
        ),
      );
    }
    const mean = (perQuery: QueryMetrics[]): S => {
      const metrics = meanMetrics(perQuery);
      return { ndcg: metrics.ndcg10, recall: metrics.recall10 };
    };
    out[variant] = { hybrid: mean(hybrid), bm25: mean(bm25), dense: mean(dense) };
  }
  return out;
}

const f = (x: number) => x.toFixed(3);
const rows: { label: string; per: Record<string, Record<'clean' | 'typos', Figures>> }[] = [];
for (const sw of schemaWeights)
  for (const nw of nameWeights)
    for (const k1 of k1s)
      for (const b of bs)
        for (const fb of feedbacks) {
          const per = Object.fromEntries(sets.map((set) => [set, run(set, k1, b, nw, fb, sw)]));
          const label = `nw ${nw} k1 ${k1} b ${b}${sw === SCHEMA_WEIGHT ? '' : ` schema ${sw}`}${fb ? ` rm3 ${fb.docs}:${fb.terms}:${fb.lambda}` : ''}`;
          rows.push({ label, per });
          const cell = (set: string) => {
            const { clean, typos } = per[set]!;
            return `${set} ${f(clean.hybrid.ndcg)}/${f(clean.hybrid.recall)} (bm25 ${f(clean.bm25.ndcg)}/${f(clean.bm25.recall)} dense ${f(clean.dense.ndcg)}/${f(clean.dense.recall)}) typos kept ${((100 * typos.hybrid.ndcg) / clean.hybrid.ndcg).toFixed(1)}%`;
          };
          console.log(`${label.padEnd(34)} ${sets.map(cell).join('  ')}`);
        }
// The margin to the better single list, the row's own BM25 or the shipped one (when in the grid), whichever is higher.
const shipped = rows.find((row) => row.label === `nw ${NAME_WEIGHT} k1 ${BM25_K1} b ${BM25_B}`);
const margin = (row: (typeof rows)[number], set: string) => {
  const own = row.per[set]!.clean;
  const base = shipped ? shipped.per[set]!.clean : undefined;
  const bestNdcg = Math.max(own.bm25.ndcg, own.dense.ndcg, base?.bm25.ndcg ?? 0);
  const bestRecall = Math.max(own.bm25.recall, own.dense.recall, base?.bm25.recall ?? 0);
  return Math.min(own.hybrid.ndcg - bestNdcg, own.hybrid.recall - bestRecall);
};
const choose = (on: string[]) =>
  chooseSetting(rows, on, {
    margin,
    quality: (row, set) => row.per[set]!.clean.hybrid.ndcg + row.per[set]!.clean.hybrid.recall,
    typoShare: (row, set) => row.per[set]!.typos.hybrid.ndcg / row.per[set]!.clean.hybrid.ndcg,
  });
console.log(`chosen on all: ${choose(sets).label}`);
for (const held of sets) {
  const chosen = choose(sets.filter((set) => source(set) !== source(held)));
  const { ndcg, recall } = chosen.per[held]!.clean.hybrid;
  const before = shipped ? `${f(shipped.per[held]!.clean.hybrid.ndcg)}/${f(shipped.per[held]!.clean.hybrid.recall)}` : '-';
  console.log(`held out ${held.padEnd(26)} chosen ${chosen.label.padEnd(34)} ${f(ndcg)}/${f(recall)} margin ${f(margin(chosen, held))}  shipped ${before}`);
}
