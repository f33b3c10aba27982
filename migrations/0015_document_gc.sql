-- Documents are shared by every catalog and tenant, and are also stored for tools that only arrive
-- inline (the selector, tool search); nothing removed them, so a tenant sending ever-new tool lists
-- grew the store forever and a deleted catalog's documents stayed. `last_used_at` is when a request
-- last used a document, or when it was stored; the background sweep (store/document-gc.ts) removes
-- the documents no catalog holds once that is older than DOCUMENT_RETENTION_HOURS. now() as the
-- default is stored once, not written into every row (PostgreSQL 11+), and gives every existing
-- document a whole retention window from the upgrade.
ALTER TABLE "tool_documents" ADD COLUMN IF NOT EXISTS "last_used_at" timestamp with time zone DEFAULT now() NOT NULL;
--> statement-breakpoint
-- The sweep walks the expired documents oldest first, a page at a time from where the last page
-- ended, so the documents catalogs hold (most of the expired ones: a catalog's are never touched)
-- are each read once a sweep. The time alone: the hash in every entry would double the index, and
-- a page's ties (one write's documents share its transaction's now()) are few enough to sort.
CREATE INDEX IF NOT EXISTS "tool_documents_last_used_idx" ON "tool_documents" USING btree ("last_used_at");
