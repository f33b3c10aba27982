import { createHash } from 'node:crypto';
import { EMBED_TEXT_VERSION, embeddingText } from '../ranking/search-text.js';
import type { Db } from '../store/database.js';
import { documentsForEmbedding, hashesWithoutVector, relabelUnchangedVectors, writeVectors, type VectorRecipe } from '../store/embedding-store.js';
import { inBackground } from '../store/priority.js';
import type { Embedder } from './embedder.js';

/** The vectors this release computes for `model`: from the current embedding text recipe. */
export function currentRecipe(model: string): VectorRecipe {
  return { model, textVersion: EMBED_TEXT_VERSION };
}

/** Identifies an embedded text: stored beside its vector, compared when the recipe changes. */
export function embeddingTextHash(text: string): string {
  return createHash('sha256').update(text).digest('base64url');
}

/**
 * The unit of embedding work, shared by every queue: read the documents behind `hashes` that still
 * lack a current vector for the embedder's model, embed their search text, write the batch in one
 * statement. A vector from an older text recipe whose text did not change is relabelled instead
 * (no model call). Idempotent: hashes already embedded (by another worker, or an earlier try) are
 * skipped. Returns how many vectors were written or relabelled.
 */
export function embedDocuments(db: Db, embedder: Embedder, hashes: string[]): Promise<number> {
  // Nobody waits for a vector: the embedded store runs a request's statements first (priority.ts).
  return inBackground(() => embedNow(db, embedder, hashes));
}

async function embedNow(db: Db, embedder: Embedder, hashes: string[]): Promise<number> {
  const recipe = currentRecipe(embedder.modelId);
  const missing = await hashesWithoutVector(db, recipe, hashes);
  if (missing.length === 0) return 0;
  const documents = (await documentsForEmbedding(db, missing)).map((doc) => {
    const text = embeddingText(doc);
    return { hash: doc.hash, text, textHash: embeddingTextHash(text) };
  });
  const relabelled = new Set(await relabelUnchangedVectors(db, recipe, documents));
  const toEmbed = documents.filter((doc) => !relabelled.has(doc.hash));
  if (toEmbed.length > 0) {
    const vectors = await embedder.embedDocuments(toEmbed.map((doc) => doc.text));
    await writeVectors(
      db,
      recipe,
      toEmbed.map((doc, index) => ({ hash: doc.hash, vector: vectors[index]!, textHash: doc.textHash })),
    );
  }
  return documents.length;
}
