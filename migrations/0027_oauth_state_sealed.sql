-- An upstream's OAuth discovery (its protected-resource and authorization-server metadata, which
-- name the token endpoint its client secret and refresh token go to) is sealed from now on, bound
-- with its catalog, upstream and URL as its tokens and client are (oauth.ts): a database writer
-- without SECRETS_KEY can no longer point them elsewhere. The plaintext discovery an earlier
-- release stored is dropped: the next renewal discovers it again from the upstream's URL.
ALTER TABLE "upstream_oauth" ADD COLUMN IF NOT EXISTS "discovery_sealed" text;--> statement-breakpoint
UPDATE "upstream_oauth" SET "discovery" = NULL WHERE "discovery" IS NOT NULL;
