import { QUERY_CHARS_MAX } from '../lib/query-length.js';
import { Router } from 'express';
import { z } from 'zod';
import { AppError } from '../errors.js';
import { forgetFeedback, recordFeedback, STRENGTH, type FeedbackDeps, type RecentSearches } from '../search/feedback.js';
import { catalogParams, CATALOG_NAME, notDots } from './catalogs.js';
import { parseInput } from './errors.js';
import { requestAccess, requestCaller } from './middleware.js';

const toolName = z.string().min(1).max(128);

export const feedbackRequest = z
  .object({
    catalog: z
      .string()
      .regex(CATALOG_NAME, 'catalog names are 1-64 characters of A-Z, a-z, 0-9, ".", "_" and "-"')
      .refine(notDots, 'catalog names may not be . or ..'),
    query: z.string().trim().min(1, 'query must not be empty').max(QUERY_CHARS_MAX).optional(),
    /** A search answer's `search_id`: the event binds to that search's query. */
    search_id: z.string().min(1).max(64).optional(),
    used: z.array(toolName).min(1, 'used must name at least one tool').max(100),
    /** What the caller showed the model: those not used were passed over (no twins of the used ones for queries like this). */
    shown: z.array(toolName).max(1000).optional(),
  })
  .strict()
  .refine((body) => body.query !== undefined || body.search_id !== undefined, {
    message: 'send the query, or the search_id of the answer it judges',
    path: ['query'],
  });

/** `POST /v1/feedback` and `DELETE /v1/catalogs/{catalog}/feedback` (issue 72). */
export function feedbackRoutes(deps: FeedbackDeps & { recentSearches?: RecentSearches }): Router {
  const router = Router();
  router.post('/v1/feedback', async (req, res) => {
    const body = parseInput(feedbackRequest, req.body, 'body');
    const tenant = String(res.locals.tenant);
    const access = requestAccess(res, 'POST /v1/feedback');
    access.requireCatalog(body.catalog);
    const logged = body.search_id ? deps.recentSearches?.get(body.search_id, tenant) : undefined;
    if (body.search_id && !logged && body.query === undefined) {
      throw new AppError(
        'not_found',
        `search_id "${body.search_id}" is not known here (searches are remembered for a while by the replica that answered): send the query too`,
      );
    }
    if (logged && !logged.shown.some((entry) => entry.catalog === body.catalog)) {
      throw new AppError('validation_failed', `search_id "${body.search_id}" searched another catalog than "${body.catalog}"`);
    }
    const result = await recordFeedback(
      deps,
      { tenant, name: body.catalog },
      {
        query: logged?.query ?? body.query!,
        used: body.used,
        caller: requestCaller(res),
        strength: STRENGTH.used,
        access,
        // What the quoted search showed from this catalog, unless the caller says what it showed the model.
        ...(body.shown ? { shown: body.shown } : logged ? { shown: logged.shown.find((entry) => entry.catalog === body.catalog)!.names } : {}),
      },
    );
    res.json({ recorded: result.recorded, unknown: result.unknown, learning: result.learning ? 'on' : 'off' });
  });
  router.delete('/v1/catalogs/:catalog/feedback', async (req, res) => {
    const { catalog } = parseInput(catalogParams, req.params, 'path');
    const deleted = await forgetFeedback(deps, { tenant: String(res.locals.tenant), name: catalog });
    res.json({ deleted });
  });
  return router;
}
