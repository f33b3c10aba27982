/**
 * The labelled non-English queries (test/fixtures/multilingual, written by hand: docs/ranking.md):
 * each `<corpus>.jsonl` ranked over `<root>/<corpus>/catalog.jsonl` by runEval (the catalog
 * search's code), per mode, and reported per language: nDCG@10 and R@10, how many answers were
 * marked, and how well `confidence` is calibrated on them (top 10 of each hybrid answer). The
 * English tasks they were written from (`<corpus>.en.jsonl`) are ranked beside them as `en`.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { confidences, UNREAD_LANGUAGE_SCALE } from '../ranking/confidence.js';
import type { SearchMode } from '../search/hybrid-search.js';
import { meanMetrics, scoreQuery, type QueryMetrics } from './metrics.js';
import { readJsonl, runEval } from './run-eval.js';

/** One query's answer in one mode. */
export interface MultilingualRow {
  corpus: string;
  id: string;
  lang: string;
  mode: SearchMode;
  metrics: QueryMetrics;
  degraded?: string;
  /** The language the search detected (absent: English). */
  detected?: string;
  understood?: boolean;
  /** The top 10's confidences as answered (scaled when not understood), as the model gives them, and whether each is relevant. */
  top: { confidence: number; raw: number; relevant: boolean }[];
}

export interface CalibrationSummary {
  examples: number;
  /** Mean confidence of the top 10 and the share of them relevant. */
  meanConfidence: number;
  relevantShare: number;
  /** Expected calibration error over 10 equal-width bins. */
  ece: number;
  /** The top result's mean confidence and the share of queries whose top result is relevant. */
  top1Confidence: number;
  precision1: number;
}

export async function runMultilingualEval(
  deps: Parameters<typeof runEval>[0],
  options: { root: string; fixtures: string; modes: SearchMode[]; onProgress?: (message: string) => void },
): Promise<MultilingualRow[]> {
  const rows: MultilingualRow[] = [];
  const files = readdirSync(options.fixtures)
    .filter((file) => file.endsWith('.jsonl'))
    .sort();
  for (const file of files) {
    const corpus = file.replace(/(\.en)?\.jsonl$/, '');
    const dataset = join(options.root, corpus);
    if (!existsSync(join(dataset, 'catalog.jsonl'))) throw new Error(`${file}: no catalog at ${dataset}`);
    const queries = join(options.fixtures, file);
    const langOf = new Map(readJsonl(queries).map((row) => [(row as { id: string }).id, (row as { lang?: string }).lang ?? 'en']));
    await runEval(deps, {
      dataset,
      queries,
      modes: options.modes,
      onProgress: (message) => options.onProgress?.(`${file}: ${message}`),
      onResult: (query, mode, result) => {
        const relevant = new Set(query.relevant);
        const head = result.tools.slice(0, 10);
        const raw = confidences(
          head.map((tool, i) => ({ ...tool.explain, rank: i + 1 })),
          result.bests,
        );
        const language = (result as { language?: { tag: string; understood: boolean } }).language;
        const scale = language && !language.understood ? UNREAD_LANGUAGE_SCALE : 1;
        rows.push({
          corpus,
          id: query.id,
          lang: langOf.get(query.id) ?? 'en',
          mode,
          metrics: scoreQuery(
            result.tools.map((tool) => tool.id),
            { relevant: query.relevant },
          ),
          ...(result.degraded ? { degraded: result.degraded } : {}),
          ...(language ? { detected: language.tag, understood: language.understood } : {}),
          top: head.map((tool, i) => ({
            confidence: tool.explain.exact_name ? 1 : raw[i]! * scale,
            raw: tool.explain.exact_name ? 1 : raw[i]!,
            relevant: relevant.has(tool.id),
          })),
        });
      },
    });
  }
  return rows;
}

export function calibrationOf(rows: readonly MultilingualRow[], pick: 'confidence' | 'raw' = 'confidence'): CalibrationSummary {
  const examples = rows.flatMap((row) => row.top);
  const bins = Array.from({ length: 10 }, () => ({ n: 0, confidence: 0, relevant: 0 }));
  for (const example of examples) {
    const bin = bins[Math.min(9, Math.floor(example[pick] * 10))]!;
    bin.n++;
    bin.confidence += example[pick];
    bin.relevant += example.relevant ? 1 : 0;
  }
  const ece = bins.reduce((sum, bin) => sum + (bin.n === 0 ? 0 : Math.abs(bin.confidence - bin.relevant) / Math.max(1, examples.length)), 0);
  const mean = (values: number[]) => (values.length === 0 ? 0 : values.reduce((sum, value) => sum + value, 0) / values.length);
  const tops = rows.filter((row) => row.top.length > 0).map((row) => row.top[0]!);
  return {
    examples: examples.length,
    meanConfidence: mean(examples.map((example) => example[pick])),
    relevantShare: mean(examples.map((example) => (example.relevant ? 1 : 0))),
    ece,
    top1Confidence: mean(tops.map((top) => top[pick])),
    precision1: mean(tops.map((top) => (top.relevant ? 1 : 0))),
  };
}

/**
 * The factor that makes the mean confidence of these rows' answers equal their precision: over each
 * answer's top result (`top1`: an answer's confidence, what tool-search returns and MCP merges by),
 * or over its top 10; from the confidences as the model gives them. UNREAD_LANGUAGE_SCALE is the first.
 */
export function fittedScale(rows: readonly MultilingualRow[], over: 'top1' | 'top10' = 'top1'): number {
  const examples = rows.flatMap((row) => (over === 'top1' ? row.top.slice(0, 1) : row.top));
  const predicted = examples.reduce((sum, example) => sum + example.raw, 0);
  const relevant = examples.filter((example) => example.relevant).length;
  return predicted === 0 ? 1 : relevant / predicted;
}

/** The report `npm run eval -- --multilingual` prints: metrics per corpus, language and mode, then the calibration. */
export function formatMultilingualReport(rows: readonly MultilingualRow[]): string {
  const lines: string[] = [];
  const corpora = [...new Set(rows.map((row) => row.corpus))];
  const languages = [...new Set(rows.map((row) => row.lang))];
  const modes = [...new Set(rows.map((row) => row.mode))];
  const cell = (value: number) => value.toFixed(3);
  lines.push('corpus            lang  queries  ' + modes.map((mode) => `${mode} nDCG@10/R@10`.padEnd(24)).join('') + 'marked (hybrid)');
  for (const corpus of [...corpora, 'all']) {
    for (const lang of [...languages, 'non-en']) {
      const pick = (mode: SearchMode) =>
        rows.filter((row) => (corpus === 'all' || row.corpus === corpus) && (lang === 'non-en' ? row.lang !== 'en' : row.lang === lang) && row.mode === mode);
      const first = pick(modes[0]!);
      if (first.length === 0) continue;
      const hybrid = pick('hybrid');
      const marked = hybrid.filter((row) => row.degraded === 'query_language').length;
      lines.push(
        `${corpus.padEnd(17)} ${lang.padEnd(6)}${String(first.length).padEnd(9)}${modes
          .map((mode) => {
            const mean = meanMetrics(pick(mode).map((row) => row.metrics));
            return `${cell(mean.ndcg10)} / ${cell(mean.recall10)}`.padEnd(24);
          })
          .join('')}${hybrid.length ? `${marked} of ${hybrid.length}` : '-'}`,
      );
    }
  }
  const hybrid = rows.filter((row) => row.mode === 'hybrid');
  if (hybrid.length > 0) {
    lines.push('', 'calibration (hybrid, top 10 of each answer): examples, mean confidence : share relevant, ECE, top-1 confidence : P@1');
    const line = (label: string, subset: readonly MultilingualRow[], pick: 'confidence' | 'raw' = 'confidence') => {
      const c = calibrationOf(subset, pick);
      lines.push(
        `${label.padEnd(40)} ${String(c.examples).padEnd(6)} ${cell(c.meanConfidence)} : ${cell(c.relevantShare)}   ECE ${cell(c.ece)}   ${cell(c.top1Confidence)} : ${cell(c.precision1)}`,
      );
    };
    const foreign = hybrid.filter((row) => row.lang !== 'en');
    line('non-English, as answered', foreign);
    line('non-English, the model unscaled', foreign, 'raw');
    for (const corpus of corpora)
      line(
        `  ${corpus}, as answered`,
        foreign.filter((row) => row.corpus === corpus),
      );
    line(
      'English originals, as answered',
      hybrid.filter((row) => row.lang === 'en'),
    );
    const unread = foreign.filter((row) => row.understood === false);
    if (unread.length > 0) {
      const fits = (subset: readonly MultilingualRow[]) => `top 1 ${fittedScale(subset).toFixed(3)}, top 10 ${fittedScale(subset, 'top10').toFixed(3)}`;
      lines.push('', `scale fitted on the ${unread.length} answers not understood: ${fits(unread)}`);
      for (const corpus of corpora) lines.push(`  on ${corpus} alone: ${fits(unread.filter((row) => row.corpus === corpus))}`);
    }
  }
  return lines.join('\n');
}
