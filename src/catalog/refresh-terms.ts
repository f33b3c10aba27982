import type { Logger } from '../logger.js';
import type { Db } from '../store/database.js';
import { catalogRowsWithoutTokens, recountCatalogTokens, setCatalogRowTokens } from '../store/catalog-store.js';
import { documentsWithoutTokens, documentsWithStaleTerms, replaceTerms, setDocumentTokens } from '../store/tool-store.js';
import { documentTerms, TERMS_VERSION } from './search-text.js';
import { countDefinition, definitionTokens } from './tokens.js';

const BATCH = 500;

/**
 * Recomputes the BM25 terms of documents stored by an older tokenizer or document recipe, so one
 * corpus never mixes two ways of counting. Runs at start-up; nothing to do costs one query.
 * Documents keep their content hash: only derived data changes.
 */
export async function refreshStaleTerms(db: Db, logger: Logger, version: number = TERMS_VERSION): Promise<number> {
  let refreshed = 0;
  for (;;) {
    const stale = await documentsWithStaleTerms(db, version, BATCH);
    if (stale.length === 0) break;
    await replaceTerms(db, stale.map((doc) => ({ hash: doc.hash, ...documentTerms(doc) })), version);
    refreshed += stale.length;
  }
  if (refreshed > 0) logger.info({ refreshed, termsVersion: version }, 'recomputed BM25 terms of documents from an older recipe');
  return refreshed;
}

/**
 * Counts the definition tokens of documents and catalog rows stored by a release that did not count
 * them, then sets each catalog's sums. Runs at start-up; nothing to do costs two queries. Counting
 * takes ~40-80 us a tool, once.
 */
export async function refreshDefinitionTokens(db: Db, logger: Logger): Promise<number> {
  let counted = 0;
  for (;;) {
    const uncounted = await documentsWithoutTokens(db, BATCH);
    if (uncounted.length === 0) break;
    await setDocumentTokens(db, uncounted.map((doc) => ({ hash: doc.hash, ...definitionTokens(doc) })));
    counted += uncounted.length;
  }
  for (;;) {
    const rows = await catalogRowsWithoutTokens(db, BATCH);
    if (rows.length === 0) break;
    await setCatalogRowTokens(db, rows.map((row) => ({ catalogId: row.catalogId, name: row.name, asSent: countDefinition(row.definition) })));
    counted += rows.length;
  }
  if (counted > 0) {
    const catalogs = await recountCatalogTokens(db);
    logger.info({ counted, catalogs }, 'counted the definition tokens of tools stored by an older release');
  }
  return counted;
}
