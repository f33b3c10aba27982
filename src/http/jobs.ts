import { Router } from 'express';
import { z } from 'zod';
import { notFound } from '../errors.js';
import type { EmbedQueue } from '../jobs/embed-queue.js';
import { parseInput } from './errors.js';
import { requestAccess } from './middleware.js';
import { tenantHashes } from '../store/catalog-store.js';
import type { Db } from '../store/database.js';

const jobParams = z.object({ id: z.string().min(1).max(128) });

/**
 * Embedding jobs by the ids ingestion returned, scoped to the caller's tenant: a job is answered
 * only when one of its tools is in one of the tenant's catalogs (job ids derive from content, so
 * an id alone must not reveal another tenant's work). A finished job is answered while the queue
 * retains it (a day when completed, a week when failed).
 */
export function jobRoutes(queue: EmbedQueue | null, db: Db): Router {
  const router = Router();
  router.get('/v1/jobs/:id', async (req, res) => {
    const { id } = parseInput(jobParams, req.params, 'path');
    // A job names tools by content, across the tenant's catalogs: only a key that sees them all asks.
    requestAccess(res, 'GET /v1/jobs/{id}').requireWriter('read embedding jobs');
    const job = queue ? await queue.getJob(id) : undefined;
    if (!job || (await tenantHashes(db, String(res.locals.tenant), job.hashList)).size === 0) throw notFound(`job "${id}"`);
    res.json({
      id: job.id,
      state: job.state,
      progress: job.progress,
      hashes: job.hashes,
      attempts: job.attempts,
      ...(job.error === undefined ? {} : { error: job.error }),
    });
  });
  return router;
}
