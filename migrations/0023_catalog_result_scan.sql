-- A catalog's own reading of its tools' call results for injected instructions (off, flag,
-- block: PATCH /v1/catalogs/{catalog} {"result_scan"}); null: the service's RESULT_SCAN. An
-- upstream's own result_scan wins over it; RESULT_SCAN_MIN bounds both.
ALTER TABLE "catalogs" ADD COLUMN IF NOT EXISTS "result_scan" text;
