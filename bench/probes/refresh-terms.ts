/**
 * What a release that changes the BM25 document recipe (search-text.ts TERMS_VERSION) costs at its
 * first start: `refreshStaleTerms` recomputes every stored document's terms before the service
 * serves. Pushes `--size` generated tools (bench/lib/scale-catalog.ts) without a model, marks their
 * terms as of the previous version, and times the refresh, `--runs` times.
 *
 *   npx tsx bench/probes/refresh-terms.ts [--size 10000] [--runs 3] [--pg postgres://postgres@127.0.0.1:5432]
 *
 * Without --pg, an in-memory PGlite store; with it, a scratch database created and dropped here.
 */
import { execFileSync } from 'node:child_process';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { replaceCatalog } from '../../src/catalog/catalog-service.js';
import { refreshStaleTerms } from '../../src/catalog/refresh-terms.js';
import { TERMS_VERSION } from '../../src/ranking/search-text.js';
import { loadConfigOrExit } from '../../src/config.js';
import { createDeps } from '../../src/deps.js';
import { openPglite, openPostgres } from '../../src/store/database.js';
import { sql } from 'drizzle-orm';
import { toolAt } from '../lib/scale-catalog.js';
import { summarize } from '../lib/stats.js';

const { values } = parseArgs({ options: { size: { type: 'string', default: '10000' }, runs: { type: 'string', default: '3' }, pg: { type: 'string' } } });
const size = Number(values.size);
const name = `refresh_terms_${process.pid}`;
const url = values.pg ? `${values.pg.replace(/\/$/, '')}/${name}` : undefined;
if (url) execFileSync('createdb', ['-h', new URL(url).hostname, '-p', new URL(url).port || '5432', '-U', new URL(url).username || 'postgres', name]);
const database = url ? openPostgres(url) : await openPglite('memory://');
try {
  await database.migrate();
  const config = loadConfigOrExit({ ...process.env, LOG_LEVEL: 'warn', EMBED_MODEL: 'none', CATALOG_WARMUP: 'false', DATABASE_URL: url ?? '' });
  const logger = pino({ level: 'warn' });
  const deps = await createDeps(config, { database, logger });
  try {
    const pushed = performance.now();
    for (let from = 0; from < size; from += 5_000) {
      await replaceCatalog(
        deps.catalog,
        { tenant: 'default', name: `refresh-${from}` },
        Array.from({ length: Math.min(5_000, size - from) }, (_, i) => toolAt(from + i)),
      );
    }
    console.log(`${size} tools pushed in ${((performance.now() - pushed) / 1000).toFixed(1)} s (${url ? 'PostgreSQL' : 'PGlite'})`);
    const ms: number[] = [];
    let refreshed = 0;
    for (let run = 0; run < Number(values.runs); run++) {
      await database.db.execute(sql`update tool_documents set terms_version = ${TERMS_VERSION - 1}::int where terms_version = ${TERMS_VERSION}::int`);
      const started = performance.now();
      refreshed = await refreshStaleTerms(database.db, logger);
      ms.push(performance.now() - started);
    }
    const stats = summarize(ms);
    console.log(
      `refreshStaleTerms: ${refreshed} documents, median ${(stats.p50! / 1000).toFixed(1)} s [${(stats.min! / 1000).toFixed(1)} .. ${(stats.max! / 1000).toFixed(1)}], ${values.runs} runs; ${((refreshed / stats.p50!) * 1000).toFixed(0)} documents/s`,
    );
  } finally {
    await deps.close();
  }
} finally {
  await database.close();
  if (url)
    execFileSync('dropdb', ['-h', new URL(url).hostname, '-p', new URL(url).port || '5432', '-U', new URL(url).username || 'postgres', '--if-exists', name]);
}
