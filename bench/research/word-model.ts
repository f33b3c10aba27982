/**
 * Issue 72's seventh attempt, not shipped (docs/ranking.md "Learning from use"): instead of past
 * requests like this one (the learned list's nearest neighbours), a model of which words lead to
 * which tool, learned from the events: for each fed tool, the share of its past requests holding
 * each word (Dirichlet-smoothed toward all requests' share), and a posterior over the fed tools and
 * "an intent not seen yet" (prior `pnew`, the words' shares over all requests). A word that only
 * another tool's requests hold ("triangle" after "circle") counts against a tool, which the
 * neighbours' similarity cannot do. The posterior times `weight` is added to the fused score of the
 * ranking without learning (`off`) or with the shipped list (`on`); `--gated` adds it only to tools
 * the shipped list lifted into the top 10.
 *
 * Reads a replay's rankings (the held-out folds' top 50 with and without learning), so the events
 * are the same as the replay's clean scenario (each training query -> its relevant tools):
 *
 *   npm run eval -- --all ../shared/eval --replay 5 --scenarios clean --out rows.jsonl
 *   npx tsx bench/research/word-model.ts --rows rows.jsonl
 */
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { parseArgs } from 'node:util';
import { distinctTerms } from '../../src/ranking/bm25.js';
import { queryTerms } from '../../src/ranking/search-text.js';
import type { ReplayRow } from '../../src/eval/replay.js';
import { ndcgAt } from '../../src/eval/metrics.js';

const { values } = parseArgs({ options: { rows: { type: 'string' }, gated: { type: 'boolean', default: false } } });
if (!values.rows) throw new Error('usage: npx tsx bench/research/word-model.ts --rows rows.jsonl [--gated]');
const rows = readFileSync(values.rows, 'utf8')
  .split('\n')
  .filter(Boolean)
  .map((line) => JSON.parse(line) as ReplayRow & { dataset: string });

interface Setting {
  weight: number;
  mu: number;
  pnew: number;
  base: 'off' | 'on';
}
const settings: Setting[] = [];
for (const base of ['off', 'on'] as const)
  for (const weight of [0.002, 0.005, 0.02]) for (const mu of [1, 4]) for (const pnew of [0.5, 0.9]) settings.push({ weight, mu, pnew, base });

const words = new Map<string, Set<string>>();
const wordsOf = (query: string) => {
  if (!words.has(query)) words.set(query, new Set(distinctTerms(queryTerms(query))));
  return words.get(query)!;
};

/** One fold's counts: requests holding each word, per tool its requests and those holding each word. */
function countsOf(training: ReplayRow[]) {
  const word = new Map<string, number>();
  const tool = new Map<string, number>();
  const toolWord = new Map<string, Map<string, number>>();
  for (const row of training) {
    const held = wordsOf(row.query);
    for (const w of held) word.set(w, (word.get(w) ?? 0) + 1);
    for (const t of row.relevant) {
      tool.set(t, (tool.get(t) ?? 0) + 1);
      const map = toolWord.get(t) ?? new Map<string, number>();
      for (const w of held) map.set(w, (map.get(w) ?? 0) + 1);
      toolWord.set(t, map);
    }
  }
  const byWord = new Map<string, string[]>();
  for (const [t, map] of toolWord) for (const w of map.keys()) byWord.set(w, [...(byWord.get(w) ?? []), t]);
  const events = [...tool.values()].reduce((sum, n) => sum + n, 0);
  return { requests: training.length, word, tool, toolWord, byWord, events };
}

function posterior(counts: ReturnType<typeof countsOf>, query: string, candidates: string[], setting: Setting): Map<string, number> {
  const held = [...wordsOf(query)].filter((w) => counts.word.has(w));
  const background = (w: string) => (counts.word.get(w)! + 0.5) / (counts.requests + 1);
  const logJoint = (t: string) => {
    const n = counts.tool.get(t)!;
    let sum = Math.log((n / counts.events) * (1 - setting.pnew));
    for (const w of held) sum += Math.log(((counts.toolWord.get(t)!.get(w) ?? 0) + setting.mu * background(w)) / (n + setting.mu));
    return sum;
  };
  const unseen = Math.log(setting.pnew) + held.reduce((sum, w) => sum + Math.log(background(w)), 0);
  const tools = new Set([...held.flatMap((w) => counts.byWord.get(w) ?? []), ...candidates.filter((t) => counts.tool.has(t))]);
  const joint = new Map([...tools].map((t) => [t, logJoint(t)]));
  const top = Math.max(unseen, ...joint.values());
  const total = Math.exp(unseen - top) + [...joint.values()].reduce((sum, v) => sum + Math.exp(v - top), 0);
  return new Map([...joint].map(([t, v]) => [t, Math.exp(v - top) / total]));
}

const datasets = [...new Set(rows.map((row) => row.dataset))];
const mean = (list: number[]) => (list.length ? list.reduce((sum, v) => sum + v, 0) / list.length : 0);
for (const setting of settings) {
  const cells: string[] = [];
  for (const dataset of datasets) {
    const own = rows.filter((row) => row.dataset === dataset);
    const judged: { fed: boolean; off: number; now: number }[] = [];
    for (const fold of new Set(own.map((row) => row.fold))) {
      const counts = countsOf(own.filter((row) => row.fold !== fold));
      for (const row of own.filter((entry) => entry.fold === fold)) {
        const list = row[setting.base];
        const lifted = new Set(row.on.slice(0, 10).filter((t) => !row.off.slice(0, 10).includes(t) || row.on.indexOf(t) < row.off.indexOf(t)));
        const votes = posterior(counts, row.query, list, setting);
        const score = new Map(list.map((t, index) => [t, 1 / (61 + index) + (values.gated && !lifted.has(t) ? 0 : setting.weight * (votes.get(t) ?? 0))]));
        const ranked = [...list].sort((a, b) => score.get(b)! - score.get(a)!);
        const relevant = new Set(row.relevant);
        judged.push({ fed: row.fed !== 'none', off: ndcgAt(row.off, relevant, 10), now: ndcgAt(ranked, relevant, 10) });
      }
    }
    const fed = judged.filter((entry) => entry.fed);
    const unfed = judged.filter((entry) => !entry.fed);
    const offFed = mean(fed.map((entry) => entry.off));
    const gap = (mean(fed.map((entry) => entry.now)) - offFed) / (1 - offFed);
    const unfedChange = mean(unfed.map((entry) => entry.now)) - mean(unfed.map((entry) => entry.off));
    cells.push(`${basename(dataset)} ${(gap * 100).toFixed(1)}% / ${unfedChange >= 0 ? '+' : ''}${unfedChange.toFixed(4)}`);
  }
  console.log(`${setting.base} weight ${setting.weight} mu ${setting.mu} pnew ${setting.pnew}${values.gated ? ' gated' : ''}: ${cells.join(', ')}`);
}
