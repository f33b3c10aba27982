-- OAuth to upstream MCP servers (issue 76): an upstream registered with `auth: {type: "oauth"}`
-- keeps its settings, the client toolsift is to the authorization server (configured or
-- dynamically registered), the discovered metadata and its tokens here, one row per upstream.
-- Every secret column (`client_secret`, `client`, `tokens`, a pending authorization's
-- `code_verifier`) holds SecretBox output, never plaintext. A pending authorization code flow is
-- keyed by a digest of its `state` (single use, expiring): the state itself is only in the
-- operator's browser.
CREATE TABLE IF NOT EXISTS "upstream_oauth" (
	"catalog_id" integer NOT NULL,
	"upstream" text NOT NULL,
	"grant_type" text NOT NULL,
	"scope" text,
	"client_id" text,
	"client_secret" text,
	"client" text,
	"discovery" json,
	"tokens" text,
	"token_version" integer DEFAULT 0 NOT NULL,
	"issued_at" timestamp with time zone,
	"expires_at" timestamp with time zone,
	"status" text DEFAULT 'authorization_required' NOT NULL,
	"last_error" text,
	"authorized_at" timestamp with time zone,
	CONSTRAINT "upstream_oauth_pk" PRIMARY KEY("catalog_id","upstream"),
	CONSTRAINT "upstream_oauth_upstream_fk" FOREIGN KEY ("catalog_id","upstream") REFERENCES "mcp_upstreams"("catalog_id","name") ON DELETE CASCADE
);
--> statement-breakpoint
CREATE TABLE IF NOT EXISTS "upstream_oauth_pending" (
	"state_hash" text PRIMARY KEY NOT NULL,
	"catalog_id" integer NOT NULL,
	"upstream" text NOT NULL,
	"code_verifier" text NOT NULL,
	"redirect_uri" text NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	CONSTRAINT "upstream_oauth_pending_upstream_fk" FOREIGN KEY ("catalog_id","upstream") REFERENCES "mcp_upstreams"("catalog_id","name") ON DELETE CASCADE
);
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "upstream_oauth_pending_upstream_idx" ON "upstream_oauth_pending" ("catalog_id","upstream");
