-- What agents used after a search (issue 72): one row per (query, tool) event, per catalog, so
-- nothing learned crosses catalogs or tenants. `tool_hash` is the definition the event judged: a
-- tool whose definition changed, or that left the catalog, loses what was learned for the old one
-- (the learned list joins on the current hash). `caller` is a digest of the API key, never the key:
-- one caller's share of a tool's learned weight is bounded. `query_vector` is the query's embedding
-- by `query_model`, when one was at hand. Rows older than FEEDBACK_RETENTION_DAYS are swept.
CREATE TABLE IF NOT EXISTS "feedback_events" (
  "id" bigserial PRIMARY KEY,
  "catalog_id" integer NOT NULL REFERENCES "catalogs"("id") ON DELETE CASCADE,
  "query" text NOT NULL,
  "tool_name" text NOT NULL,
  "tool_hash" text NOT NULL,
  "caller" text NOT NULL,
  "strength" real NOT NULL,
  "query_model" text,
  "query_vector" real[],
  "created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "feedback_events_catalog_idx" ON "feedback_events" USING btree ("catalog_id", "id");
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "feedback_events_created_idx" ON "feedback_events" USING btree ("created_at");
