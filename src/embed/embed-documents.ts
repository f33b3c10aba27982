import { EMBED_TEXT_VERSION, embeddingText } from '../catalog/search-text.js';
import type { Db } from '../store/database.js';
import { documentsForEmbedding, hashesWithoutVector, writeVectors, type VectorRecipe } from '../store/embedding-store.js';
import type { Embedder } from './embedder.js';

/** The vectors this release computes for `model`: from the current embedding text recipe. */
export function currentRecipe(model: string): VectorRecipe {
  return { model, textVersion: EMBED_TEXT_VERSION };
}

/**
 * The unit of embedding work, shared by every queue: read the documents behind `hashes` that still
 * lack a current vector for the embedder's model, embed their search text, write the batch in one
 * statement. Idempotent: hashes already embedded (by another worker, or an earlier try) are skipped.
 * Returns how many vectors were written.
 */
export async function embedDocuments(db: Db, embedder: Embedder, hashes: string[]): Promise<number> {
  const recipe = currentRecipe(embedder.modelId);
  const missing = await hashesWithoutVector(db, recipe, hashes);
  if (missing.length === 0) return 0;
  const documents = await documentsForEmbedding(db, missing);
  const vectors = await embedder.embedDocuments(documents.map((doc) => embeddingText(doc)));
  await writeVectors(
    db,
    recipe,
    documents.map((doc, index) => ({ hash: doc.hash, vector: vectors[index]! })),
  );
  return documents.length;
}
