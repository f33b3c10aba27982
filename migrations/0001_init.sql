CREATE TABLE "catalog_tools" (
	"catalog_id" integer NOT NULL,
	"name" text NOT NULL,
	"hash" text NOT NULL,
	"definition" json NOT NULL,
	"position" integer NOT NULL,
	CONSTRAINT "catalog_tools_catalog_id_name_pk" PRIMARY KEY("catalog_id","name")
);
--> statement-breakpoint
CREATE TABLE "catalogs" (
	"id" serial PRIMARY KEY NOT NULL,
	"tenant" text NOT NULL,
	"name" text NOT NULL,
	"revision" bigint DEFAULT 1 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "tool_documents" (
	"hash" text PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"description" text NOT NULL,
	"input_schema" json,
	"tags" text[] DEFAULT '{}'::text[] NOT NULL,
	"server" text,
	"definition" json NOT NULL,
	"doc_length" integer NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "tool_embeddings" (
	"hash" text NOT NULL,
	"model" text NOT NULL,
	"dimension" integer NOT NULL,
	"embedding" vector NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "tool_embeddings_hash_model_pk" PRIMARY KEY("hash","model")
);
--> statement-breakpoint
CREATE TABLE "tool_terms" (
	"hash" text NOT NULL,
	"term" text NOT NULL,
	"tf" integer NOT NULL,
	CONSTRAINT "tool_terms_hash_term_pk" PRIMARY KEY("hash","term")
);
--> statement-breakpoint
ALTER TABLE "catalog_tools" ADD CONSTRAINT "catalog_tools_catalog_id_catalogs_id_fk" FOREIGN KEY ("catalog_id") REFERENCES "public"."catalogs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "catalog_tools" ADD CONSTRAINT "catalog_tools_hash_tool_documents_hash_fk" FOREIGN KEY ("hash") REFERENCES "public"."tool_documents"("hash") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "tool_embeddings" ADD CONSTRAINT "tool_embeddings_hash_tool_documents_hash_fk" FOREIGN KEY ("hash") REFERENCES "public"."tool_documents"("hash") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "tool_terms" ADD CONSTRAINT "tool_terms_hash_tool_documents_hash_fk" FOREIGN KEY ("hash") REFERENCES "public"."tool_documents"("hash") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "catalog_tools_hash_idx" ON "catalog_tools" USING btree ("hash");--> statement-breakpoint
CREATE UNIQUE INDEX "catalogs_tenant_name_idx" ON "catalogs" USING btree ("tenant","name");--> statement-breakpoint
CREATE INDEX "tool_terms_term_idx" ON "tool_terms" USING btree ("term","hash");