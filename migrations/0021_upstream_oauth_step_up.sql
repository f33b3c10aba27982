-- OAuth step-up (SEP-2350): the scope toolsift asks for since an upstream answered a call 403
-- `insufficient_scope` naming a scope its token lacked, within the registration's `scope` when it
-- configured one. Every later token request and authorization asks it too, so a renewal or a new
-- authorization keeps what the step-up won; null: no step-up. A changed registration forgets it.
ALTER TABLE "upstream_oauth" ADD COLUMN IF NOT EXISTS "step_up_scope" text;
