-- Each model has its own dimension, so the HNSW cosine index is a partial expression index per
-- model. This one serves the default model (USE Lite, 512-d); the service creates the same kind of
-- index for any other EMBED_MODEL at start-up (store/vector-index.ts).
CREATE INDEX IF NOT EXISTS "tool_embeddings_hnsw_use_lite" ON "tool_embeddings"
  USING hnsw (("embedding"::vector(512)) vector_cosine_ops) WHERE "model" = 'use-lite';
