/**
 * Reading stored vectors into process: pgvector's text form parsed with JSON.parse (what the
 * service read before 2026-12-05) against its binary form (`vector_send`, decoded by
 * `vectorFromBinary`, what VectorCache reads on PostgreSQL now; PGlite reads text, whose bytea
 * parser is slower), alternating, for the same hashes; checks both
 * give the same float4s. Against any database with vectors of the model, e.g. one kept by
 * `npm run bench:scale -- --keep`:
 *
 *   npx tsx bench/probes/vector-read.ts --db postgres://postgres@127.0.0.1:5432/<kept> [--tools 3740] [--runs 5] [--model use-lite]
 *
 * Or `--pglite`: a new embedded store in a temporary directory, with `--tools` documents and random
 * 512-d vectors of the model (PGlite parses bytea in JavaScript; see vector-literal.ts `vectorColumn`).
 */
import { parseArgs } from 'node:util';
import { sql } from 'drizzle-orm';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openPglite, openPostgres, queryRows } from '../../src/store/database.js';
import { vectorFromBinary } from '../../src/store/vector-literal.js';
import { summarize } from '../lib/stats.js';

const { values } = parseArgs({
  options: {
    db: { type: 'string' },
    tools: { type: 'string', default: '3740' },
    runs: { type: 'string', default: '5' },
    model: { type: 'string', default: 'use-lite' },
    pglite: { type: 'boolean', default: false },
  },
});
if (!values.db && !values.pglite) throw new Error('--db postgres://... or --pglite is required');
const model = values.model!;
const dataDir = values.pglite ? mkdtempSync(join(tmpdir(), 'toolsift-vector-read-')) : undefined;
const database = dataDir ? await openPglite(dataDir) : await openPostgres(values.db!);
if (dataDir) {
  await database.migrate();
  await database.db.execute(
    sql`insert into tool_documents (hash, name, description, definition, doc_length)
        select md5(i::text), 't' || i, 'd', '{}'::json, 1 from generate_series(1, ${Number(values.tools)}::int) as i`,
  );
  await database.db.execute(
    sql`insert into tool_embeddings (hash, model, dimension, embedding)
        select d.hash, ${model}, 512, (select array_agg(random() - 0.5) from generate_series(1, 512) where d.hash is not null)::vector
        from tool_documents d`,
  );
}
const hashes = (
  await queryRows<{ hash: string }>(database.db, sql`select hash from tool_embeddings where model = ${model} order by hash limit ${Number(values.tools)}`)
).map((row) => row.hash);
const times = { textRead: [] as number[], textParse: [] as number[], binaryRead: [] as number[], binaryDecode: [] as number[] };
for (let run = 0; run < Number(values.runs); run++) {
  let started = performance.now();
  const text = await queryRows<{ hash: string; embedding: string }>(
    database.db,
    sql`select e.hash, e.embedding::text as embedding from unnest(${sql.param(hashes)}::text[]) as h(hash) join tool_embeddings e on e.hash = h.hash and e.model = ${model}`,
  );
  times.textRead.push(performance.now() - started);
  started = performance.now();
  const parsed = new Map(text.map((row) => [row.hash, Float32Array.from(JSON.parse(row.embedding) as number[])]));
  times.textParse.push(performance.now() - started);
  started = performance.now();
  const binary = await queryRows<{ hash: string; embedding: Uint8Array }>(
    database.db,
    sql`select e.hash, vector_send(e.embedding) as embedding from unnest(${sql.param(hashes)}::text[]) as h(hash) join tool_embeddings e on e.hash = h.hash and e.model = ${model}`,
  );
  times.binaryRead.push(performance.now() - started);
  started = performance.now();
  const decoded = new Map(binary.map((row) => [row.hash, vectorFromBinary(row.embedding)]));
  times.binaryDecode.push(performance.now() - started);
  for (const [hash, vector] of parsed) {
    const other = decoded.get(hash);
    if (!other || other.length !== vector.length || vector.some((value, i) => value !== other[i]))
      throw new Error(`the binary read of ${hash} differs from the text read`);
  }
}
await database.close();
if (dataDir) rmSync(dataDir, { recursive: true, force: true });
console.log(`${hashes.length} vectors of ${model} on ${values.pglite ? 'PGlite' : 'PostgreSQL'}, ${values.runs} runs, median [min .. max] ms:`);
for (const [name, ms] of Object.entries(times)) {
  const s = summarize(ms);
  console.log(`  ${name}: ${s.p50.toFixed(1)} [${s.min.toFixed(1)} .. ${s.max.toFixed(1)}]`);
}
