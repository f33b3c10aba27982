import { Router } from 'express';
import { z } from 'zod';
import type { UpstreamService } from '../upstream/upstreams.js';
import { catalogParams } from './catalogs.js';
import { parseInput } from './errors.js';

const upstreamParams = catalogParams.extend({
  name: z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, 'upstream names are 1-64 characters of A-Z a-z 0-9 . _ -'),
});

export const putUpstreamRequest = z
  .object({
    url: z
      .string()
      .url()
      .refine((value) => /^https?:\/\//.test(value), 'url must be http:// or https:// (stdio servers come from UPSTREAMS_FILE, never the API)'),
    headers: z.record(z.string().regex(/^[A-Za-z0-9-]{1,128}$/, 'header names are letters, digits and -'), z.string().max(8_192)).optional(),
    refresh_seconds: z.number().int().min(10).max(86_400).default(300),
  })
  .strict();

/** Remote MCP servers synced into a catalog: register (and sync now), list with sync state, remove. */
export function upstreamRoutes(upstreams: UpstreamService | null): Router {
  const router = Router();
  router.put('/v1/catalogs/:catalog/upstreams/:name', async (req, res) => {
    const { catalog, name } = parseInput(upstreamParams, req.params, 'path');
    const body = parseInput(putUpstreamRequest, req.body, 'body');
    const state = await upstreams!.register(String(res.locals.tenant), catalog, { name, url: body.url, headers: body.headers ?? {}, refreshSeconds: body.refresh_seconds });
    res.json({ upstream: state });
  });
  router.get('/v1/catalogs/:catalog/upstreams', async (req, res) => {
    const { catalog } = parseInput(catalogParams, req.params, 'path');
    res.json({ upstreams: await upstreams!.list(String(res.locals.tenant), catalog) });
  });
  router.delete('/v1/catalogs/:catalog/upstreams/:name', async (req, res) => {
    const { catalog, name } = parseInput(upstreamParams, req.params, 'path');
    await upstreams!.remove(String(res.locals.tenant), catalog, name);
    res.status(204).end();
  });
  return router;
}
