-- tool_terms' two btrees over (hash, term) and (term, hash) held a 64-character hash in every entry
-- (~500 MB for 2.1 million rows) and cost more than the rows themselves on every terms insert, the
-- largest statement of a catalog push. What reads them needs less: a document's rows by its hash
-- (equality only: a hash index, a 4-byte code an entry) and a term's postings (a btree on the term
-- alone, whose duplicates PostgreSQL stores once with a list of row pointers). Uniqueness of
-- (hash, term) never came from the key: a document's terms are written once, by the writer whose
-- document insert won (tool-store.ts insertDocuments). On 2.1 million rows in slices of 107,000,
-- index upkeep 34 s -> 14 s (docs/benchmarks.md, 2026-12-02).
ALTER TABLE "tool_terms" DROP CONSTRAINT IF EXISTS "tool_terms_hash_term_pk";
--> statement-breakpoint
DROP INDEX IF EXISTS "tool_terms_term_idx";
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "tool_terms_hash_idx" ON "tool_terms" USING hash ("hash");
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "tool_terms_term_idx" ON "tool_terms" USING btree ("term");
