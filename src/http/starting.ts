import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { ErrorBody } from './errors.js';

/**
 * What the port answers between listening and the service being built (main.ts): /healthz 200
 * (the process is alive), /readyz 503 naming what is still starting, every other request 503
 * `service_unavailable` with Retry-After, in the shapes openapi.yaml gives them. No request is
 * read past its head and nothing reaches the store, the model or a catalog.
 */
export function startingListener(phase: () => string): RequestListener {
  return (request: IncomingMessage, response: ServerResponse) => {
    const path = (request.url ?? '/').split('?')[0];
    if (path === '/healthz' && (request.method === 'GET' || request.method === 'HEAD')) {
      send(response, 200, { status: 'ok' });
      return;
    }
    response.setHeader('Retry-After', '1');
    if (path === '/readyz') {
      send(response, 503, { status: 'not_ready', components: { start: { status: 'down', reason: `starting: ${phase()}` } } });
      return;
    }
    const body: ErrorBody = { error: { code: 'service_unavailable', message: `toolsift is starting (${phase()}); retry in a second`, request_id: '' } };
    // The body is not read: the connection closes after the answer rather than carry it.
    response.setHeader('Connection', 'close');
    send(response, 503, body);
  };
}

function send(response: ServerResponse, status: number, body: object): void {
  const text = JSON.stringify(body);
  response.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(text) });
  response.end(text);
}
