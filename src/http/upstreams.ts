import { Router } from 'express';
import { z } from 'zod';
import type { UpstreamService } from '../upstream/upstreams.js';
import { catalogParams, NAME_PATTERN, notDots } from './catalogs.js';
import { parseInput } from './errors.js';

const upstreamParams = catalogParams.extend({
  name: z.string().regex(NAME_PATTERN, 'upstream names are 1-64 characters of A-Z a-z 0-9 . _ -').refine(notDots, 'upstream names may not be . or ..'),
});

/**
 * Headers the transport owns (framing, routing, the MCP session): set by a tenant they break or
 * redirect the connection (a `Content-Length: 0` held a registration for 30 s).
 */
const RESERVED_HEADERS = new Set([
  'host',
  'content-length',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'upgrade',
  'te',
  'trailer',
  'expect',
  'content-type',
  'accept',
  'proxy-authorization',
  'proxy-connection',
  'mcp-session-id',
  'mcp-protocol-version',
  'last-event-id',
  'cookie2',
]);

const headerName = z
  .string()
  .regex(/^[A-Za-z0-9-]{1,128}$/, 'header names are letters, digits and -')
  .refine((name) => !RESERVED_HEADERS.has(name.toLowerCase()), 'this header is set by the transport and may not be given');

/** A header value as HTTP allows it (no CR, LF or NUL); the message never repeats the value, a credential. */
const headerValue = z
  .string()
  .max(8_192, 'header values are at most 8,192 characters')
  .regex(/^[\t\x20-\x7e\x80-\xff]*$/, 'header values must be visible ASCII or Latin-1 without control characters (the value is not shown)');

export const putUpstreamRequest = z
  .object({
    url: z
      .string()
      .url()
      .refine((value) => /^https?:\/\//i.test(value), 'url must be http:// or https:// (stdio servers come from UPSTREAMS_FILE, never the API)'),
    headers: z.record(headerName, headerValue).optional(),
    refresh_seconds: z.number().int().min(10).max(86_400).default(300),
    trust: z.enum(['pin', 'auto']).default('pin'),
  })
  .strict();

const decisionRequest = z
  .object({
    /** Absent: every tool waiting for a decision. A name, or {name, hash} to decide exactly the definition reviewed. */
    tools: z
      .array(
        z.union([
          z.string().min(1).max(128),
          z.object({ name: z.string().min(1).max(128), hash: z.string().regex(/^[0-9a-f]{64}$/, 'hash is the 64-hex-digit pin hash from GET') }).strict(),
        ]),
      )
      .min(1)
      .max(1_000)
      .optional(),
  })
  .strict();

/** Remote MCP servers synced into a catalog: register (and sync now), list, review, approve or reject their tools, remove. */
export function upstreamRoutes(upstreams: UpstreamService | null): Router {
  const router = Router();
  router.put('/v1/catalogs/:catalog/upstreams/:name', async (req, res) => {
    const { catalog, name } = parseInput(upstreamParams, req.params, 'path');
    const body = parseInput(putUpstreamRequest, req.body, 'body');
    const state = await upstreams!.register(String(res.locals.tenant), catalog, {
      name,
      url: body.url,
      headers: body.headers ?? {},
      refreshSeconds: body.refresh_seconds,
      trust: body.trust,
    });
    res.json({ upstream: state });
  });
  router.get('/v1/catalogs/:catalog/upstreams', async (req, res) => {
    const { catalog } = parseInput(catalogParams, req.params, 'path');
    res.json({ upstreams: await upstreams!.list(String(res.locals.tenant), catalog) });
  });
  router.get('/v1/catalogs/:catalog/upstreams/:name', async (req, res) => {
    const { catalog, name } = parseInput(upstreamParams, req.params, 'path');
    res.json(await upstreams!.review(String(res.locals.tenant), catalog, name));
  });
  for (const decision of ['approve', 'reject'] as const) {
    router.post(`/v1/catalogs/:catalog/upstreams/:name/${decision}`, async (req, res) => {
      const { catalog, name } = parseInput(upstreamParams, req.params, 'path');
      const body = parseInput(decisionRequest, req.body ?? {}, 'body');
      const selection = body.tools?.map((item) => (typeof item === 'string' ? { name: item } : item)) ?? null;
      const { upstream, decided } = await upstreams!.decide(String(res.locals.tenant), catalog, name, decision, selection);
      res.json({ upstream, [decision === 'approve' ? 'approved' : 'rejected']: decided });
    });
  }
  router.delete('/v1/catalogs/:catalog/upstreams/:name', async (req, res) => {
    const { catalog, name } = parseInput(upstreamParams, req.params, 'path');
    await upstreams!.remove(String(res.locals.tenant), catalog, name);
    res.status(204).end();
  });
  return router;
}
