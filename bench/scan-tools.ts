/**
 * How the tool-definition scanner (src/trust/scan-tool.ts) does on labelled data: recall on the
 * poisoned definitions of ../shared/eval/poison by kind, false positives on its benign ones and on
 * the 8,553 real tools of the four retrieval corpora, a leave-one-source-out view (a rule family
 * that only one source's cases trigger is likely fitted to that source's wording), and the cost
 * per tool. A definition counts as flagged when it has at least one high finding. A report, so it
 * always exits 0.
 *
 *   npx tsx bench/scan-tools.ts [--root ../shared/eval]
 */
import { existsSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { readJsonl } from '../src/eval/run-eval.js';
import { RESERVED_TOOL_NAMES } from '../src/trust/reserved-names.js';
import { isFlagged, NameIndex, scanResult, scanTool, type Finding, type ScanContext, type ScannedTool } from '../src/trust/scan-tool.js';
import { RESULT_SCAN_CHARS_DEFAULT } from '../src/mcp/result-scan.js';

const { values } = parseArgs({
  options: { root: { type: 'string', default: fileURLToPath(new URL('../../shared/eval', import.meta.url)) } },
});
const ROOT = resolve(values.root!);
const RESERVED = RESERVED_TOOL_NAMES;
const CORPORA = ['bfcl', 'livemcpbench', 'sealtools', 'toolbench_stable'];
const PASSES = 5;
/** Text of one result read, as RESULT_SCAN_MAX_CHARS's default. */
const RESULT_CHARS = RESULT_SCAN_CHARS_DEFAULT;

interface PoisonCase {
  id: string;
  name: string;
  description: string;
  inputSchema: unknown;
  label: 'poisoned' | 'benign';
  kind: string;
  source: string;
}

interface CatalogTool {
  name: string;
  description: string | null;
  input_schema: unknown;
}

const pct = (part: number, whole: number) => (whole === 0 ? '-' : `${((100 * part) / whole).toFixed(1)}%`);
const highCodes = (findings: Finding[]) => [...new Set(findings.filter((f) => f.severity === 'high').map((f) => f.code))].join(',');
const repository = (source: string) => source.split('@')[0]!;

function table(header: string[], rows: (string | number)[][]): void {
  console.log(`| ${header.join(' | ')} |`);
  console.log(`|${header.map(() => '---').join('|')}|`);
  for (const row of rows) console.log(`| ${row.join(' | ')} |`);
  console.log('');
}

function report(): ScannedTool[] {
  // --- the labelled poison set ------------------------------------------------------------------
  const poisonPath = `${ROOT}/poison/tools.dev.jsonl`;
  if (existsSync(poisonPath)) {
    const cases = readJsonl(poisonPath) as PoisonCase[];
    const context: ScanContext = { reservedNames: new NameIndex(RESERVED) };
    const scanned = cases.map((c) => {
      const findings = scanTool({ name: c.name, description: c.description, inputSchema: c.inputSchema }, context);
      return { ...c, findings, high: isFlagged(findings), any: findings.length > 0 };
    });

    console.log('## Poisoned definitions by kind (flagged = at least one high finding)\n');
    const poisoned = scanned.filter((c) => c.label === 'poisoned');
    const kinds = [...new Set(poisoned.map((c) => c.kind))].sort();
    table(
      ['kind', 'count', 'flagged high', 'flagged any', 'missed (id)'],
      [
        ...kinds.map((kind) => {
          const of = poisoned.filter((c) => c.kind === kind);
          const high = of.filter((c) => c.high).length;
          return [
            kind,
            of.length,
            `${high} (${pct(high, of.length)})`,
            of.filter((c) => c.any).length,
            of
              .filter((c) => !c.high)
              .map((c) => c.id)
              .join(' '),
          ];
        }),
        [
          '**all poisoned**',
          poisoned.length,
          `${poisoned.filter((c) => c.high).length} (${pct(poisoned.filter((c) => c.high).length, poisoned.length)})`,
          poisoned.filter((c) => c.any).length,
          '',
        ],
      ],
    );

    console.log('## Benign definitions of the poison set\n');
    const benign = scanned.filter((c) => c.label === 'benign');
    table(
      ['kind', 'count', 'flagged high', 'flagged any', 'flagged high (name: codes)'],
      [
        ...['benign_hard', 'benign'].map((kind) => {
          const of = benign.filter((c) => c.kind === kind);
          const high = of.filter((c) => c.high);
          return [
            kind,
            of.length,
            `${high.length} (${pct(high.length, of.length)})`,
            `${of.filter((c) => c.any).length} (${pct(of.filter((c) => c.any).length, of.length)})`,
            high.map((c) => `${c.name || c.id}: ${highCodes(c.findings)}`).join('; '),
          ];
        }),
        [
          '**all benign**',
          benign.length,
          `${benign.filter((c) => c.high).length} (${pct(benign.filter((c) => c.high).length, benign.length)})`,
          `${benign.filter((c) => c.any).length} (${pct(benign.filter((c) => c.any).length, benign.length)})`,
          '',
        ],
      ],
    );

    console.log('## Leave one source out\n');
    console.log(
      'Each source on its own; "by shared codes" counts its poisoned cases flagged by a code that also flags some other source\'s case ' +
        '(what is left if the rule families only that source triggers were fitted to it); "others" are the rates of all other sources together.\n',
    );
    const sources = [...new Set(scanned.map((c) => repository(c.source)))].sort();
    const highSet = (c: (typeof scanned)[number]) => new Set(c.findings.filter((f) => f.severity === 'high').map((f) => f.code));
    table(
      ['source', 'poisoned', 'flagged high', 'by shared codes', 'benign', 'benign flagged high', 'others: recall', 'others: benign FP'],
      sources.map((source) => {
        const own = scanned.filter((c) => repository(c.source) === source);
        const rest = scanned.filter((c) => repository(c.source) !== source);
        const [ownP, ownB, restP, restB] = [
          own.filter((c) => c.label === 'poisoned'),
          own.filter((c) => c.label === 'benign'),
          rest.filter((c) => c.label === 'poisoned'),
          rest.filter((c) => c.label === 'benign'),
        ];
        const hit = (list: typeof scanned) => list.filter((c) => c.high).length;
        const elsewhere = new Set(restP.flatMap((c) => [...highSet(c)]));
        const shared = ownP.filter((c) => [...highSet(c)].some((code) => elsewhere.has(code))).length;
        return [
          source,
          ownP.length,
          ownP.length ? `${hit(ownP)} (${pct(hit(ownP), ownP.length)})` : '-',
          ownP.length ? `${shared} (${pct(shared, ownP.length)})` : '-',
          ownB.length,
          ownB.length ? hit(ownB) : '-',
          pct(hit(restP), restP.length),
          pct(hit(restB), restB.length),
        ];
      }),
    );

    console.log(
      'Which sources each code fires high on (poisoned cases; a code that only one source triggers is suspect; "sole" = cases flagged by that code alone).\n',
    );
    const codes = new Map<string, { sources: Set<string>; cases: number; sole: number; benign: number }>();
    for (const c of scanned) {
      const own = new Set(c.findings.filter((f) => f.severity === 'high').map((f) => f.code));
      for (const code of own) {
        const entry = codes.get(code) ?? { sources: new Set(), cases: 0, sole: 0, benign: 0 };
        if (c.label === 'poisoned') {
          entry.sources.add(repository(c.source));
          entry.cases += 1;
          if (own.size === 1) entry.sole += 1;
        } else entry.benign += 1;
        codes.set(code, entry);
      }
    }
    table(
      ['code', 'poisoned cases', 'sole reason', 'sources', 'benign cases'],
      [...codes.entries()]
        .sort((a, b) => b[1].cases - a[1].cases)
        .map(([code, e]) => [code, e.cases, e.sole, `${e.sources.size}: ${[...e.sources].map((s) => s.split('/')[1]).join(', ')}`, e.benign]),
    );
  } else {
    console.log(`(no ${poisonPath}: poison tables skipped)\n`);
  }

  // --- real tools -------------------------------------------------------------------------------
  const corpora = CORPORA.filter((corpus) => existsSync(`${ROOT}/${corpus}/catalog.jsonl`)).map((corpus) => {
    const tools = (readJsonl(`${ROOT}/${corpus}/catalog.jsonl`) as CatalogTool[]).map(
      (t): ScannedTool => ({ name: t.name, description: t.description, inputSchema: t.input_schema }),
    );
    return { corpus, tools, context: { otherNames: new NameIndex(tools.map((t) => t.name)), reservedNames: new NameIndex(RESERVED) } satisfies ScanContext };
  });
  if (corpora.length > 0) {
    console.log('## Real tools (all benign)\n');
    let total = 0;
    let totalHigh = 0;
    table(
      ['corpus', 'tools', 'flagged high', 'flagged any', 'flagged high (name: codes)'],
      corpora.map(({ corpus, tools, context }) => {
        const results = tools.map((tool) => ({ tool, findings: scanTool(tool, context) }));
        const high = results.filter((r) => isFlagged(r.findings));
        total += tools.length;
        totalHigh += high.length;
        return [
          corpus,
          tools.length,
          `${high.length} (${pct(high.length, tools.length)})`,
          `${results.filter((r) => r.findings.length > 0).length}`,
          high.map((r) => `${r.tool.name}: ${highCodes(r.findings)}`).join('; '),
        ];
      }),
    );
    console.log(`All real tools: ${totalHigh} of ${total} flagged high (${pct(totalHigh, total)}).\n`);

    console.log('## Cost per tool\n');
    const all = corpora.flatMap(({ tools, context }) => tools.map((tool) => ({ tool, context })));
    for (const { tool, context } of all.slice(0, 500)) scanTool(tool, context); // warm up the JIT
    const passes: number[] = [];
    const perTool = new Float64Array(all.length);
    for (let pass = 0; pass < PASSES; pass++) {
      const started = process.hrtime.bigint();
      for (let i = 0; i < all.length; i++) {
        const one = process.hrtime.bigint();
        scanTool(all[i]!.tool, all[i]!.context);
        const took = Number(process.hrtime.bigint() - one) / 1000;
        if (pass === 0 || took < perTool[i]!) perTool[i] = took;
      }
      passes.push(Number(process.hrtime.bigint() - started) / 1000 / all.length);
    }
    const sortedPasses = [...passes].sort((a, b) => a - b);
    const sortedTools = [...perTool].sort((a, b) => a - b);
    table(
      ['tools', 'passes', 'median µs per tool (mean of a pass)', 'p99 µs per tool (best of passes)', 'max µs'],
      [
        [
          all.length,
          PASSES,
          sortedPasses[Math.floor(PASSES / 2)]!.toFixed(1),
          sortedTools[Math.floor(sortedTools.length * 0.99)]!.toFixed(1),
          sortedTools[sortedTools.length - 1]!.toFixed(1),
        ],
      ],
    );
  } else {
    console.log(`(no ${CORPORA.join(', ')} catalogs under ${ROOT}: real-tool and cost tables skipped)`);
  }
  return corpora.flatMap(({ tools }) => tools);
}

/**
 * The same rules over tool results (scanResult, RESULT_SCAN): the poison set's descriptions and
 * every real tool's description and definition as a result's text (there is no labelled set of
 * results; an injected result is the same words as a poisoned description), and the cost per size.
 */
async function results(tools: ScannedTool[]): Promise<void> {
  const poisonPath = `${ROOT}/poison/tools.dev.jsonl`;
  const asResult = (value: string) => ({ content: [{ type: 'text', text: value }] });
  const found = async (result: unknown) => (await scanResult(result, RESULT_CHARS)).findings.length > 0;
  const hits = async <T>(list: T[], result: (item: T) => unknown) => {
    const hit: T[] = [];
    for (const item of list) if (await found(result(item))) hit.push(item);
    return hit;
  };
  console.log('## As tool results (RESULT_SCAN: a result counts as flagged with at least one high finding of the result codes)\n');
  const rows: (string | number)[][] = [];
  if (existsSync(poisonPath)) {
    const cases = readJsonl(poisonPath) as PoisonCase[];
    for (const label of ['poisoned', 'benign'] as const) {
      const of = cases.filter((c) => c.label === label);
      const hit = await hits(of, (c) => asResult(c.description));
      rows.push([
        `poison set, ${label} descriptions`,
        of.length,
        `${hit.length} (${pct(hit.length, of.length)})`,
        label === 'benign' ? hit.map((c) => c.id).join(' ') : '',
      ]);
    }
  }
  if (tools.length > 0) {
    const hitText = await hits(tools, (t) => asResult(t.description ?? ''));
    rows.push([
      'real tools: description as text',
      tools.length,
      `${hitText.length} (${pct(hitText.length, tools.length)})`,
      hitText.map((t) => t.name).join(' '),
    ]);
    const hitJson = await hits(tools, (t) => ({ content: [], structuredContent: t }));
    rows.push([
      'real tools: definition as structuredContent',
      tools.length,
      `${hitJson.length} (${pct(hitJson.length, tools.length)})`,
      hitJson.map((t) => t.name).join(' '),
    ]);
  }
  table(['text', 'count', 'flagged', 'flagged (benign only)'], rows);
  if (tools.length === 0) return;
  // Cost by size: real descriptions joined into one text, and the definitions as JSON text; and the
  // longest the thread was held meanwhile (the event loop's largest delay, 1 ms resolution).
  const prose = tools.map((t) => t.description ?? '').join('\n');
  const json = JSON.stringify(tools);
  const sizes = [16 * 1024, 256 * 1024, 1024 * 1024];
  const timed = async (value: string) => {
    const runs: number[] = [];
    const delay = monitorEventLoopDelay({ resolution: 1 });
    delay.enable();
    for (let pass = 0; pass < PASSES; pass++) {
      const started = process.hrtime.bigint();
      await scanResult(asResult(value), value.length);
      runs.push(Number(process.hrtime.bigint() - started) / 1e6);
    }
    delay.disable();
    runs.sort((a, b) => a - b);
    return `${runs[Math.floor(PASSES / 2)]!.toFixed(1)} [${runs[0]!.toFixed(1)} .. ${runs[PASSES - 1]!.toFixed(1)}], held ${(delay.max / 1e6).toFixed(1)}`;
  };
  await timed(prose.slice(0, 64 * 1024)); // warm up the JIT
  const cells: (string | number)[][] = [];
  for (const size of sizes) {
    cells.push([
      size,
      await timed(prose.repeat(Math.ceil(size / prose.length)).slice(0, size)),
      await timed(json.repeat(Math.ceil(size / json.length)).slice(0, size)),
    ]);
  }
  table(['characters', 'ms, prose (median [min .. max] of passes), longest hold of the thread', 'ms, JSON'], cells);
}

try {
  await results(report());
} catch (error) {
  // A report, not a gate: say what went wrong and still exit 0.
  console.error(`scan-tools: ${(error as Error).stack ?? String(error)}`);
}
process.exitCode = 0;
