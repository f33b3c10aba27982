-- pgvector backs tool_embeddings; drizzle-kit never emits CREATE EXTENSION, so it lives here.
CREATE EXTENSION IF NOT EXISTS vector;
