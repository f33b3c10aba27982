import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import express, { Router } from 'express';
import { projectRoot } from '../lib/paths.js';

/** The page loads only local assets: the machines toolsift runs on often have no internet. */
const DOCS_PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>toolsift API</title>
  <link rel="stylesheet" href="/docs/assets/swagger-ui.css">
</head>
<body>
  <div id="docs"></div>
  <script src="/docs/assets/swagger-ui-bundle.js"></script>
  <script>
    window.ui = SwaggerUIBundle({ url: '/openapi.yaml', dom_id: '#docs', deepLinking: true });
  </script>
</body>
</html>
`;

/** GET /openapi.yaml (the contract clients are generated from) and GET /docs (a readable page). */
export function docsRoutes(): Router {
  const router = Router();
  const spec = readFileSync(join(projectRoot(), 'openapi.yaml'), 'utf8');
  const assets = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
  router.get('/openapi.yaml', (_req, res) => {
    res.type('application/yaml').send(spec);
  });
  router.get('/docs', (_req, res) => {
    res.type('html').send(DOCS_PAGE);
  });
  router.use('/docs/assets', express.static(assets, { index: false, maxAge: '1h' }));
  return router;
}
