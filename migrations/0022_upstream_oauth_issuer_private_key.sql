-- OAuth upstreams: the authorization server an operator names (`auth.issuer`), the only one a
-- configured client's credentials are sent to whatever the upstream's metadata says; and a private
-- key in place of a client secret (`auth.private_key`, private_key_jwt, RFC 7523), sealed like the
-- secret (SecretBox output, never plaintext), with the JWS algorithm it signs with. Null: no issuer
-- named (the one the upstream names is used), no key.
ALTER TABLE "upstream_oauth" ADD COLUMN IF NOT EXISTS "issuer" text;
--> statement-breakpoint
ALTER TABLE "upstream_oauth" ADD COLUMN IF NOT EXISTS "private_key" text;
--> statement-breakpoint
ALTER TABLE "upstream_oauth" ADD COLUMN IF NOT EXISTS "private_key_alg" text;
