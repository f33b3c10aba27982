import { Router } from 'express';

export interface ReadinessCheck {
  /** Name in the /readyz body, e.g. "database". */
  name: string;
  /** Required checks make the service unready when they fail; optional ones only report. */
  required: boolean;
  check: () => Promise<Record<string, unknown>>;
}

export function healthRoutes(checks: ReadinessCheck[]): Router {
  const router = Router();
  router.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  router.get('/readyz', async (_req, res) => {
    let ready = true;
    const components: Record<string, unknown> = {};
    for (const item of checks) {
      try {
        components[item.name] = { status: 'ok', ...(await item.check()) };
      } catch (error) {
        if (item.required) ready = false;
        components[item.name] = { status: item.required ? 'down' : 'degraded', reason: (error as Error).message };
      }
    }
    res.status(ready ? 200 : 503).json({ status: ready ? 'ready' : 'not_ready', components });
  });
  return router;
}
