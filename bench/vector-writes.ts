/**
 * What writing the embedding queue's vectors costs on PostgreSQL, per form: pgvector's binary input
 * (what the service sends through node-postgres) against the text literal (what PGlite takes, and what
 * PostgreSQL took before). Both through `writeVectors`, 32 vectors a call as a job writes them; the
 * text form by handing it an executor without node-postgres's client (`sendsBinaryParameters` false).
 * Reports the CPU of this process (formatting, driver, socket) and of the PostgreSQL backend (parsing,
 * the insert), medians and ranges over alternating rounds. Without `--index` the model's HNSW index is
 * dropped, so the backend's figure is the statement's own cost rather than the index's.
 *
 *   npx tsx bench/vector-writes.ts [--vectors 4000] [--rounds 4] [--index]
 *                                  [--pg postgres://postgres@127.0.0.1:5432]
 *
 * Runs in a scratch database (created and dropped here). The last line is the report as JSON.
 */
import { parseArgs } from 'node:util';
import { sql } from 'drizzle-orm';
import pg from 'pg';
import { openPostgres, queryRows, type Db } from '../src/store/database.js';
import { writeVectors } from '../src/store/embedding-store.js';
import { USE_LITE_DIMENSION, USE_LITE_MODEL_ID } from '../src/embed/use-lite.js';
import { seededRandom } from '../src/eval/seeded-random.js';
import { processCpuSeconds } from './lib/process-cpu.js';
import { medianAndRange } from './lib/stats.js';

const { values } = parseArgs({
  options: {
    vectors: { type: 'string', default: '4000' },
    rounds: { type: 'string', default: '4' },
    index: { type: 'boolean', default: false },
    pg: { type: 'string', default: 'postgres://postgres@127.0.0.1:5432' },
  },
});
const count = Number(values.vectors);
const rounds = Number(values.rounds);
if (!Number.isInteger(count) || count < 32) throw new Error(`--vectors must be an integer of at least 32, got ${values.vectors}`);
if (!Number.isInteger(rounds) || rounds < 1) throw new Error(`--rounds must be a positive integer, got ${values.rounds}`);
/** A job's batch (EMBED_BATCH_SIZE's default). */
const BATCH = 32;

const admin = new pg.Client({ connectionString: `${values.pg}/postgres` });
await admin.connect();
const dbName = `toolsift_vector_writes_${Date.now().toString(36)}`;
await admin.query(`create database "${dbName}"`);
const database = openPostgres(`${values.pg}/${dbName}`, 1);
try {
  await database.migrate();
  const { db } = database;
  // Vectors need no tool documents here: the bench times the write, not the catalog.
  await db.execute(sql.raw('alter table tool_embeddings drop constraint tool_embeddings_hash_tool_documents_hash_fk'));
  if (!values.index) await db.execute(sql.raw('drop index tool_embeddings_hnsw_use_lite'));

  const random = seededRandom(7);
  const unitVector = (): number[] => {
    const vector = Array.from({ length: USE_LITE_DIMENSION }, () => random() - 0.5);
    const norm = Math.hypot(...vector);
    return vector.map((value) => value / norm);
  };
  /** CPU seconds of this database's backends (user + system, from /proc: same machine). */
  const backendCpu = async (): Promise<number> => {
    const { rows } = await admin.query<{ pid: number }>('select pid from pg_stat_activity where datname = $1', [dbName]);
    return rows.reduce((sum, { pid }) => sum + (processCpuSeconds(pid) ?? 0), 0);
  };
  const forms: Record<string, Db> = {
    binary: db,
    // The same statements without node-postgres's client in sight: the text literal, as on PGlite.
    text: { execute: db.execute.bind(db) } as unknown as Db,
  };
  const recipe = { model: USE_LITE_MODEL_ID, textVersion: 1 };
  const samples: Record<string, { client: number[]; backend: number[]; wall: number[] }> = {
    binary: { client: [], backend: [], wall: [] },
    text: { client: [], backend: [], wall: [] },
  };
  for (let round = 0; round < rounds; round++) {
    // Alternating which form goes first, so drift hits both alike.
    for (const form of round % 2 === 0 ? ['binary', 'text'] : ['text', 'binary']) {
      await db.execute(sql.raw('truncate tool_embeddings'));
      const items = Array.from({ length: count }, (_, i) => ({ hash: `${form}-${round}-${i}`, vector: unitVector(), textHash: `text-${i}` }));
      await writeVectors(forms[form]!, recipe, items.slice(0, 8)); // connection and plan warmed
      const backendBefore = await backendCpu();
      const clientBefore = process.cpuUsage();
      const started = performance.now();
      for (let start = 8; start < count; start += BATCH) await writeVectors(forms[form]!, recipe, items.slice(start, start + BATCH));
      const wall = (performance.now() - started) / 1000;
      const client = process.cpuUsage(clientBefore);
      samples[form]!.wall.push(wall);
      samples[form]!.client.push((client.user + client.system) / 1e6);
      samples[form]!.backend.push((await backendCpu()) - backendBefore);
      const [row] = await queryRows<{ stored: number }>(db, sql`select count(*)::int as stored from tool_embeddings`);
      if (row?.stored !== count) throw new Error(`${form}: ${row?.stored} of ${count} vectors stored`);
    }
  }
  console.log(
    `${count} vectors of ${USE_LITE_DIMENSION} dimensions, ${BATCH} a call, ${rounds} rounds, HNSW index ${values.index ? 'on' : 'dropped'}; seconds:`,
  );
  for (const [form, figures] of Object.entries(samples)) {
    console.log(
      `  ${form.padEnd(6)} wall ${medianAndRange(figures.wall, 2)}; this process's CPU ${medianAndRange(figures.client, 2)}; backend CPU ${medianAndRange(figures.backend, 2)}`,
    );
  }
  console.log(JSON.stringify({ vectors: count, rounds, index: values.index, seconds: samples }));
} finally {
  await database.close();
  await admin.query(`drop database "${dbName}"`);
  await admin.end();
}
