-- Bumped by every registration, change or removal of one of the catalog's upstream MCP servers (in
-- the same transaction): call_tool caches a tool's upstream row per (revision, upstream_revision), so
-- a replica sees another replica's PUT or DELETE of an upstream on its next request.
ALTER TABLE "catalogs" ADD COLUMN IF NOT EXISTS "upstream_revision" bigint DEFAULT 0 NOT NULL;
