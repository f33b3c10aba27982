-- Per-catalog tool count, kept by every catalog write in its transaction: a search reads it on every
-- request, and counting a 100,000-tool catalog's rows each time cost more than the search itself.
ALTER TABLE "catalogs" ADD COLUMN "tool_count" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
UPDATE "catalogs" c SET "tool_count" = (SELECT count(*) FROM "catalog_tools" ct WHERE ct."catalog_id" = c."id");
