import { Router, type RequestHandler } from 'express';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';

/**
 * Per request: a child logger carrying the request id (every line a handler writes has it), one
 * access line when the answer is sent, and the latency histogram by route template.
 */
export function observeRequests(logger: Logger, metrics: Metrics): RequestHandler {
  return (req, res, next) => {
    const started = process.hrtime.bigint();
    res.locals.log = logger.child({ requestId: res.locals.requestId });
    res.on('finish', () => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const route = req.route ? `${req.baseUrl}${String(req.route.path)}` : 'unmatched';
      metrics.httpDuration.observe({ method: req.method, route, status: String(res.statusCode) }, seconds);
      (res.locals.log as Logger).info(
        { method: req.method, route, path: req.path, status: res.statusCode, ms: Math.round(seconds * 1e5) / 100, tenant: res.locals.tenant },
        'request',
      );
    });
    next();
  };
}

export function metricsRoutes(metrics: Metrics): Router {
  const router = Router();
  router.get('/metrics', async (_req, res) => {
    res.set('Content-Type', metrics.registry.contentType);
    res.send(await metrics.registry.metrics());
  });
  return router;
}
