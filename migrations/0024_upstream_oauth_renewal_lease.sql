-- OAuth renewals one at a time per upstream across replicas: the replica renewing an upstream's
-- tokens holds a lease (its holder, a random name per renewal, until a time of the database's
-- clock); another waits for it, then uses the tokens the holder stored rather than spend a rotating
-- refresh token again. A lease whose holder died renewing expires. Null: nobody is renewing.
ALTER TABLE "upstream_oauth" ADD COLUMN IF NOT EXISTS "renewal_holder" text;
--> statement-breakpoint
ALTER TABLE "upstream_oauth" ADD COLUMN IF NOT EXISTS "renewal_lease_until" timestamp with time zone;
