import { Router } from 'express';
import { z } from 'zod';
import { parseToolList, scannedTool } from '../catalog/catalog-service.js';
import { mapYielding } from '../lib/time-slice.js';
import { extractToolList } from '../catalog/tool-formats.js';
import { RESERVED_TOOL_NAMES } from '../trust/reserved-names.js';
import { isFlagged, scanTool } from '../trust/scan-tool.js';
import { parseInput } from './errors.js';

/** The tool list of a request body, in any shape a catalog write takes. */
const scanRequest = z.unknown().transform((body, ctx) => {
  const tools = extractToolList(body);
  if (!tools) {
    ctx.addIssue({ code: 'custom', message: 'expected {"tools": [...]} (an MCP tools/list result, OpenAI or Anthropic tools)' });
    return z.NEVER;
  }
  return tools;
});

export const SCAN_PATH = '/v1/tools/scan';

/**
 * `POST /v1/tools/scan`: the definition scanner over tools a caller holds (a gateway's inline
 * tools, a server about to be registered), on demand: nothing is stored. Stored catalogs and
 * upstreams are scanned as they arrive; inline tools of selector and tool-search requests are the
 * caller's own and are not, unless it asks here.
 */
export function scanRoutes(): Router {
  const router = Router();
  router.post(SCAN_PATH, async (req, res) => {
    const tools = parseToolList(parseInput(scanRequest, req.body, 'body'));
    const context = { otherNames: tools.map((tool) => tool.name), reservedNames: RESERVED_TOOL_NAMES };
    // In slices: 10,000 tools are ~0.3 s of scanning, which other requests must not wait behind.
    const scanned = await mapYielding(tools, (tool) => scanTool(scannedTool(tool), context));
    const results = scanned.map((findings, index) => ({ index, name: tools[index]!.name, flagged: isFlagged(findings), findings }));
    res.json({ tools: results, flagged: results.filter((tool) => tool.flagged).length });
  });
  return router;
}
