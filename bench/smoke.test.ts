import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';

const root = new URL('..', import.meta.url).pathname;

/** Runs a bench script from source to its end; its exit code and whole output. */
async function runBench(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', ...args], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += String(chunk)));
  child.stderr.on('data', (chunk) => (stderr += String(chunk)));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { code, stdout, stderr };
}

/** BENCH_PG (a server URL without a database) and BENCH_REDIS override a bench's local defaults. */
const benchServers = () => [
  ...(process.env.BENCH_PG ? ['--pg', process.env.BENCH_PG] : []),
  ...(process.env.BENCH_REDIS ? ['--redis', process.env.BENCH_REDIS] : []),
];

interface LoadSummary {
  rps: number;
  errors: number;
}

/**
 * The benches end to end at tiny sizes, so they cannot rot between the sessions that run them in
 * full. No speed is asserted: targets are the benches' own, judged in full-length runs, and a
 * missed target still ends in a complete report.
 */
describe.concurrent('benches, smoke runs', () => {
  // Two benches at once (bench/vitest.config.ts maxConcurrency): each is its own processes, scratch
  // databases, queue prefixes and free ports, and much of a tiny run is waiting (a start, a model
  // load, a timed load of a second). The built tree some of them start is built once, here, not
  // by two of them at once.
  beforeAll(async () => {
    const build = await runBench(['scripts/build.mjs']);
    expect(build.code, build.stderr.slice(-3000)).toBe(0);
  });

  it('npm run bench:start-time: /healthz, /readyz and a taken port, timed over one start', async () => {
    const { code, stdout, stderr } = await runBench(['bench/start-time.ts', '--starts', '1', '--model', 'none']);
    expect([0, 1], `bench exited with ${code}:\n${stderr.slice(-3000)}`).toContain(code);
    const summary = JSON.parse(stdout.trim().split('\n').at(-1)!) as Record<'healthz_ms' | 'readyz_ms' | 'taken_port_ms', { n: number; p50: number }>;
    for (const measure of ['healthz_ms', 'readyz_ms', 'taken_port_ms'] as const) expect(summary[measure]).toMatchObject({ n: 1, p50: expect.any(Number) });
    expect(summary.readyz_ms.p50).toBeGreaterThanOrEqual(summary.healthz_ms.p50);
  });

  it('npm run bench: the real service on PGlite answers every load without errors, and the report is complete', async () => {
    const { code, stdout, stderr } = await runBench(['bench/selector.ts', '--source', '--stores', 'pglite', '--duration', '1']);
    // Exit 1 is a missed speed target at one-second loads; anything else is a crash.
    expect([0, 1], `bench exited with ${code}:\n${stderr.slice(-3000)}`).toContain(code);
    const summary = JSON.parse(stdout.trim().split('\n').at(-1)!) as { pglite: Record<string, unknown> & { first_sight_ms: number } };
    const loads = ['c8', 'c1', 'c1_keywords'].map((name) => summary.pglite[name] as LoadSummary);
    expect(loads.map((load) => load.errors)).toEqual([0, 0, 0]);
    expect(loads.every((load) => load.rps > 0)).toBe(true);
    expect(summary.pglite.first_sight_ms).toBeGreaterThan(0);
    for (const phase of ['first_sight', 'c8', 'c1', 'c1_keywords']) expect(stdout).toMatch(new RegExp(`server split ${phase}: \\{"n":[1-9]`));
  });

  it('npm run bench -- --mix: the mixed load on PGlite runs every kind of request without errors', async () => {
    const { code, stdout, stderr } = await runBench(['bench/selector.ts', '--source', '--mix', '--stores', 'pglite', '--duration', '2']);
    expect([0, 1], `bench exited with ${code}:\n${stderr.slice(-3000)}`).toContain(code);
    const summary = JSON.parse(stdout.trim().split('\n').at(-1)!) as {
      pglite: { kinds: Record<string, { n: number; errors: number; empty: number }>; rssMb: { start: number; max: number } };
    };
    const kinds = summary.pglite.kinds;
    expect(Object.keys(kinds).sort()).toEqual(['catalog_search', 'new_list', 'remembered_list']);
    expect(Object.values(kinds).map((kind) => kind.errors)).toEqual([0, 0, 0]);
    expect(kinds.remembered_list!.n).toBeGreaterThan(0);
    expect(kinds.remembered_list!.empty + kinds.new_list!.empty).toBe(0);
    expect(summary.pglite.rssMb.max).toBeGreaterThanOrEqual(summary.pglite.rssMb.start);
  });

  it('bench:mcp: tokens, reach and both latency comparisons, at a tiny size', async () => {
    const { code, stdout, stderr } = await runBench(['bench/mcp.ts', '--rounds', '1', '--queries', '3', '--calls', '5']);
    expect(code, stderr.slice(-3000)).toBe(0);
    const run = JSON.parse(stdout.trim().split('\n').at(-1)!) as {
      all_definitions_tokens: number;
      toolsift_tokens_p50: number;
      search_p50_ms: { rest: number; mcp: number };
      call_p50_ms: { direct: number; through: number };
    };
    expect(run.all_definitions_tokens).toBeGreaterThan(run.toolsift_tokens_p50);
    expect(run.toolsift_tokens_p50).toBeGreaterThan(0);
    expect([run.search_p50_ms.rest, run.search_p50_ms.mcp, run.call_p50_ms.direct, run.call_p50_ms.through].every((value) => value > 0)).toBe(true);
  });

  it("ranking-experiments: its 'shipped hybrid' row equals npm run eval on livemcpbench, as its header claims", async () => {
    const experiments = await runBench(['bench/research/ranking-experiments.ts', '--sets', 'livemcpbench', '--only', 'no idea has this label']);
    expect(experiments.code, experiments.stderr.slice(-3000)).toBe(0);
    const shipped = /^\s+(\d\.\d{3})\s+(\d\.\d{3})\s+\d\.\d{3}\s+shipped hybrid$/m.exec(experiments.stdout);
    expect(shipped, experiments.stdout).not.toBeNull();

    const evaluation = await runBench([
      'src/cli/eval.ts',
      '--dataset',
      new URL('../../shared/eval/livemcpbench', import.meta.url).pathname,
      '--modes',
      'hybrid',
    ]);
    expect(evaluation.code, evaluation.stderr.slice(-3000)).toBe(0);
    // mode R@1 R@5 R@10 nDCG@10 ...
    const hybrid = /^hybrid\s+\S+\s+\S+\s+(\d\.\d{3})\s+(\d\.\d{3})/m.exec(evaluation.stdout);
    expect(hybrid, evaluation.stdout).not.toBeNull();
    expect(shipped!.slice(1, 3), `experiments: ${shipped![0]}\neval: ${hybrid![0]}`).toEqual(hybrid!.slice(1, 3));
  });

  it('catalog-search: one timed round of every livemcpbench query, in both modes, on PGlite', async () => {
    const { code, stdout, stderr } = await runBench(['bench/catalog-search.ts', '--rounds', '1']);
    expect(code, stderr.slice(-3000)).toBe(0);
    const run = JSON.parse(stdout.trim().split('\n').at(-1)!) as { store: string; queries: number; hybrid_ms_per_query: number[]; bm25_ms_per_query: number[] };
    expect(run).toMatchObject({ store: 'pglite', queries: 24 });
    expect([...run.hybrid_ms_per_query, ...run.bm25_ms_per_query]).toHaveLength(2);
    expect([...run.hybrid_ms_per_query, ...run.bm25_ms_per_query].every((ms) => ms > 0)).toBe(true);
  });

  it('exact-name-mentions: the counts behind the exact-name rule (README) still hold', async () => {
    const { code, stdout, stderr } = await runBench(['bench/research/exact-name-mentions.ts']);
    expect(code, stderr.slice(-3000)).toBe(0);
    expect(stdout).toContain('sealtools: prose words naming a tool 18, of them relevant 2; identifier-shaped or quoted 14, relevant 14');
    for (const set of ['livemcpbench', 'toolbench_stable']) {
      expect(stdout).toContain(`${set}: prose words naming a tool 0, of them relevant 0; identifier-shaped or quoted 0, relevant 0`);
    }
  });

  it('embed-model: the bare model at one thread, one chunk size and 16 texts prints every figure', async () => {
    const { code, stdout, stderr } = await runBench([
      'bench/research/embed-model.ts',
      '--threads=1',
      '--chunks=4',
      '--texts=16',
      '--repeats=1',
      '--latency-chunks=4',
    ]);
    expect(code, stderr.slice(-3000)).toBe(0);
    expect(stdout).toMatch(/^documents chunk= 4: median \d/m);
    expect(stdout).toMatch(/^query, idle \(ms\): median \d/m);
    expect(stdout).toMatch(/^query during a 256-text batch, chunk=4 \(ms\): median \d/m);
  });

  it('npm run bench:embed: 40 tools through the real queue (PostgreSQL + Redis) and a worker process, every vector stored', async () => {
    const { code, stdout, stderr } = await runBench(['bench/embed-queue.ts', '--limit', '40', '--runs', '1x1', '--rounds', '1', ...benchServers()]);
    // The bench checks itself that every hash got one vector and throws otherwise.
    expect(code, `bench:embed exited with ${code}:\n${stderr.slice(-3000)}\n${stdout.slice(-2000)}`).toBe(0);
    expect(stdout).toMatch(/^40 tool texts from /m);
    expect(stdout).toMatch(/\d+ jobs; PUT to first start/);
    expect(stdout).toMatch(/(PASS|FAIL) {2}1 x 1: median \d/);
  });

  it('npm run bench:vectors: both forms of the vector write on PostgreSQL, every vector stored, every figure reported', async () => {
    const servers = process.env.BENCH_PG ? ['--pg', process.env.BENCH_PG] : [];
    const { code, stdout, stderr } = await runBench(['bench/vector-writes.ts', '--vectors', '64', '--rounds', '2', ...servers]);
    // The bench counts the stored vectors after each round and throws when one is missing.
    expect(code, `bench:vectors exited with ${code}:\n${stderr.slice(-3000)}\n${stdout.slice(-2000)}`).toBe(0);
    const report = JSON.parse(stdout.trim().split('\n').at(-1)!) as {
      vectors: number;
      seconds: Record<string, { client: number[]; backend: number[]; wall: number[] }>;
    };
    expect(report.vectors).toBe(64);
    for (const form of ['binary', 'text']) {
      for (const figure of ['client', 'backend', 'wall'] as const) expect(report.seconds[form]![figure], `${form} ${figure}`).toHaveLength(2);
    }
  });

  it('npm run bench:memory: the built service without a model, every figure reported', async () => {
    const { code, stdout, stderr } = await runBench(['bench/memory.ts', '--configs', 'none', '--searches', '4']);
    expect(code, stderr.slice(-3000)).toBe(0);
    const { reports } = JSON.parse(stdout.trim().split('\n').at(-1)!) as {
      reports: Array<{ config: string; ready: { rss: number; heapUsed: number }; searched: { rss: number; peak: number; heapUsed: number; external: number } }>;
    };
    expect(reports.map((report) => report.config)).toEqual(['none']);
    expect(reports[0]!.ready.rss).toBeGreaterThan(0);
    expect(reports[0]!.ready.heapUsed).toBeGreaterThan(0);
    expect(reports[0]!.searched.peak).toBeGreaterThanOrEqual(reports[0]!.searched.rss);
    expect(reports[0]!.searched.external).toBeGreaterThan(0);
  });

  it('npm run bench:savings: one corpus in BM25 mode, its tokens reported and /metrics adding up', async () => {
    const { code, stdout, stderr } = await runBench(['bench/savings.ts', '--corpora', 'livemcpbench', '--queries', '4', '--model', 'none']);
    expect(code, stderr.slice(-3000)).toBe(0);
    const report = JSON.parse(stdout.trim().split('\n').at(-1)!) as {
      metrics_consistent: boolean;
      reports: Array<{ corpus: string; queries: number; catalog_tokens: { as_sent: number }; selected_tokens: { p50: number }; recall: number }>;
    };
    expect(report.metrics_consistent).toBe(true);
    expect(report.reports.map((row) => [row.corpus, row.queries])).toEqual([['livemcpbench', 4]]);
    expect(report.reports[0]!.catalog_tokens.as_sent).toBeGreaterThan(report.reports[0]!.selected_tokens.p50);
    expect(report.reports[0]!.selected_tokens.p50).toBeGreaterThan(0);
  });

  it('npm run bench:tool-search: every mode timed in every round, the same answers each round', async () => {
    const { code, stdout, stderr } = await runBench(['bench/tool-search.ts', '--tools', '60', '--queries', '4', '--rounds', '2', '--model', 'none']);
    // Exit 1 is a missed speed target at a tiny size; 2 (answers differ between rounds) or anything else fails.
    expect([0, 1], `bench exited with ${code}:\n${stderr.slice(-3000)}`).toContain(code);
    const report = JSON.parse(stdout.trim().split('\n').at(-1)!) as {
      tools: number;
      queries: number;
      answers_consistent: boolean;
      modes: Record<string, { p50_ms: number[]; p90_ms: number[] }>;
    };
    expect(report).toMatchObject({ tools: 60, queries: 4, answers_consistent: true });
    expect(Object.keys(report.modes)).toEqual(expect.arrayContaining(['catalog', 'inline']));
    expect(Object.keys(report.modes).length).toBeGreaterThanOrEqual(3);
    for (const mode of Object.values(report.modes)) expect(mode.p50_ms.every((ms) => ms > 0) && mode.p50_ms.length === 2).toBe(true);
  });

  it('npm run bench:outage: the selector, tool-search and MCP search_tools answer every turn of a partition from memory, with and without the breaker, and the store again once healed', async () => {
    const pg = process.env.BENCH_PG ? ['--pg', process.env.BENCH_PG] : [];
    const { code, stdout, stderr } = await runBench(['bench/store-outage.ts', '--model', 'none', '--queries', '3', ...pg]);
    expect(code, stderr.slice(-3000)).toBe(0);
    const phases = [
      'healthy',
      'partition_breaker',
      'partition_no_breaker',
      'tool_search_healthy',
      'tool_search_partition_breaker',
      'tool_search_partition_no_breaker',
      'mcp_search_healthy',
      'mcp_search_partition_breaker',
    ] as const;
    const report = JSON.parse(stdout.trim().split('\n').at(-1)!) as { breaker: boolean; healed_after_turns: number } & Record<
      (typeof phases)[number],
      { answered: number; ms: { n: number } }
    >;
    expect(report.breaker).toBe(true);
    for (const phase of phases) expect(report[phase], phase).toMatchObject({ answered: 3, ms: { n: 3 } });
    expect(report.healed_after_turns).toBeGreaterThanOrEqual(1);
  });

  it('npm run bench:refresh: a start on stale BM25 terms answers as the refreshed store, on both stores, each figure reported', async () => {
    const pg = process.env.BENCH_PG ? ['--pg', process.env.BENCH_PG] : [];
    for (const store of ['pglite', 'postgres']) {
      const { code, stdout, stderr } = await runBench([
        'bench/refresh-start.ts',
        '--size',
        '300',
        '--starts',
        '1',
        '--queries',
        '3',
        '--store',
        store,
        '--wait-refresh',
        ...pg,
      ]);
      // Exit 1 means an answer differed from the refreshed store's.
      expect(code, stderr.slice(-3000)).toBe(0);
      const report = JSON.parse(stdout.trim().split('\n').at(-1)!) as {
        store: string;
        starts: { first_answer_ms: number; different_answers: number; terms_at_first_answer: { state: string }; refresh_done_ms: number }[];
      };
      expect(report.store).toBe(store);
      expect(report.starts).toHaveLength(1);
      for (const start of report.starts) {
        expect(start.different_answers).toBe(0);
        expect(start.first_answer_ms).toBeGreaterThan(0);
        expect(start.refresh_done_ms).toBeGreaterThan(0);
      }
    }
  });

  it('npm run bench:start: a start on many catalogs, ready once every index is held, each figure reported', async () => {
    const pg = process.env.BENCH_PG ? ['--pg', process.env.BENCH_PG] : [];
    const { code, stdout, stderr } = await runBench(['bench/start-catalogs.ts', '--catalogs', '6', '--tools', '3', '--starts', '2', '--model', 'none', ...pg]);
    expect(code, stderr.slice(-3000)).toBe(0);
    const report = JSON.parse(stdout.trim().split('\n').at(-1)!) as {
      starts: { ready_ms: number; indexes_ms: number; vectors_ms: number | null; first_search_ms: number }[];
    };
    expect(report.starts).toHaveLength(2);
    for (const start of report.starts) {
      expect(start.ready_ms).toBeGreaterThan(0);
      // CATALOG_WARMUP: ready only once the catalogs are read, so every index is held by then (within a poll).
      expect(start.indexes_ms - start.ready_ms).toBeLessThan(1_000);
      expect(start.first_search_ms).toBeGreaterThan(0);
      expect(start.vectors_ms).toBeNull();
    }
  });

  it('npm run bench:backlog: a catalog pushed over a start-up backlog, embedded ahead of it, on both queues', async () => {
    for (const queue of ['in-process', 'bullmq']) {
      const { code, stdout, stderr } = await runBench([
        'bench/embed-backlog.ts',
        '--backlog',
        '400',
        '--fresh',
        '8',
        '--rounds',
        '1',
        '--queue',
        queue,
        ...benchServers(),
      ]);
      expect(code, `${queue}: ${stderr.slice(-3000)}`).toBe(0);
      const report = JSON.parse(stdout.trim().split('\n').at(-1)!) as { rounds: { fresh_ms: number; backlog_done: number }[] };
      expect(report.rounds).toHaveLength(1);
      expect(report.rounds[0]!.fresh_ms).toBeGreaterThan(0);
      // Behind the backlog (the order before), all 400 were embedded first.
      expect(report.rounds[0]!.backlog_done, queue).toBeLessThan(400);
    }
  });

  it("bench/probes/servers-carrying.ts: the tagged tools' servers built from a catalog index, each tag timed", async () => {
    const { code, stdout, stderr } = await runBench(['bench/probes/servers-carrying.ts', '--size', '2000', '--runs', '1', '--queries', '3']);
    expect(code, stderr.slice(-3000)).toBe(0);
    expect(stdout).toMatch(/^2000 tools, \d+ servers, \d+ tags/m);
    expect(stdout.match(/serversCarrying median \d/g)).toHaveLength(2);
    expect(stdout.match(/a query's terms only: median \d[^\n]*, 3 queries/g)).toHaveLength(2);
    expect(stdout.match(/servers' mean vectors: median \d/g)).toHaveLength(2);
  });

  it('npm run bench:new-queries: never-seen queries as written and with typos, each timed once', async () => {
    const { code, stdout, stderr } = await runBench([
      'bench/new-queries.ts',
      '--dataset',
      fileURLToPath(new URL('../../shared/eval/livemcpbench', import.meta.url)),
      '--queries',
      '3',
    ]);
    expect(code, stderr.slice(-3000)).toBe(0);
    const run = JSON.parse(stdout.trim().split('\n').at(-1)!) as { written_ms: number[]; typos_ms: number[] };
    expect(run.written_ms).toHaveLength(3);
    expect(run.typos_ms).toHaveLength(3);
    expect([...run.written_ms, ...run.typos_ms].every((ms) => ms > 0)).toBe(true);
  });

  it('npm run bench:scale: small catalogs on both stores, both modes, every figure reported', async () => {
    const pg = process.env.BENCH_PG ? ['--pg', process.env.BENCH_PG] : [];
    // 1,600 tools reach past bfcl's 1,460 untagged ones into livemcpbench's tagged ones.
    const { code, stdout, stderr } = await runBench([
      'bench/scale.ts',
      '--sizes',
      '300,1600',
      '--stores',
      'postgres,pglite',
      '--rounds',
      '1',
      '--queries',
      '4',
      '--slice',
      '250',
      ...pg,
    ]);
    // Targets are judged at 100,000 tools only: a tiny run exits 0 with a complete report.
    expect(code, stderr.slice(-3000)).toBe(0);
    const { reports } = JSON.parse(stdout.trim().split('\n').at(-1)!) as {
      reports: Array<{
        store: string;
        tools: number;
        push_tools_per_s: number;
        embed_tools_per_s: number;
        search_ms: Record<string, { n: number; p50: number }>;
        tagged_search_ms: Record<string, { n: number; p50: number }>;
        tag?: { tag: string; tools: number };
        first_search_after_write_ms: Record<string, number>;
        first_search_after_slice_ms: number;
        first_search_after_slice_samples: number[];
        slow_searches: Record<string, { at: number; ms: number; took_ms: number; gc: string[] }[]>;
        gc_during_searches: Record<string, Record<string, { count: number }>>;
        index_ready_after_write_ms: number;
        rss_mb: number;
      }>;
    };
    expect(reports.map((report) => `${report.store} ${report.tools}`)).toEqual(['postgres 300', 'postgres 1600', 'pglite 300', 'pglite 1600']);
    for (const report of reports) {
      expect(report.push_tools_per_s).toBeGreaterThan(0);
      expect(report.embed_tools_per_s).toBeGreaterThan(0);
      // The 300 are untagged; of the 1,600, 140 are tagged, and the pass uses the commonest tag.
      if (report.tools === 300) expect(report.tag).toBeUndefined();
      else expect(report.tag?.tools).toSatisfy((tools: number) => tools > 0 && tools <= 140);
      for (const mode of ['bm25', 'hybrid']) {
        expect(report.search_ms[mode]).toMatchObject({ n: 4 });
        if (report.tag) expect(report.tagged_search_ms[mode]).toMatchObject({ n: 4 });
        expect(report.first_search_after_write_ms[mode]).toBeGreaterThan(0);
        // Each slow search is one of the timed ones, and the service's own time is part of the client's.
        expect(report.gc_during_searches[mode]).toBeTypeOf('object');
        for (const slow of report.slow_searches[mode]!) {
          expect(slow.at).toBeLessThan(4);
          expect(slow.took_ms).toBeGreaterThan(0);
          expect(slow.took_ms).toBeLessThanOrEqual(slow.ms);
        }
      }
      expect(report.index_ready_after_write_ms).toBeGreaterThan(0);
      expect(report.first_search_after_slice_ms).toBeGreaterThan(0);
      expect(report.first_search_after_slice_samples).toHaveLength(5);
      expect(report.rss_mb).toBeGreaterThan(0);
    }
  });

  it('bench:gateway: /healthz idle and under huge upstream results, refused and relayed, at a tiny size', async () => {
    const { code, stdout, stderr } = await runBench(['bench/upstream-results.ts', '--mb', '2', '--clients', '1', '--seconds', '1', '--caps', '1mb,4mb']);
    expect(code, stderr.slice(-3000)).toBe(0);
    expect(stdout).toMatch(/\| 1mb \| [\d.]+ \/ [\d.]+ \/ [\d.]+ \(\d+\) \| [\d.]+ \/ [\d.]+ \/ [\d.]+ \(\d+\) \| [1-9]\d* refused, 0 relayed/);
    expect(stdout).toMatch(/\| 4mb \| .* \| 0 refused, [1-9]\d* relayed/);
  });

  it('bench:learned: the learned list alone and searches with learning on and off, at a tiny size on PGlite', async () => {
    const { code, stdout, stderr } = await runBench([
      'bench/learned.ts',
      '--tools',
      '2000',
      '--events',
      '2000',
      '--store',
      'pglite',
      '--queries',
      '5',
      '--rounds',
      '2',
    ]);
    expect(code, stderr.slice(-3000)).toBe(0);
    const report = JSON.parse(stdout.trim().split('\n').at(-1)!) as {
      off: { n: number };
      on: { n: number };
      listAlone: { n: number };
      distinctPastQueries: number;
      shown: number;
      eventsStored: number;
      sweepMs: number;
      sweepWindows: number;
    };
    // The sweep walked the events stored (none stale) in windows of 1,000 on PGlite.
    expect(report.eventsStored).toBeGreaterThan(0);
    expect(report.sweepWindows).toBe(Math.ceil(report.eventsStored / 1000));
    expect(report.sweepMs).toBeGreaterThan(0);
    expect(report.off.n).toBe(10);
    expect(report.on.n).toBe(10);
    expect(report.listAlone.n).toBe(10);
    expect(report.distinctPastQueries).toBeGreaterThan(0);
    expect(report.shown).toBe(10);
  });

  it('bench:code: the three tasks both ways with the same answers, the sandbox times and isolation under hostile programs, at a tiny size', async () => {
    const { code, stdout, stderr } = await runBench(['bench/code.ts', '--quick']);
    // The bench throws when a way's answer differs from the files' or a hostile program ends otherwise than at its limit.
    expect(code, stderr.slice(-3000)).toBe(0);
    const report = JSON.parse(stdout.trim().split('\n').at(-1)!) as {
      tasks: { task: string; step_tokens: number; code_tokens: number; step_ms: { n: number }; code_ms: { n: number } }[];
      times: Record<string, { n: number; p50: number }>;
      service_sandbox_start_ms: { n: number };
      isolation: Record<'idle' | 'cpu' | 'memory', { selector: { n: number }; healthz: { n: number }; runs: Record<string, number> }>;
    };
    expect(report.tasks.map((task) => task.task)).toEqual(['a', 'b', 'c']);
    for (const task of report.tasks) {
      expect(task.step_tokens, task.task).toBeGreaterThan(task.code_tokens);
      expect([task.step_ms.n, task.code_ms.n]).toEqual([2, 2]);
    }
    for (const [figure, summary] of Object.entries(report.times)) expect(summary.n, figure).toBe(2);
    expect(report.times.poolPerCallMs!.p50).toBeGreaterThan(0);
    expect(report.service_sandbox_start_ms.n).toBeGreaterThan(0);
    for (const phase of ['idle', 'cpu', 'memory'] as const) expect(report.isolation[phase]).toMatchObject({ selector: { n: 30 }, healthz: { n: 30 } });
    expect(Object.keys(report.isolation.cpu.runs)).toEqual(['CpuLimit']);
    expect(Object.keys(report.isolation.memory.runs)).toEqual(['MemoryLimit']);
  });

  it('bench:scan: the scanner report over the poison set and the four corpora', async () => {
    const { code, stdout, stderr } = await runBench(['bench/scan-tools.ts']);
    expect(code, stderr.slice(-3000)).toBe(0);
    for (const heading of ['Poisoned definitions by kind', 'Benign definitions', 'Leave one source out', 'Real tools', 'Cost per tool', 'As tool results'])
      expect(stdout).toContain(heading);
    // The result scan's table: every row counted, and the cost by size measured.
    expect(stdout).toMatch(/\| poison set, poisoned descriptions \| 49 \| \d+/);
    expect(stdout).toMatch(/\| 1048576 \| [\d.]+ \[/);
    expect(stderr).not.toContain('scan-tools:');
  });
});
