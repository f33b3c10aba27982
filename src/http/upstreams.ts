import { Router, type Request } from 'express';
import { z } from 'zod';
import { AppError } from '../errors.js';
import type { UpstreamService } from '../upstream/upstreams.js';
import { clientMetadataDocument, type ClientMetadataSettings } from '../upstream/client-metadata.js';
import { registrationOf, upstreamRef, upstreamRegistrationBody } from '../upstream/registration.js';
import { catalogParams } from './catalogs.js';
import { canSeeServer } from '../trust/policy.js';
import { parseInput } from './errors.js';
import { requestAccess } from './middleware.js';

const decisionRequest = z
  .object({
    /** Absent: every tool waiting for a decision (that the key sees). A name, or {name, hash} to decide exactly the definition reviewed. */
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

const oauthStartRequest = z.object({}).strict();

/** Where the operator's browser comes back: OAUTH_REDIRECT_URL, else this request's scheme and Host (the Host / Origin guard admitted it). */
function callbackUrl(req: Request, configured: string | undefined): string {
  return configured ?? `${req.protocol}://${req.get('host')}/oauth/callback`;
}

/** Remote MCP servers synced into a catalog: register (and sync now), list, review, approve or reject their tools, remove. */
export function upstreamRoutes(upstreams: UpstreamService | null, options: { redirectUrl?: string } = {}): Router {
  const router = Router();
  router.post('/v1/catalogs/:catalog/upstreams/:name/oauth/start', async (req, res) => {
    const { catalog, name } = parseInput(upstreamRef, req.params, 'path');
    requestAccess(res, 'POST /v1/catalogs/{catalog}/upstreams/{name}/oauth/start').requireWholeServer(catalog, name);
    parseInput(oauthStartRequest, req.body ?? {}, 'body');
    const redirectUri = callbackUrl(req, options.redirectUrl);
    const started = await upstreams!.startAuthorization(String(res.locals.tenant), catalog, name, redirectUri);
    res.set('cache-control', 'no-store');
    res.json({ authorization_url: started.authorizationUrl, redirect_uri: redirectUri, expires_at: started.expiresAt.toISOString() });
  });
  router.put('/v1/catalogs/:catalog/upstreams/:name', async (req, res) => {
    const { catalog, name } = parseInput(upstreamRef, req.params, 'path');
    const access = requestAccess(res, 'PUT /v1/catalogs/{catalog}/upstreams/{name}');
    access.requireWholeServer(catalog, name);
    const body = parseInput(upstreamRegistrationBody, req.body, 'body');
    const tenant = String(res.locals.tenant);
    const state = await upstreams!.register(tenant, catalog, registrationOf(name, body), { key: access.policy.id });
    res.json({ upstream: (await upstreams!.seen(tenant, catalog, [state], access))[0] });
  });
  router.get('/v1/catalogs/:catalog/upstreams', async (req, res) => {
    const { catalog } = parseInput(catalogParams, req.params, 'path');
    const access = requestAccess(res, 'GET /v1/catalogs/{catalog}/upstreams');
    const tenant = String(res.locals.tenant);
    const visible = (await upstreams!.list(tenant, catalog)).filter((upstream) => canSeeServer(access.policy, catalog, upstream.name));
    res.json({ upstreams: await upstreams!.seen(tenant, catalog, visible, access) });
  });
  router.get('/v1/catalogs/:catalog/upstreams/:name', async (req, res) => {
    const { catalog, name } = parseInput(upstreamRef, req.params, 'path');
    const access = requestAccess(res, 'GET /v1/catalogs/{catalog}/upstreams/{name}');
    access.requireServer(catalog, name);
    const tenant = String(res.locals.tenant);
    const review = await upstreams!.review(tenant, catalog, name);
    res.json({
      upstream: (await upstreams!.seen(tenant, catalog, [review.upstream], access))[0],
      tools: review.tools.filter((tool) => access.seesTool({ catalog, name: tool.name, server: name })),
    });
  });
  for (const decision of ['approve', 'reject'] as const) {
    router.post(`/v1/catalogs/:catalog/upstreams/:name/${decision}`, async (req, res) => {
      const { catalog, name } = parseInput(upstreamRef, req.params, 'path');
      const access = requestAccess(res, `POST /v1/catalogs/{catalog}/upstreams/{name}/${decision}`);
      access.requireServer(catalog, name);
      const body = parseInput(decisionRequest, req.body ?? {}, 'body');
      const selection = body.tools?.map((item) => (typeof item === 'string' ? { name: item } : item)) ?? null;
      const tenant = String(res.locals.tenant);
      const { upstream, decided } = await upstreams!.decide(tenant, catalog, name, decision, selection, access);
      res.json({ upstream: (await upstreams!.seen(tenant, catalog, [upstream], access))[0], [decision === 'approve' ? 'approved' : 'rejected']: decided });
    });
  }
  router.delete('/v1/catalogs/:catalog/upstreams/:name', async (req, res) => {
    const { catalog, name } = parseInput(upstreamRef, req.params, 'path');
    const access = requestAccess(res, 'DELETE /v1/catalogs/{catalog}/upstreams/{name}');
    access.requireWholeServer(catalog, name);
    await upstreams!.remove(String(res.locals.tenant), catalog, name, { key: access.policy.id });
    res.status(204).end();
  });
  return router;
}

const callbackQuery = z.object({
  state: z.string().max(512).optional(),
  code: z.string().max(4_096).optional(),
  iss: z.string().max(2_048).optional(),
  error: z.string().max(256).optional(),
  error_description: z.string().max(4_096).optional(),
  error_uri: z.string().max(2_048).optional(),
});

/**
 * GET /oauth/callback: an operator's browser back from an upstream's authorization server. No API
 * key (a browser has none): the state, single use and expiring, names the upstream it was started
 * for. Answers a small page in the gateway's own words; the authorization server's text is never
 * shown, and the page is neither cached nor referred onward (its URL held a code).
 */
export function oauthCallbackRoutes(upstreams: UpstreamService): Router {
  const router = Router();
  router.get('/oauth/callback', async (req, res) => {
    res.set({
      'cache-control': 'no-store',
      'referrer-policy': 'no-referrer',
      'content-security-policy': "default-src 'none'",
      'x-content-type-options': 'nosniff',
    });
    const parsed = callbackQuery.safeParse(req.query);
    try {
      if (!parsed.success) throw new AppError('validation_failed', 'the callback parameters are malformed');
      const { state, code, iss, error } = parsed.data;
      const upstream = await upstreams.finishAuthorization({ state, code, iss, error });
      const synced =
        upstream.last_error === null ? `${upstream.tool_count} tools served, ${upstream.pending} waiting for approval` : `sync: ${upstream.last_error}`;
      res
        .status(200)
        .type('html')
        .send(page('Authorized', `Upstream "${upstream.name}" of catalog "${upstream.catalog}" is authorized (${synced}). You may close this window.`));
    } catch (error) {
      if (!(error instanceof AppError) || error.code === 'internal_error' || error.code === 'service_unavailable') throw error;
      res.status(400).type('html').send(page('Not authorized', error.message));
    }
  });
  return router;
}

/**
 * GET /oauth/client-metadata/{digest}.json: a tenant's OAuth client ID metadata document, which an
 * upstream's authorization server fetches to learn the client whose id is its URL
 * (upstream/client-metadata.ts). No API key (the server has none): it names nothing secret (its
 * callback is in every authorization URL anyway) and no tenant (the name is a digest); a name no
 * client id can have is a 404. Cached briefly, as the draft lets servers do. Without
 * OAUTH_CLIENT_METADATA_URL there are no such routes (404).
 */
export function clientMetadataRoutes(settings: ClientMetadataSettings | undefined): Router {
  const router = Router();
  if (!settings) return router;
  router.get('/oauth/client-metadata/:file', (req, res) => {
    const document = clientMetadataDocument(settings, String(req.params.file));
    if (!document) throw new AppError('not_found', 'no such client metadata document');
    res.set({ 'cache-control': 'public, max-age=300', 'x-content-type-options': 'nosniff' }).json(document);
  });
  return router;
}

function page(title: string, message: string): string {
  const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
  return `<!doctype html><html><head><meta charset="utf-8"><title>toolsift: ${escapeHtml(title)}</title></head><body><h1>${escapeHtml(title)}</h1><p>${escapeHtml(message)}</p></body></html>\n`;
}
