-- Estimated definition tokens, counted when a tool is stored (catalog/tokens.ts): per content hash
-- in the providers' shapes, per catalog row as that catalog received it, and summed per catalog by
-- every write. Rows of older releases stay null until start-up counts them (refreshDefinitionTokens).
ALTER TABLE "tool_documents" ADD COLUMN IF NOT EXISTS "tokens_anthropic" integer;--> statement-breakpoint
ALTER TABLE "tool_documents" ADD COLUMN IF NOT EXISTS "tokens_openai" integer;--> statement-breakpoint
ALTER TABLE "catalog_tools" ADD COLUMN IF NOT EXISTS "tokens_as_sent" integer;--> statement-breakpoint
ALTER TABLE "catalogs" ADD COLUMN IF NOT EXISTS "tokens_anthropic" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "catalogs" ADD COLUMN IF NOT EXISTS "tokens_openai" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "catalogs" ADD COLUMN IF NOT EXISTS "tokens_as_sent" bigint DEFAULT 0 NOT NULL;
