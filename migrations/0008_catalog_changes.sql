-- The names each catalog revision changed (added, replaced or removed; null: every tool, as a
-- whole-catalog replace). A replica holding the in-process index of an older revision derives the
-- new one from these rows instead of reading the whole catalog again (search/catalog-index.ts).
-- Writers keep the last 100 revisions of each catalog.
CREATE TABLE IF NOT EXISTS "catalog_changes" (
	"catalog_id" integer NOT NULL,
	"revision" bigint NOT NULL,
	"names" text[],
	CONSTRAINT "catalog_changes_pk" PRIMARY KEY("catalog_id","revision")
);
--> statement-breakpoint
ALTER TABLE "catalog_changes" ADD CONSTRAINT "catalog_changes_catalog_id_catalogs_id_fk" FOREIGN KEY ("catalog_id") REFERENCES "public"."catalogs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
-- The dense server list's means of a few servers (those a revision changed) without a pass over the catalog.
CREATE INDEX IF NOT EXISTS "tool_documents_server_idx" ON "tool_documents" USING btree ("server");
