-- Trust at the gateway (issue 70). Each catalog row says which upstream synced it (null: pushed over
-- REST), so a call reaches only the upstream that listed the tool and a name held by one source is
-- never taken over by another. Each upstream's tools are pinned: `upstream_tools` keeps, per listed
-- tool, the hash of what the upstream lists now, the hash approved, and the hash rejected; only a
-- tool whose current hash is its approved one is in the catalog. `pinned_at` null means the next
-- sync pins what it finds as a registration does: upstreams registered by an older release get
-- their pins from their first sync on this one, with the scanner's verdict.
ALTER TABLE "catalog_tools" ADD COLUMN IF NOT EXISTS "upstream" text;
--> statement-breakpoint
UPDATE "catalog_tools" ct SET "upstream" = d."server"
  FROM "tool_documents" d
  WHERE d."hash" = ct."hash"
    AND EXISTS (SELECT 1 FROM "mcp_upstreams" u WHERE u."catalog_id" = ct."catalog_id" AND u."name" = d."server");
--> statement-breakpoint
ALTER TABLE "mcp_upstreams" ADD COLUMN IF NOT EXISTS "trust" text DEFAULT 'pin' NOT NULL;
--> statement-breakpoint
ALTER TABLE "mcp_upstreams" ADD COLUMN IF NOT EXISTS "pinned_at" timestamp with time zone;
--> statement-breakpoint
ALTER TABLE "mcp_upstreams" ADD COLUMN IF NOT EXISTS "conflicts" json DEFAULT '[]'::json NOT NULL;
--> statement-breakpoint
CREATE TABLE IF NOT EXISTS "upstream_tools" (
	"catalog_id" integer NOT NULL,
	"upstream" text NOT NULL,
	"name" text NOT NULL,
	"current_hash" text NOT NULL,
	"current_definition" json NOT NULL,
	"findings" json DEFAULT '[]'::json NOT NULL,
	"approved_hash" text,
	"approved_definition" json,
	"rejected_hash" text,
	"changed_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "upstream_tools_pk" PRIMARY KEY("catalog_id","upstream","name"),
	CONSTRAINT "upstream_tools_upstream_fk" FOREIGN KEY ("catalog_id","upstream") REFERENCES "mcp_upstreams"("catalog_id","name") ON DELETE CASCADE
);
