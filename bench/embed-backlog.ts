/**
 * A catalog pushed while the store has a backlog to embed: how long until its tools have vectors.
 * The backlog is what a start queues (`enqueueMissing`): every stored tool without a vector for the
 * model, e.g. the whole store after an EMBED_MODEL change. Fresh writes go ahead of it.
 *
 * Each round writes `--backlog` tools (bench/lib/scale-catalog.ts) without the model to a new
 * PostgreSQL database, starts the service with the model on it (the start queues them all), PUTs a
 * catalog of `--fresh` other tools, and times from the PUT's answer until GET /v1/catalogs/{name}
 * reports every one embedded; it notes how much of the backlog was embedded by then.
 *
 *   npm run bench:backlog -- [--backlog 4000] [--fresh 32] [--rounds 3] [--queue in-process|bullmq]
 *                            [--pg postgres://postgres@127.0.0.1:5432] [--redis redis://127.0.0.1:6379]
 */
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { openPostgres } from '../src/store/database.js';
import { dropQueueKeys, pushInSlices } from './lib/catalog-writes.js';
import { startInProcess, type InProcessService } from './lib/in-process.js';
import { toolAt } from './lib/scale-catalog.js';
import { summarize } from './lib/stats.js';

const { values } = parseArgs({
  options: {
    backlog: { type: 'string', default: '4000' },
    fresh: { type: 'string', default: '32' },
    rounds: { type: 'string', default: '3' },
    queue: { type: 'string', default: 'in-process' },
    pg: { type: 'string', default: 'postgres://postgres@127.0.0.1:5432' },
    redis: { type: 'string', default: 'redis://127.0.0.1:6379' },
  },
});
const backlog = Number(values.backlog);
const fresh = Number(values.fresh);
const rounds = Number(values.rounds);
if (values.queue !== 'in-process' && values.queue !== 'bullmq') throw new Error(`--queue: "${values.queue}" is neither in-process nor bullmq`);
const LIMIT_MS = 600_000;

/** Tools `from` to `from + count - 1` of the generated catalog. */
const generated = (from: number, count: number) => Array.from({ length: count }, (_, i) => toolAt(from + i));

async function embedded(service: InProcessService, catalog: string): Promise<{ done: number; total: number }> {
  const response = await fetch(`${service.base}/v1/catalogs/${catalog}`);
  if (response.status !== 200) throw new Error(`GET ${catalog} answered ${response.status}`);
  return ((await response.json()) as { embedding: { done: number; total: number } }).embedding;
}

interface Round {
  fresh_ms: number;
  /** Backlog tools embedded when the fresh catalog's last vector landed. */
  backlog_done: number;
}

const admin = new pg.Client({ connectionString: `${values.pg}/postgres` });
await admin.connect();
const runs: Round[] = [];
try {
  for (let round = 0; round < rounds; round++) {
    const name = `toolsift_backlog_${Date.now().toString(36)}${randomBytes(3).toString('hex')}`;
    const prefix = `bench-backlog-${randomBytes(4).toString('hex')}`;
    await admin.query(`create database "${name}"`);
    const url = `${values.pg}/${name}`;
    try {
      const database = openPostgres(url);
      await database.migrate();
      const writer = await startInProcess({ EMBED_MODEL: 'none' }, database);
      await pushInSlices(writer.base, 'backlog', generated(0, backlog));
      await writer.close();

      const queueEnv: Record<string, string> = values.queue === 'bullmq' ? { REDIS_URL: values.redis!, QUEUE_PREFIX: prefix, EMBED_WORKER: 'inline' } : {};
      // The start queues every backlog tool (nothing of it has a vector for use-lite).
      const service = await startInProcess({ EMBED_MODEL: 'use-lite', CATALOG_WARMUP: 'false', ...queueEnv }, openPostgres(url));
      try {
        await pushInSlices(service.base, 'fresh', generated(backlog, fresh));
        const pushed = performance.now();
        for (;;) {
          const { done, total } = await embedded(service, 'fresh');
          if (done === total) break;
          if (performance.now() - pushed > LIMIT_MS) throw new Error(`fresh catalog: ${done} of ${total} embedded after ${LIMIT_MS / 1000} s`);
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        const fresh_ms = performance.now() - pushed;
        const { done: backlog_done } = await embedded(service, 'backlog');
        runs.push({ fresh_ms, backlog_done });
        console.error(
          `round ${round + 1}: ${fresh} fresh tools embedded ${fresh_ms.toFixed(0)} ms after their PUT; ${backlog_done} of ${backlog} backlog tools embedded by then`,
        );
      } finally {
        await service.close();
      }
    } finally {
      await admin.query(`drop database if exists "${name}" with (force)`);
      if (values.queue === 'bullmq') await dropQueueKeys(values.redis!, prefix);
    }
  }
} finally {
  await admin.end();
}
const fresh_ms = summarize(runs.map((run) => run.fresh_ms));
console.log(JSON.stringify({ queue: values.queue, backlog, fresh, rounds: runs, fresh_ms: { p50: fresh_ms.p50, min: fresh_ms.min, max: fresh_ms.max } }));
process.exit(0);
