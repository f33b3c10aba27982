import { embeddingText } from '../catalog/search-text.js';
import type { Db } from '../store/database.js';
import { documentsForEmbedding, hashesWithoutVector, writeVectors } from '../store/embedding-store.js';
import type { Embedder } from './embedder.js';

/**
 * The unit of embedding work, shared by every queue: read the documents behind `hashes` that still
 * lack a vector for the embedder's model, embed their search text, write the batch in one
 * statement. Idempotent: hashes already embedded (by another worker, or an earlier try) are skipped.
 * Returns how many vectors were written.
 */
export async function embedDocuments(db: Db, embedder: Embedder, hashes: string[]): Promise<number> {
  const missing = await hashesWithoutVector(db, embedder.modelId, hashes);
  if (missing.length === 0) return 0;
  const documents = await documentsForEmbedding(db, missing);
  const vectors = await embedder.embedDocuments(documents.map((doc) => embeddingText(doc)));
  await writeVectors(
    db,
    embedder.modelId,
    documents.map((doc, index) => ({ hash: doc.hash, vector: vectors[index]! })),
  );
  return documents.length;
}
