-- Code mode per catalog (issue 73): whether run_code programs may call the catalog's tools (and
-- whether /mcp/{catalog} offers run_code at all) when the service runs with CODE_MODE=on. A
-- catalog opts out with PATCH /v1/catalogs/{catalog} {"code_mode": false}.
ALTER TABLE "catalogs" ADD COLUMN "code_mode" boolean DEFAULT true NOT NULL;
