/**
 * `npm run bench:tool-search`: `POST /v1/tool-search` as providers' and frameworks' tool-search hooks
 * call it, every call resending the same deferred tools inline, against the same tools stored as a
 * catalog (`catalog`), in one run.
 *
 *   the first --tools tools of a corpus in ../shared/eval (toolbench_stable: tags are its categories),
 *   pushed once as a catalog and embedded; then, per round, each mode answers every one of --queries
 *   dev queries, one request at a time, `max_results` 5:
 *     catalog          the stored catalog;
 *     inline           the tools in the body;
 *     inline, tag      the same with `tags`: the commonest tag (about a fifth of the tools) and a
 *                      rare one (a few tools), filtered before the ranking;
 *   each mode warmed by one request first (a hook's first call pays the list's parse and index once),
 *   the modes in alternating order each round, and no query cache (QUERY_CACHE_SIZE 0: every
 *   request embeds its query, as a hook's new query each turn does).
 *
 * Reports each mode's client-side latency p50 / p90 per round and their medians over --rounds, and
 * each inline mode's p50 as a ratio to the catalog's. Target: a repeated inline list answers within
 * 1.25 x the catalog's p50 (the catalog's is the floor: its index is built once, when written).
 * Ends with a JSON line (every figure); exits 1 when a target is missed, 2 when an answer differs
 * between rounds (the same query, tools and filter must rank the same whatever is remembered).
 *
 *   npm run bench:tool-search -- [--corpus toolbench_stable] [--tools 500] [--queries 100] [--rounds 3] [--model use-lite|none]
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { startInProcess } from './lib/in-process.js';
import { median, percentile, sortedAscending } from './lib/stats.js';

const { values } = parseArgs({
  options: {
    corpus: { type: 'string', default: 'toolbench_stable' },
    tools: { type: 'string', default: '500' },
    queries: { type: 'string', default: '100' },
    rounds: { type: 'string', default: '3' },
    model: { type: 'string', default: 'use-lite' },
  },
});
const EVAL = fileURLToPath(new URL('../../shared/eval/', import.meta.url));
const TARGET_RATIO = 1.25;

type Line = { name: string; tags?: string[] } & Record<string, unknown>;
const tools = readFileSync(`${EVAL}${values.corpus}/catalog.jsonl`, 'utf8')
  .trim()
  .split('\n')
  .slice(0, Number(values.tools))
  .map((line) => JSON.parse(line) as Line);
const queries = readFileSync(`${EVAL}${values.corpus}/queries.dev.jsonl`, 'utf8')
  .trim()
  .split('\n')
  .slice(0, Number(values.queries))
  .map((line) => (JSON.parse(line) as { query: string }).query);

const tagCounts = new Map<string, number>();
for (const tool of tools) for (const tag of new Set(tool.tags ?? [])) tagCounts.set(tag, (tagCounts.get(tag) ?? 0) + 1);
const byCount = [...tagCounts].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
const common = byCount[0];
const rare = byCount.filter(([, count]) => count >= 3).at(-1);

// No query cache: every round asks the same queries, and a hook's queries are new every turn.
const service = await startInProcess({ EMBED_MODEL: values.model!, QUERY_CACHE_SIZE: '0' });
const { base } = service;
const json = { 'content-type': 'application/json' };
const catalog = 'bench-tool-search';

async function post(path: string, body: unknown, method = 'POST'): Promise<unknown> {
  const response = await fetch(`${base}${path}`, { method, headers: json, body: JSON.stringify(body) });
  if (!response.ok) throw new Error(`${path} answered ${response.status}: ${await response.text()}`);
  return response.json();
}

interface Mode {
  label: string;
  body: Record<string, unknown>;
}
const modes: Mode[] = [
  { label: 'catalog', body: { catalog } },
  { label: 'inline', body: { tools } },
  ...(common ? [{ label: `inline, tag on ${common[1]} tools`, body: { tools, tags: [common[0]] } }] : []),
  ...(rare && rare !== common ? [{ label: `inline, tag on ${rare[1]} tools`, body: { tools, tags: [rare[0]] } }] : []),
];

let missed = false;
let consistent = true;
const p50s = new Map<string, number[]>();
const p90s = new Map<string, number[]>();
const answers = new Map<string, string>();
try {
  await post(`/v1/catalogs/${catalog}`, { tools }, 'PUT');
  const started = Date.now();
  for (;;) {
    const status = (await (await fetch(`${base}/v1/catalogs/${catalog}`)).json()) as { embedding?: { done: number; total: number } };
    if (values.model === 'none' || (status.embedding && status.embedding.done >= status.embedding.total)) break;
    if (Date.now() - started > 600_000) throw new Error('the catalog was not embedded within 10 minutes');
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  console.log(`${tools.length} ${values.corpus} tools (${tagCounts.size} tags), ${queries.length} queries, model ${values.model}, ${values.rounds} rounds`);
  for (let round = 0; round < Number(values.rounds); round++) {
    // Alternate the order each round, so a drift of the machine does not fall on one mode.
    for (const mode of round % 2 === 0 ? modes : [...modes].reverse()) {
      await post('/v1/tool-search', { query: 'warm up', ...mode.body });
      const times: number[] = [];
      const names: string[] = [];
      for (const query of queries) {
        const at = performance.now();
        const answer = (await post('/v1/tool-search', { query, max_results: 5, ...mode.body })) as { results: { name: string }[] };
        times.push(performance.now() - at);
        names.push(answer.results.map((result) => result.name).join(','));
      }
      const sorted = sortedAscending(times);
      p50s.set(mode.label, [...(p50s.get(mode.label) ?? []), percentile(sorted, 50)]);
      p90s.set(mode.label, [...(p90s.get(mode.label) ?? []), percentile(sorted, 90)]);
      const seen = answers.get(mode.label);
      if (seen !== undefined && seen !== names.join('\n')) {
        console.error(`${mode.label}: answers differ between rounds`);
        consistent = false;
      }
      answers.set(mode.label, names.join('\n'));
      console.log(`round ${round + 1}: ${mode.label.padEnd(28)} p50 ${percentile(sorted, 50).toFixed(2)} ms, p90 ${percentile(sorted, 90).toFixed(2)} ms`);
    }
  }
  const floor = median(p50s.get('catalog')!);
  console.log('\n| mode | p50 ms (median of rounds) [min .. max] | p90 ms | p50 / catalog |\n|---|---|---|---|');
  for (const mode of modes) {
    const p50 = p50s.get(mode.label)!;
    const ratio = median(p50) / floor;
    const target = mode.label === 'catalog' ? '' : ratio <= TARGET_RATIO ? ' (ok)' : ` (target <= ${TARGET_RATIO}: MISSED)`;
    if (mode.label !== 'catalog' && ratio > TARGET_RATIO) missed = true;
    console.log(
      `| ${mode.label} | ${median(p50).toFixed(2)} [${Math.min(...p50).toFixed(2)} .. ${Math.max(...p50).toFixed(2)}] | ${median(p90s.get(mode.label)!).toFixed(2)} | ${ratio.toFixed(2)}${target} |`,
    );
  }
  const modesReport = Object.fromEntries(
    modes.map((mode) => [mode.label, { p50_ms: p50s.get(mode.label)!, p90_ms: p90s.get(mode.label)!, p50_to_catalog: median(p50s.get(mode.label)!) / floor }]),
  );
  console.log(
    JSON.stringify({
      corpus: values.corpus,
      tools: tools.length,
      queries: queries.length,
      model: values.model,
      modes: modesReport,
      answers_consistent: consistent,
      targets_met: !missed,
    }),
  );
} finally {
  await service.close();
}
process.exit(!consistent ? 2 : missed ? 1 : 0);
