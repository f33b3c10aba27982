import { Router } from 'express';
import { z } from 'zod';
import { notFound } from '../errors.js';
import type { EmbedQueue } from '../jobs/embed-queue.js';
import { parseInput } from './errors.js';

const jobParams = z.object({ id: z.string().min(1).max(128) });

/**
 * Embedding jobs by the ids ingestion returned. Jobs are not tenant-scoped: they hold content
 * hashes only, and an id can only be known from the response that created it (or from the hashes).
 * A finished job is answered while the queue retains it (a day when completed, a week when failed).
 */
export function jobRoutes(queue: EmbedQueue | null): Router {
  const router = Router();
  router.get('/v1/jobs/:id', async (req, res) => {
    const { id } = parseInput(jobParams, req.params, 'path');
    const job = queue ? await queue.getJob(id) : undefined;
    if (!job) throw notFound(`job "${id}"`);
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
