import { RESULT_SCAN_MODES } from '../trust/result-scan-floor.js';
import { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import * as catalogs from '../catalog/catalog-service.js';
import { firstSentence, parameterNames } from '../catalog/describe.js';
import { extractToolList } from '../catalog/tool-formats.js';
import { AppError } from '../errors.js';
import type { CatalogSummary, CatalogToolRow } from '../store/catalog-store.js';
import { seenUpstreams, upstreamState } from '../upstream/upstreams.js';
import { canSeeServer } from '../trust/policy.js';
import { parseInput } from './errors.js';
import { requestAccess } from './middleware.js';

export const NAME_PATTERN = /^[A-Za-z0-9._-]{1,64}$/;
export const CATALOG_NAME = NAME_PATTERN;

/** `.` and `..` are path segments, not names: in a URL they would address another resource. */
export const notDots = (name: string) => name !== '.' && name !== '..';

export const catalogParams = z.object({
  catalog: z
    .string()
    .regex(CATALOG_NAME, 'catalog names are 1-64 characters of A-Z, a-z, 0-9, ".", "_" and "-"')
    .refine(notDots, 'catalog names may not be . or ..'),
});
const toolParams = catalogParams.extend({ name: z.string().min(1).max(128) });
const detailQuery = z.object({ detail: z.enum(['brief', 'full']).default('brief') });
const listQuery = detailQuery.extend({
  limit: z.coerce.number().int().min(1).max(1000).default(100),
  cursor: z.string().max(512).optional(),
});

/** A catalog's settings: each field optional, an unknown one refused (a typo must not pass for a change). */
const settingsBody = z
  .object({
    code_mode: z.boolean().optional().describe("Whether run_code programs may call this catalog's tools (CODE_MODE=on)"),
    result_scan: z
      .enum(RESULT_SCAN_MODES)
      .nullable()
      .optional()
      .describe("How its tools' call results are read for injected instructions; null: the service's RESULT_SCAN"),
  })
  .strict();

/** The tool list of a request body: `{tools: [...]}`, an MCP tools/list result, or a bare array. */
const toolListBody = z.unknown().transform((body, ctx) => {
  const tools = extractToolList(body);
  if (!tools) {
    ctx.addIssue({ code: 'custom', message: 'expected {"tools": [...]} (an MCP tools/list result, OpenAI or Anthropic tools)' });
    return z.NEVER;
  }
  return tools;
});

export function catalogJson(catalog: CatalogSummary) {
  return {
    name: catalog.name,
    tool_count: catalog.toolCount,
    definition_tokens: catalog.definitionTokens,
    revision: catalog.revision,
    code_mode: catalog.codeMode,
    result_scan: catalog.resultScan,
    created_at: catalog.createdAt.toISOString(),
    updated_at: catalog.updatedAt.toISOString(),
  };
}

/** brief: what a model needs to pick a tool; full: the definition exactly as it was pushed. */
export function toolJson(tool: Pick<CatalogToolRow, 'name' | 'description' | 'inputSchema' | 'tags' | 'server' | 'definition'>, detail: 'brief' | 'full') {
  const common = { name: tool.name, tags: tool.tags, server: tool.server };
  return detail === 'brief'
    ? { ...common, description: firstSentence(tool.description), parameters: parameterNames(tool.inputSchema) }
    : { ...common, description: tool.description, definition: tool.definition };
}

const encodeCursor = (name: string) => Buffer.from(name, 'utf8').toString('base64url');
function decodeCursor(cursor: string): string {
  const name = Buffer.from(cursor, 'base64url').toString('utf8');
  if (name.length === 0 || name.includes('\u0000') || encodeCursor(name) !== cursor) {
    throw new AppError('validation_failed', 'invalid cursor: pass next_cursor from the previous page unchanged');
  }
  return name;
}

function catalogRef(req: Request, res: Response): catalogs.CatalogRef {
  const { catalog } = parseInput(catalogParams, req.params, 'path');
  return { tenant: String(res.locals.tenant), name: catalog };
}

function writeJson(result: catalogs.CatalogWriteResult, written: number) {
  return {
    catalog: catalogJson(result.catalog),
    tools_written: written,
    new_documents: result.newDocuments,
    job_ids: result.jobIds,
    ...(result.warnings.length > 0 ? { warnings: result.warnings } : {}),
    ...(result.findings.length > 0 ? { findings: result.findings } : {}),
  };
}

export function catalogRoutes(deps: catalogs.CatalogDeps): Router {
  const router = Router();

  router.get('/v1/catalogs', async (_req, res) => {
    const access = requestAccess(res, 'GET /v1/catalogs');
    const list = await catalogs.listCatalogs(deps, String(res.locals.tenant), access);
    res.json({ catalogs: (await catalogs.seenCatalogs(deps, list, access)).map(catalogJson) });
  });

  router.get('/v1/usage', async (_req, res) => {
    const access = requestAccess(res, 'GET /v1/usage');
    access.requireTenantView("read the tenant's usage");
    const usage = await catalogs.tenantUsage(deps, String(res.locals.tenant));
    res.json({
      tenant: String(res.locals.tenant),
      catalogs: usage.catalogs,
      tools: usage.tools,
      upstreams: usage.upstreams,
      definition_bytes: usage.definitionBytes,
    });
  });

  router.get('/v1/catalogs/:catalog', async (req, res) => {
    const ref = catalogRef(req, res);
    const access = requestAccess(res, 'GET /v1/catalogs/{catalog}');
    // Only this route reports embedding progress and upstreams: the list stays one cheap query.
    const [{ catalog, embedding }, upstreams] = await Promise.all([catalogs.catalogWithProgress(deps, ref, access), catalogs.catalogUpstreams(deps, ref)]);
    const visible = upstreams.filter((upstream) => canSeeServer(access.policy, ref.name, upstream.name)).map(upstreamState);
    res.json({ ...catalogJson(catalog), embedding, upstreams: await seenUpstreams(deps.db, access, ref.tenant, ref.name, visible) });
  });

  router.put('/v1/catalogs/:catalog', async (req, res) => {
    const ref = catalogRef(req, res);
    const tools = parseInput(toolListBody, req.body, 'body');
    res.json(writeJson(await catalogs.replaceCatalog(deps, ref, tools), tools.length));
  });

  router.patch('/v1/catalogs/:catalog', async (req, res) => {
    const ref = catalogRef(req, res);
    const settings = parseInput(settingsBody, req.body, 'body');
    const access = requestAccess(res, 'PATCH /v1/catalogs/{catalog}');
    // How the catalog's call results are read applies to every tool: as an upstream's own result_scan, not for a key that sees only some.
    if (settings.result_scan !== undefined)
      access.requireWholeCatalog(ref.name, "may not change the catalog's result_scan (it applies to the tools the key does not see too)");
    const catalog = await catalogs.updateCatalogSettings(deps, ref, { codeMode: settings.code_mode, resultScan: settings.result_scan });
    res.json(catalogJson(await catalogs.seenCatalog(deps, catalog, access)));
  });

  router.delete('/v1/catalogs/:catalog', async (req, res) => {
    await catalogs.deleteCatalog(deps, catalogRef(req, res));
    res.status(204).end();
  });

  router.get('/v1/catalogs/:catalog/tools', async (req, res) => {
    const ref = catalogRef(req, res);
    const query = parseInput(listQuery, req.query, 'query');
    const page = await catalogs.listTools(
      deps,
      ref,
      { limit: query.limit, after: query.cursor === undefined ? undefined : decodeCursor(query.cursor) },
      requestAccess(res, 'GET /v1/catalogs/{catalog}/tools'),
    );
    res.json({
      tools: page.tools.map((tool) => toolJson(tool, query.detail)),
      next_cursor: page.nextAfter === undefined ? null : encodeCursor(page.nextAfter),
    });
  });

  router.post('/v1/catalogs/:catalog/tools', async (req, res) => {
    const ref = catalogRef(req, res);
    const tools = parseInput(toolListBody, req.body, 'body');
    res.json(writeJson(await catalogs.upsertTools(deps, ref, tools, requestAccess(res, 'POST /v1/catalogs/{catalog}/tools')), tools.length));
  });

  router.get('/v1/catalogs/:catalog/tools/:name', async (req, res) => {
    const ref = catalogRef(req, res);
    const { name } = parseInput(toolParams, req.params, 'path');
    const { detail } = parseInput(detailQuery, req.query, 'query');
    const tool = await catalogs.getTool(deps, ref, name, requestAccess(res, 'GET /v1/catalogs/{catalog}/tools/{name}'));
    const findings = catalogs.storedFindings(tool);
    res.json({ ...toolJson(tool, detail), ...(findings.length > 0 ? { findings } : {}) });
  });

  router.delete('/v1/catalogs/:catalog/tools/:name', async (req, res) => {
    const ref = catalogRef(req, res);
    const { name } = parseInput(toolParams, req.params, 'path');
    await catalogs.deleteTool(deps, ref, name, requestAccess(res, 'DELETE /v1/catalogs/{catalog}/tools/{name}'));
    res.status(204).end();
  });

  return router;
}
