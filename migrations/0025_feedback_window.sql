-- Each caller's events of one tool definition are kept to its newest few (search/feedback.ts):
-- the index that finds them when a feedback write trims the older ones.
CREATE INDEX IF NOT EXISTS "feedback_events_window_idx" ON "feedback_events" USING btree ("catalog_id","tool_name","caller","id");
