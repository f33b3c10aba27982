/**
 * A start of the service on a database holding many catalogs, as a platform team's replica sees a
 * deploy: how long until `/readyz` says ready, until every catalog's index is held (CATALOG_WARMUP
 * reads them most recently written first, while CATALOG_INDEX_MEMORY has room), and, with the
 * model, until every small catalog's vectors are held (read just after ready, while the 128 MiB
 * vector budget has room); and the first search of the oldest catalog (read last) once ready.
 *
 * It writes `--catalogs` catalogs of `--tools` distinct tools each (bench/lib/scale-catalog.ts) to a
 * new PostgreSQL database, waits for their embeddings, then starts the service `--starts` times
 * on it (PostgreSQL only: one process at a time holds a PGlite directory, and the start is what is
 * timed, not the store's files).
 *
 *   npm run bench:start -- [--catalogs 400] [--tools 25] [--starts 3] [--model use-lite|none]
 *                          [--pg postgres://postgres@127.0.0.1:5432]
 */
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { getCatalog, type CatalogSummary } from '../src/store/catalog-store.js';
import { openPostgres } from '../src/store/database.js';
import { startInProcess } from './lib/in-process.js';
import { toolAt } from './lib/scale-catalog.js';
import { summarize } from './lib/stats.js';

const { values } = parseArgs({
  options: {
    catalogs: { type: 'string', default: '400' },
    tools: { type: 'string', default: '25' },
    starts: { type: 'string', default: '3' },
    model: { type: 'string', default: 'use-lite' },
    pg: { type: 'string', default: 'postgres://postgres@127.0.0.1:5432' },
  },
});
const catalogs = Number(values.catalogs);
const tools = Number(values.tools);
const starts = Number(values.starts);
const LIMIT_MS = 300_000;

const name = `toolsift_start_${Date.now().toString(36)}${randomBytes(3).toString('hex')}`;
const admin = new pg.Client({ connectionString: `${values.pg}/postgres` });
await admin.connect();
await admin.query(`create database "${name}"`);
const url = `${values.pg}/${name}`;

interface Start {
  ready_ms: number;
  indexes_ms: number;
  /** With the model: every catalog's vectors held; null without it. */
  vectors_ms: number | null;
  /** The oldest catalog's first search once ready (hybrid with the model, else BM25). */
  first_search_ms: number;
}

const until = async (what: string, began: number, done: () => boolean) => {
  while (!done()) {
    if (performance.now() - began > LIMIT_MS) throw new Error(`${what}: not within ${LIMIT_MS / 1000} s of the start`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return performance.now() - began;
};

try {
  // The catalogs, written one after another (the last written is the newest), and their embeddings.
  const database = openPostgres(url);
  await database.migrate();
  const writer = await startInProcess({ EMBED_MODEL: values.model!, CATALOG_WARMUP: 'false' }, database);
  const names = Array.from({ length: catalogs }, (_, c) => `team-${String(c).padStart(4, '0')}`);
  const written = performance.now();
  for (const [c, catalog] of names.entries()) {
    const body = { tools: Array.from({ length: tools }, (_, t) => toolAt(c * tools + t)) };
    const response = await fetch(`${writer.base}/v1/catalogs/${catalog}`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (response.status !== 200) throw new Error(`PUT ${catalog} answered ${response.status}: ${(await response.text()).slice(0, 300)}`);
  }
  await writer.deps.queue?.whenIdle();
  // Each catalog's row as the starts will find it (nothing writes after this).
  const rows: CatalogSummary[] = [];
  for (const catalog of names) rows.push((await getCatalog(writer.deps.search.db, 'default', catalog))!);
  console.error(
    `${catalogs} catalogs of ${tools} tools written${values.model === 'none' ? '' : ' and embedded'} in ${((performance.now() - written) / 1000).toFixed(1)} s`,
  );
  await writer.close();

  const runs: Start[] = [];
  for (let run = 0; run < starts; run++) {
    const began = performance.now();
    const service = await startInProcess({ EMBED_MODEL: values.model!, CATALOG_WARMUP: 'true' }, openPostgres(url));
    try {
      while ((await fetch(`${service.base}/readyz`)).status !== 200) {
        if (performance.now() - began > LIMIT_MS) throw new Error('not ready');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      const ready_ms = performance.now() - began;
      // The oldest catalog's first search, while the held indexes and vectors are watched.
      const search = async () => {
        const query = toolAt(0).description ?? toolAt(0).name;
        const searched = performance.now();
        const response = await fetch(`${service.base}/v1/catalogs/${names[0]}/search`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ query, top_k: 5 }),
        });
        if (response.status !== 200) throw new Error(`search answered ${response.status}`);
        await response.arrayBuffer();
        return performance.now() - searched;
      };
      const model = service.deps.search.embedder?.modelId;
      const [first_search_ms, indexes_ms, vectors_ms] = await Promise.all([
        search(),
        until('indexes', began, () => rows.every((row) => service.deps.search.catalogIndexes!.held(row) !== undefined)),
        model ? until('vectors', began, () => rows.every((row) => service.deps.search.catalogVectors!.held(row, model) !== undefined)) : null,
      ]);
      runs.push({ ready_ms, indexes_ms, vectors_ms, first_search_ms });
      console.error(
        `start ${run + 1}: ready ${ready_ms.toFixed(0)} ms; every index held ${indexes_ms.toFixed(0)} ms` +
          `${vectors_ms === null ? '' : `; every catalog's vectors held ${vectors_ms.toFixed(0)} ms`}; the oldest catalog's first search ${first_search_ms.toFixed(1)} ms`,
      );
    } finally {
      await service.close();
    }
  }
  const median = (pick: (run: Start) => number | null) => {
    const list = runs.map(pick).filter((ms): ms is number => ms !== null);
    return list.length === 0 ? null : summarize(list).p50;
  };
  console.log(
    JSON.stringify({
      catalogs,
      tools,
      model: values.model,
      starts: runs,
      median: {
        ready_ms: median((run) => run.ready_ms),
        indexes_ms: median((run) => run.indexes_ms),
        vectors_ms: median((run) => run.vectors_ms),
        first_search_ms: median((run) => run.first_search_ms),
      },
    }),
  );
} finally {
  await admin.query(`drop database if exists "${name}" with (force)`);
  await admin.end();
}
process.exit(0);
