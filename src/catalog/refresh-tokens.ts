import type { Logger } from '../logger.js';
import { catalogRowsWithoutTokens, measureCatalogRows, recountCatalogTokens, setCatalogRowTokens } from '../store/catalog-store.js';
import type { Db } from '../store/database.js';
import { documentsWithoutTokens, setDocumentTokens } from '../store/tool-store.js';
import { countDefinitions, type TextCounter } from './tokens.js';

const BATCH = 500;

/**
 * Counts the definition tokens of documents and catalog rows stored by a release that did not count
 * them, and the bytes of rows stored without them, then sets each catalog's sums. Runs at start-up;
 * nothing to do costs three queries. Counting
 * takes ~40-80 us a tool, once.
 */
export async function refreshDefinitionTokens(db: Db, counter: TextCounter, logger: Logger): Promise<number> {
  let counted = 0;
  for (;;) {
    const uncounted = await documentsWithoutTokens(db, BATCH);
    if (uncounted.length === 0) break;
    const tokens = await countDefinitions(counter, uncounted);
    await setDocumentTokens(
      db,
      uncounted.map((doc, index) => ({ hash: doc.hash, ...tokens[index]! })),
    );
    counted += uncounted.length;
  }
  for (;;) {
    const rows = await catalogRowsWithoutTokens(db, BATCH);
    if (rows.length === 0) break;
    const asSent = await counter.countTexts(rows.map((row) => JSON.stringify(row.definition)));
    await setCatalogRowTokens(
      db,
      rows.map((row, index) => ({ catalogId: row.catalogId, name: row.name, asSent: asSent[index]! })),
    );
    counted += rows.length;
  }
  // Rows an older release wrote while this one ran (a rolling upgrade) have no size, and their catalogs' sums lack them.
  const measured = await measureCatalogRows(db);
  if (counted > 0 || measured > 0) {
    const catalogs = await recountCatalogTokens(db);
    logger.info({ counted, measured, catalogs }, 'counted the definition tokens and bytes of tools stored by an older release');
  }
  return counted + measured;
}
