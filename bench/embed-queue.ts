/**
 * Throughput of the whole embedding path against the bare model, in one run on one machine:
 *
 *   queue path: PUT the catalog to a real server (DATABASE_URL + REDIS_URL, EMBED_WORKER=off),
 *               N separate `src/worker.ts` processes embed it from Redis jobs and write pgvector;
 *               timed from the PUT until the last job finished (its vectors committed), then
 *               checked: GET /v1/catalogs/{name} reports done == total and every hash has one vector.
 *   bare model: the same texts through createUseLiteEmbedder with the same total thread count,
 *               just before and just after the queue path (the ratio uses their mean).
 *
 *   npm run bench:embed -- [--catalog ../shared/eval/sealtools/catalog.jsonl] [--limit N]
 *                          [--size N]         instead of --catalog: bench:scale's first N tools
 *                                             (bench/lib/scale-catalog.ts), e.g. 100000; pushed as a
 *                                             PUT of 5,000 and POSTs of 5,000, as a platform team would
 *                          [--runs 1x2,2x1]   workers x EMBED_THREADS per worker
 *                          [--rounds 3]       the runs, interleaved, this many times: the ratio
 *                                             of one run moves by +-10% with this VM's drift, so
 *                                             each configuration ends with its median and range
 *                          [--concurrency 1] [--batch 32]
 *                          [--pg postgres://postgres@127.0.0.1:5432] [--redis redis://127.0.0.1:6379]
 *                          [--cpu-prof <dir>]   V8 CPU profiles of the server and worker processes
 *
 * Each run also counts CPU seconds (user + system, every thread, from /proc): the bare model's
 * process while it embeds, and the queue path's worker processes, server, Postgres backends and
 * Redis from the PUT until progress reads 100%. The machine is saturated in both, so their ratio
 * says how much work the path adds, and it does not move with the VM's drift as wall time does.
 *
 * Every run uses a scratch database (created and dropped here) and a scratch queue prefix, and
 * empties the store between runs, so every run ingests from scratch and every vector is really
 * computed.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { Redis } from 'ioredis';
import { Queue } from 'bullmq';
import { EMBED_QUEUE_NAME } from '../src/jobs/embed-queue.js';
import { embeddingText } from '../src/ranking/search-text.js';
import { normalizeTools } from '../src/catalog/tool-formats.js';
import { createUseLiteEmbedder } from '../src/embed/use-lite.js';
import { openPostgres } from '../src/store/database.js';
import { dropQueueKeys, pushInSlices } from './lib/catalog-writes.js';
import { toolAt } from './lib/scale-catalog.js';
import { processCpuSeconds } from './lib/process-cpu.js';
import { median } from './lib/stats.js';

const { values } = parseArgs({
  options: {
    catalog: { type: 'string', default: new URL('../../shared/eval/sealtools/catalog.jsonl', import.meta.url).pathname },
    limit: { type: 'string' },
    size: { type: 'string' },
    runs: { type: 'string', default: '1x2,2x1' },
    rounds: { type: 'string', default: '3' },
    concurrency: { type: 'string', default: '2' },
    batch: { type: 'string', default: '32' },
    pg: { type: 'string', default: 'postgres://postgres@127.0.0.1:5432' },
    redis: { type: 'string', default: 'redis://127.0.0.1:6379' },
    'cpu-prof': { type: 'string' },
  },
});

const raws: Array<Record<string, unknown>> = values.size
  ? Array.from({ length: Number(values.size) }, (_, i) => toolAt(i))
  : readFileSync(values.catalog!, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .slice(0, values.limit ? Number(values.limit) : undefined)
      .map((tool) => ({ name: tool.name, description: tool.description, inputSchema: tool.input_schema ?? tool.inputSchema, tags: tool.tags }));
const { tools, problems } = normalizeTools(raws);
if (problems.length > 0) throw new Error(`catalog has ${problems.length} invalid tools, first: ${problems[0]!.message}`);
const texts = tools.map((tool) => embeddingText(tool));
const configurations = values.runs!.split(',').map((run) => {
  const [workers, threads] = run.split('x').map(Number);
  if (!Number.isInteger(workers) || !Number.isInteger(threads) || workers! < 1 || threads! < 1) throw new Error(`--runs: "${run}" is not <workers>x<threads>`);
  return { workers: workers!, threads: threads! };
});
const rounds = Number(values.rounds);
if (!Number.isInteger(rounds) || rounds < 1) throw new Error(`--rounds must be a positive integer, got ${values.rounds}`);
/** Interleaved (1x2, 2x1, 1x2, 2x1, ...), so a slow minute hits every configuration alike. */
const runs = Array.from({ length: rounds }, () => configurations).flat();
/** Queue-path throughput over the bare model's, per configuration, in run order. */
const ratios = new Map<string, number[]>();
const TARGET_RATIO = 0.8;

/** How often the bench asks GET /v1/catalogs/{name} for progress while the queue path runs. */
const POLL_MS = 1000;

const runId = `${Date.now().toString(36)}${randomBytes(2).toString('hex')}`;
const dbName = `toolsift_bench_${runId}`;
const databaseUrl = `${values.pg}/${dbName}`;
const prefix = `bench-${runId}`;
const port = 18_000 + Math.floor(Math.random() * 2000);
const baseUrl = `http://127.0.0.1:${port}`;
const children = new Set<ChildProcess>();
const stopping = new WeakSet<ChildProcess>();

const admin = new pg.Client({ connectionString: `${values.pg}/postgres` });
await admin.connect();
await admin.query(`create database "${dbName}"`);
const database = openPostgres(databaseUrl, 2);
await database.migrate();

const env = (extra: Record<string, string>) => ({
  ...process.env,
  DATABASE_URL: databaseUrl,
  REDIS_URL: values.redis!,
  QUEUE_PREFIX: prefix,
  EMBED_MODEL: 'use-lite',
  EMBED_CONCURRENCY: values.concurrency!,
  EMBED_BATCH_SIZE: values.batch!,
  LOG_LEVEL: 'info',
  ...extra,
});

/** Starts `node --import tsx <script>` and resolves once its log says `readyMessage`. */
function startProcess(script: string, extra: Record<string, string>, readyMessage: string): Promise<ChildProcess> {
  const profile = values['cpu-prof'] ? ['--cpu-prof', '--cpu-prof-dir', path.resolve(values['cpu-prof'])] : [];
  const child = spawn(process.execPath, [...profile, '--import', 'tsx', script], { env: env(extra), stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  child.on('exit', (code, signal) => {
    children.delete(child);
    if (!stopping.has(child)) console.error(`${script} exited (${code ?? signal}):\n${log.slice(-3000)}`);
  });
  let log = '';
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (data: Buffer) => {
      log += data.toString();
      if (log.includes(readyMessage)) resolve(child);
    });
    child.stderr!.on('data', (data: Buffer) => (log += data.toString()));
    child.on('exit', (code) => reject(new Error(`${script} exited with ${code} before "${readyMessage}":\n${log.slice(-2000)}`)));
  });
}

async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  stopping.add(child);
  child.kill('SIGTERM');
  await exited;
}

/**
 * CPU used by groups of processes between `start()` and the last `sample()`. Each sample keeps
 * every process's latest reading, so a Postgres backend that exits mid-run keeps what it used
 * up to the sample before (the bench samples once a second).
 */
class CpuMeter {
  private readonly first = new Map<number, number>();
  private readonly last = new Map<number, { group: string; seconds: number }>();
  constructor(private readonly groups: () => Promise<Map<number, string>>) {}
  async start(): Promise<void> {
    for (const pid of (await this.groups()).keys()) this.first.set(pid, processCpuSeconds(pid) ?? 0);
  }
  async sample(): Promise<void> {
    for (const [pid, group] of await this.groups()) {
      const seconds = processCpuSeconds(pid);
      if (seconds !== undefined) this.last.set(pid, { group, seconds });
    }
  }
  /** Seconds per group; a process first seen after start() counts from zero. */
  totals(): Map<string, number> {
    const totals = new Map<string, number>();
    for (const [pid, { group, seconds }] of this.last) totals.set(group, (totals.get(group) ?? 0) + seconds - (this.first.get(pid) ?? 0));
    return totals;
  }
}

async function redisPid(): Promise<number | undefined> {
  const redis = new Redis(values.redis!);
  const info = await redis.info('server');
  await redis.quit();
  const pid = /process_id:(\d+)/.exec(info)?.[1];
  return pid === undefined ? undefined : Number(pid);
}

/** Texts/s of the bare model, and the CPU seconds its process used for them. */
async function bareModel(threads: number): Promise<{ throughput: number; cpuSeconds: number }> {
  const embedder = await createUseLiteEmbedder({ threads });
  await embedder.embedDocuments(texts.slice(0, threads * 8)); // warm every thread, like a started worker
  const cpuBefore = process.cpuUsage();
  const start = performance.now();
  await embedder.embedDocuments(texts);
  const seconds = (performance.now() - start) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  await embedder.close();
  return { throughput: texts.length / seconds, cpuSeconds: (cpu.user + cpu.system) / 1e6 };
}

async function queuePath(server: ChildProcess, workers: number, threads: number, round: number): Promise<{ throughput: number; cpu: Map<string, number> }> {
  const started = await Promise.all(
    Array.from({ length: workers }, () => startProcess('src/worker.ts', { EMBED_THREADS: String(threads) }, 'embedding worker started')),
  );
  // Every run starts from an empty store, so each pays the same REST ingestion (documents, terms).
  await database.db.execute('delete from catalogs' as never);
  await database.db.execute('delete from tool_documents' as never);
  const catalog = `bench-${round}`;
  const redis = await redisPid();
  const meter = new CpuMeter(async () => {
    const groups = new Map<number, string>();
    for (const worker of started) groups.set(worker.pid!, 'workers');
    groups.set(server.pid!, 'server');
    const backends = await admin.query<{ pid: number }>('select pid from pg_stat_activity where datname = $1', [dbName]);
    for (const { pid } of backends.rows) groups.set(pid, 'postgres');
    if (redis !== undefined) groups.set(redis, 'redis');
    return groups;
  });
  await meter.start();
  const start = Date.now(); // wall clock: compared with BullMQ's job stamps, taken in the worker processes
  await pushInSlices(baseUrl, catalog, raws);
  for (;;) {
    const { embedding } = (await (await fetch(`${baseUrl}/v1/catalogs/${catalog}`)).json()) as { embedding: { total: number; done: number; failed: number } };
    if (embedding.failed > 0) throw new Error(`${embedding.failed} tools failed to embed`);
    await meter.sample();
    if (embedding.done === embedding.total) break;
    // Each poll costs the service ~8 ms of CPU (API + Postgres), on the cores the model needs: at
    // 10 polls/s that was ~4% of the machine. The end is taken from the jobs' own stamps instead.
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
  const polled = (Date.now() - start) / 1000;
  await Promise.all(started.map(stopProcess));
  const seconds = (await reportJobTimes(start, polled)) / 1000;
  const rows = await database.db.execute('select count(*)::int as n, count(distinct hash)::int as hashes from tool_embeddings' as never);
  const { n, hashes } = (rows as unknown as { rows: { n: number; hashes: number }[] }).rows[0]!;
  if (n !== texts.length || hashes !== texts.length) throw new Error(`expected ${texts.length} vectors, found ${n} for ${hashes} hashes`);
  return { throughput: texts.length / seconds, cpu: meter.totals() };
}

/**
 * Where the time went, from BullMQ's own stamps: PUT to first job start, first start to last finish,
 * and time inside jobs. Returns the queue path's time, PUT to the last job's finish: a job finishes
 * only after its vectors are committed, so that is when the last vector was stored.
 */
async function reportJobTimes(start: number, polled: number): Promise<number> {
  const queue = new Queue(EMBED_QUEUE_NAME, { connection: { url: values.redis! } as never, prefix });
  const jobs = await queue.getCompleted(0, -1);
  const since = Math.min(...jobs.map((job) => job.processedOn!));
  const until = Math.max(...jobs.map((job) => job.finishedOn!));
  const inJobs = jobs.reduce((sum, job) => sum + (job.finishedOn! - job.processedOn!), 0);
  console.log(
    `  ${jobs.length} jobs; PUT to first start ${((since - start) / 1000).toFixed(1)} s, first start to last finish ` +
      `${((until - since) / 1000).toFixed(1)} s, ${(inJobs / 1000).toFixed(1)} job-seconds; progress read 100% at ${polled.toFixed(1)} s`,
  );
  await queue.obliterate({ force: true });
  await queue.close();
  return until - start;
}

try {
  const server = await startProcess('src/main.ts', { PORT: String(port), HOST: '127.0.0.1', EMBED_WORKER: 'off', EMBED_THREADS: '1' }, 'toolsift ready');
  console.log(
    `${texts.length} tool texts from ${values.size ? `bench:scale's catalog (${values.size} tools)` : values.catalog}; EMBED_CONCURRENCY=${values.concurrency} EMBED_BATCH_SIZE=${values.batch}; ${process.env.NODE_ENV ?? ''}`.trim(),
  );
  // This VM's speed drifts by 10-20% over tens of seconds, so the bare model is measured just
  // before and just after the queue path, and the queue path is compared with their mean.
  console.log('workers x threads | bare model texts/s (before, after) | queue path texts/s | ratio');
  let round = 0;
  for (const { workers, threads } of runs) {
    round += 1;
    const bareBefore = await bareModel(workers * threads);
    const queuedRun = await queuePath(server, workers, threads, round);
    const bareAfter = await bareModel(workers * threads);
    const [before, after, queued] = [bareBefore.throughput, bareAfter.throughput, queuedRun.throughput];
    const bare = (before + after) / 2;
    const label = `${workers} x ${threads}`;
    ratios.set(label, [...(ratios.get(label) ?? []), queued / bare]);
    console.log(
      `${workers} x ${threads}`.padEnd(18) +
        `| ${`${bare.toFixed(1)} (${before.toFixed(1)}, ${after.toFixed(1)})`.padStart(33)} | ${queued.toFixed(1).padStart(18)} | ${(queued / bare).toFixed(2)}`,
    );
    const bareCpu = (bareBefore.cpuSeconds + bareAfter.cpuSeconds) / 2;
    const queueCpu = [...queuedRun.cpu.values()].reduce((sum, seconds) => sum + seconds, 0);
    const parts = [...queuedRun.cpu].map(([group, seconds]) => `${group} ${seconds.toFixed(1)}`).join(', ');
    console.log(
      `  CPU seconds: bare model ${bareCpu.toFixed(1)}; queue path ${queueCpu.toFixed(1)} (${parts}); bare / queue ${(bareCpu / queueCpu).toFixed(2)}`,
    );
  }
  console.log(`\nqueue path / bare model, per configuration over ${rounds} interleaved round(s) (target >= ${TARGET_RATIO}):`);
  for (const [label, values] of ratios) {
    const verdict = median(values) >= TARGET_RATIO ? 'PASS' : 'FAIL';
    console.log(
      `  ${verdict}  ${label}: median ${median(values).toFixed(3)}, range ${Math.min(...values).toFixed(2)}-${Math.max(...values).toFixed(2)} (${values.map((value) => value.toFixed(2)).join(', ')})`,
    );
  }
  await stopProcess(server);
} finally {
  for (const child of children) child.kill('SIGKILL');
  await database.close();
  await admin.query(`drop database if exists "${dbName}" with (force)`);
  await admin.end();
  await dropQueueKeys(values.redis!, prefix);
}
