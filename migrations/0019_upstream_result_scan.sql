-- Reading what an upstream's tools return (RESULT_SCAN) per upstream: `flag`, `block` or `off`
-- for this upstream's results; null: the service's RESULT_SCAN. Registered with the upstream
-- (`result_scan` in PUT /v1/catalogs/{catalog}/upstreams/{name}, register_upstream, UPSTREAMS_FILE),
-- never below RESULT_SCAN_MIN.
ALTER TABLE "mcp_upstreams" ADD COLUMN IF NOT EXISTS "result_scan" text;
