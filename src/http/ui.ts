import { join } from 'node:path';
import express, { Router } from 'express';
import { projectRoot } from '../lib/paths.js';

/**
 * GET /ui: a playground page served by the service itself (plain HTML, CSS and one script from
 * `ui/`, nothing from a CDN: the machines toolsift runs on often have no internet). The page calls
 * the public API from the browser with the key typed into it; the server never stores the key.
 */
export function uiRoutes(): Router {
  const router = Router();
  const folder = join(projectRoot(), 'ui');
  // Only this origin's own files, and no inline script: what the page shows comes from tool
  // definitions pushed by other people, so an injected <script> must not run.
  router.use('/ui', (_req, res, next) => {
    res.setHeader(
      'Content-Security-Policy',
      "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
    );
    res.setHeader('X-Content-Type-Options', 'nosniff');
    next();
  });
  router.get('/ui', (req, res, next) => {
    // Relative asset paths resolve under /ui/.
    if (!req.originalUrl.endsWith('/')) return res.redirect(301, '/ui/');
    next();
  });
  router.use('/ui', express.static(folder, { index: 'index.html', maxAge: 0 }));
  return router;
}
