import type { Logger } from '../logger.js';
import type { Db } from '../store/database.js';
import { documentsWithStaleTerms, replaceTerms } from '../store/tool-store.js';
import { documentTerms, TERMS_VERSION } from '../ranking/search-text.js';

const BATCH = 500;

/**
 * Recomputes the BM25 terms of documents stored by an older tokenizer or document recipe, so one
 * corpus never mixes two ways of counting. Runs at start-up; nothing to do costs one query.
 * Documents keep their content hash: only derived data changes.
 */
export async function refreshStaleTerms(db: Db, logger: Logger, version: number = TERMS_VERSION): Promise<number> {
  let refreshed = 0;
  // In hash order, each page past the last: one pass over the documents.
  for (let after: string | undefined; ; ) {
    const stale = await documentsWithStaleTerms(db, version, BATCH, after);
    if (stale.length === 0) break;
    await replaceTerms(
      db,
      stale.map((doc) => ({ hash: doc.hash, ...documentTerms(doc) })),
      version,
    );
    refreshed += stale.length;
    after = stale[stale.length - 1]!.hash;
  }
  if (refreshed > 0) logger.info({ refreshed, termsVersion: version }, 'recomputed BM25 terms of documents from an older recipe');
  return refreshed;
}
