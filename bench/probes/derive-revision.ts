/**
 * The in-process cost of deriving a BM25 index through a revision of many tools' content (a
 * platform team re-pushing descriptions), without the store: `Bm25Index.derive` with each replaced
 * tool back in its own place (as CatalogIndex.derive plans it) against the plan without places
 * (replaced tools in other tools' places, as before 2026-12-03, when every term they hold was
 * rewritten), alternated.
 *
 *   npx tsx bench/probes/derive-revision.ts [--tools 100000] [--changed 5000] [--rounds 4]
 *
 * Synthetic corpus: 20 terms a tool from 16,000, skewed so a few are common (~2 million postings at
 * 100,000 tools); each changed tool keeps its terms and gains one ("revised").
 */
import { parseArgs } from 'node:util';
import { seededRandom } from '../../src/eval/seeded-random.js';
import { Bm25Index, slotPlan } from '../../src/ranking/bm25-index.js';

const { values } = parseArgs({
  options: { tools: { type: 'string', default: '100000' }, changed: { type: 'string', default: '5000' }, rounds: { type: 'string', default: '4' } },
});
const size = Number(values.tools);
const changed = Math.min(size, Number(values.changed));
const random = seededRandom(1);
const VOCABULARY = 16_000;
const docs = Array.from({ length: size }, (_, i) => {
  const termFreqs = new Map<string, number>();
  for (let k = 0; k < 20; k++) termFreqs.set(`t${Math.floor(VOCABULARY * random() ** 3)}`, 1 + Math.floor(random() * 2));
  return { id: `tool_${i}`, termFreqs, length: 30 };
});
const base = new Bm25Index(docs);
const step = Math.max(1, Math.floor(size / changed));
const dropped = new Set(Array.from({ length: changed }, (_, k) => k * step));
// In the order a change log hands rows back (not the places' order), each with one term more.
const added = [...dropped].reverse().map((at) => ({ id: docs[at]!.id, termFreqs: new Map([...docs[at]!.termFreqs, ['revised', 1]]), length: 31 }));
console.log(`${size} tools, ${base.postingCount} postings; ${changed} revised`);
const timings: Record<string, number[]> = { 'own places': [], 'other places': [] };
for (let round = 0; round < Number(values.rounds); round++) {
  for (const own of [false, true]) {
    const plan = slotPlan(base.size, dropped, added.length, own ? added.map((doc) => base.indexOf(doc.id)) : []);
    const gone = base.termsOf(plan.gone);
    const started = performance.now();
    await Bm25Index.derive(base, plan, added, gone);
    timings[own ? 'own places' : 'other places']!.push(performance.now() - started);
  }
}
for (const [label, ms] of Object.entries(timings)) {
  const sorted = [...ms].sort((a, b) => a - b);
  console.log(`${label.padEnd(12)} derive median ${sorted[Math.floor(sorted.length / 2)]!.toFixed(0)} ms (${ms.map((x) => x.toFixed(0)).join(', ')})`);
}
