-- Remote MCP servers whose tools are synced into a catalog (issue: toolsift speaks MCP). Header
-- values (credentials) are stored for the connection and never returned by the API.
CREATE TABLE "mcp_upstreams" (
	"catalog_id" integer NOT NULL REFERENCES "catalogs"("id") ON DELETE CASCADE,
	"name" text NOT NULL,
	"url" text NOT NULL,
	"headers" json DEFAULT '{}'::json NOT NULL,
	"refresh_seconds" integer DEFAULT 300 NOT NULL,
	"last_sync_at" timestamp with time zone,
	"tool_count" integer DEFAULT 0 NOT NULL,
	"last_added" integer,
	"last_changed" integer,
	"last_removed" integer,
	"last_error" text,
	"sync_lease_until" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "mcp_upstreams_pk" PRIMARY KEY("catalog_id","name")
);
