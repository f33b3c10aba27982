import { withDeadline } from '../lib/deadline.js';
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
    await Promise.all(
      checks.map(async (item) => {
        try {
          components[item.name] = {
            status: 'ok',
            ...(await withDeadline(item.check(), READINESS_TIMEOUT_MS, () => new Error(`${item.name} did not answer within ${READINESS_TIMEOUT_MS} ms`))),
          };
        } catch (error) {
          if (item.required) ready = false;
          components[item.name] = { status: item.required ? 'down' : 'degraded', reason: (error as Error).message };
        }
      }),
    );
    res.status(ready ? 200 : 503).json({ status: ready ? 'ready' : 'not_ready', components });
  });
  return router;
}

/** /readyz answers within about a second whatever a component does: a hung check counts as down. */
export const READINESS_TIMEOUT_MS = 800;
