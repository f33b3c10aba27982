import { Router, type RequestHandler } from 'express';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';

/** The status logged for a request whose client closed the connection before the answer (nginx's 499). */
const CLIENT_CLOSED = 499;

/**
 * Per request: a child logger carrying the request id (every line a handler writes has it), one
 * access line when the answer is sent (or when the client closed the connection first), and the
 * latency histogram by route template.
 */
export function observeRequests(logger: Logger, metrics: Metrics): RequestHandler {
  return (req, res, next) => {
    const started = process.hrtime.bigint();
    res.locals.log = logger.child({ requestId: res.locals.requestId });
    let logged = false;
    /** `clientClosed`: the connection closed before the answer was sent (status 499, as nginx logs it). */
    const logRequest = (clientClosed: boolean) => {
      if (logged) return;
      logged = true;
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const route = req.route ? `${req.baseUrl}${String(req.route.path)}` : 'unmatched';
      const status = clientClosed ? CLIENT_CLOSED : res.statusCode;
      metrics.httpDuration.observe({ method: req.method, route, status: String(status) }, seconds);
      (res.locals.log as Logger).info(
        {
          method: req.method,
          route,
          path: req.path,
          status,
          ms: Math.round(seconds * 1e5) / 100,
          tenant: res.locals.tenant,
          ...(clientClosed ? { clientClosed } : {}),
        },
        'request',
      );
    };
    res.on('finish', () => logRequest(false));
    res.on('close', () => logRequest(!res.writableFinished));
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
