/**
 * `npm run bench:savings`: what deferring tools through `POST /v1/tool-search` saves, on the four
 * public corpora in ../shared/eval and their dev queries.
 *
 * Each corpus is pushed as a stored catalog (its tools as the catalog lines give them), embedded by
 * the queue, and asked every dev query with `max_results` tools (`format: names`). Per corpus it
 * reports the catalog's definition tokens (what a host sends without deferring: `definition_tokens`
 * of the catalog, counted at ingestion with gpt-tokenizer o200k_base, an estimate for non-OpenAI
 * models), the tokens of the answer's definitions per query (median, p90), the reduction at the
 * median, and what the saving costs in reach: the share of queries with a relevant tool in the
 * answer, and the mean share of relevant tools in it (Recall@max_results). The /metrics counters
 * must add up to the answers' `tokens` (checked; exit 1 when not).
 *
 *   npm run bench:savings -- [--corpora bfcl,livemcpbench,sealtools,toolbench_stable] [--max-results 5]
 *                            [--queries N] [--model use-lite|none]
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { startInProcess } from './lib/in-process.js';
import { percentile, sortedAscending } from './lib/stats.js';

const { values } = parseArgs({
  options: {
    corpora: { type: 'string', default: 'bfcl,livemcpbench,sealtools,toolbench_stable' },
    'max-results': { type: 'string', default: '5' },
    queries: { type: 'string' },
    model: { type: 'string', default: 'use-lite' },
  },
});
const corpora = values.corpora!.split(',');
const maxResults = Number(values['max-results']);
const EVAL = fileURLToPath(new URL('../../shared/eval/', import.meta.url));

const service = await startInProcess({ EMBED_MODEL: values.model! });
const { deps, base } = service;
const json = { 'content-type': 'application/json' };

const metric = async (kind: 'offered' | 'selected') => {
  const text = await (await fetch(`${base}/metrics`)).text();
  const line = text.split('\n').find((row) => row.startsWith(`toolsift_tool_definition_tokens_total{endpoint="tool_search",tenant="default",kind="${kind}"}`));
  return Number(line?.split(' ').at(-1) ?? 0);
};

interface Report {
  corpus: string;
  tools: number;
  queries: number;
  catalog_tokens: { anthropic: number; openai: number; as_sent: number };
  selected_tokens: { p50: number; p90: number };
  reduction_at_median: number;
  any_relevant: number;
  recall: number;
}

const reports: Report[] = [];
let consistent = true;
try {
  for (const corpus of corpora) {
    const tools = readFileSync(`${EVAL}${corpus}/catalog.jsonl`, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const all = readFileSync(`${EVAL}${corpus}/queries.dev.jsonl`, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { query: string; relevant: string[] });
    const queries = values.queries ? all.slice(0, Number(values.queries)) : all;
    const put = await fetch(`${base}/v1/catalogs/${corpus}`, { method: 'PUT', headers: json, body: JSON.stringify({ tools }) });
    if (!put.ok) throw new Error(`PUT ${corpus} answered ${put.status}: ${await put.text()}`);
    await deps.queue?.whenIdle();
    const catalog = (await (await fetch(`${base}/v1/catalogs/${corpus}`)).json()) as { definition_tokens: Report['catalog_tokens'] };
    const before = { offered: await metric('offered'), selected: await metric('selected') };
    const answered = { offered: 0, selected: 0 };
    const selected: number[] = [];
    let any = 0;
    let recall = 0;
    for (const { query, relevant } of queries) {
      const response = await fetch(`${base}/v1/tool-search`, {
        method: 'POST',
        headers: json,
        body: JSON.stringify({ query, catalog: corpus, max_results: maxResults }),
      });
      if (!response.ok) throw new Error(`tool-search answered ${response.status}: ${await response.text()}`);
      const body = (await response.json()) as { results: { name: string }[]; tokens: { offered: number; selected: number } };
      answered.offered += body.tokens.offered;
      answered.selected += body.tokens.selected;
      selected.push(body.tokens.selected);
      const names = new Set(body.results.map((result) => result.name));
      const hits = relevant.filter((name) => names.has(name)).length;
      if (hits > 0) any++;
      recall += hits / relevant.length;
    }
    const after = { offered: await metric('offered'), selected: await metric('selected') };
    if (after.offered - before.offered !== answered.offered || after.selected - before.selected !== answered.selected) {
      consistent = false;
      console.error(
        `${corpus}: /metrics moved by ${JSON.stringify({ offered: after.offered - before.offered, selected: after.selected - before.selected })}, the answers said ${JSON.stringify(answered)}`,
      );
    }
    const sorted = sortedAscending(selected);
    const report: Report = {
      corpus,
      tools: tools.length,
      queries: queries.length,
      catalog_tokens: catalog.definition_tokens,
      selected_tokens: { p50: percentile(sorted, 50), p90: percentile(sorted, 90) },
      reduction_at_median: 1 - percentile(sorted, 50) / catalog.definition_tokens.as_sent,
      any_relevant: any / queries.length,
      recall: recall / queries.length,
    };
    reports.push(report);
    console.error(`[${corpus}] done`);
  }
  console.log(`tool search over stored catalogs, max_results ${maxResults}, EMBED_MODEL=${values.model}; tokens: o200k_base, definitions as pushed`);
  console.log('corpus            tools  queries  catalog tokens  answer p50 / p90  reduction  relevant in answer  recall');
  for (const r of reports) {
    console.log(
      `${r.corpus.padEnd(17)} ${String(r.tools).padStart(5)}  ${String(r.queries).padStart(7)}  ${String(r.catalog_tokens.as_sent).padStart(14)}  ` +
        `${`${Math.round(r.selected_tokens.p50)} / ${Math.round(r.selected_tokens.p90)}`.padStart(16)}  ${`${(r.reduction_at_median * 100).toFixed(1)}%`.padStart(9)}  ` +
        `${`${(r.any_relevant * 100).toFixed(1)}%`.padStart(18)}  ${r.recall.toFixed(3)}`,
    );
  }
  console.log(JSON.stringify({ max_results: maxResults, model: values.model, reports, metrics_consistent: consistent }));
} finally {
  await service.close();
}
process.exit(consistent ? 0 : 1);
