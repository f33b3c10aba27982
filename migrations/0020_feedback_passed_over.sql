-- What the agent was shown with the tool it used and passed over (issue 72): a tool shown beside
-- the one chosen, for a query like this one, is not its duplicate (the learned list's twins), so
-- learning may put the chosen one above it. Null: the caller did not say what it showed.
ALTER TABLE "feedback_events" ADD COLUMN IF NOT EXISTS "passed_over" text[];
