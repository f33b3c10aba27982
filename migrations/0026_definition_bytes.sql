-- What each catalog row's definition takes, and each catalog's sum of them (kept by every write in
-- its transaction, like the token sums): TENANT_MAX_BYTES counts a tenant's catalogs by these.
-- Rows written by an older release leave it null; the sums read octet_length for those.
ALTER TABLE "catalog_tools" ADD COLUMN IF NOT EXISTS "definition_bytes" integer;--> statement-breakpoint
UPDATE "catalog_tools" SET "definition_bytes" = octet_length("definition"::text) WHERE "definition_bytes" IS NULL;--> statement-breakpoint
ALTER TABLE "catalogs" ADD COLUMN IF NOT EXISTS "definition_bytes" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
UPDATE "catalogs" c SET "definition_bytes" = coalesce((SELECT sum(ct."definition_bytes") FROM "catalog_tools" ct WHERE ct."catalog_id" = c."id"), 0);
