/**
 * Bounds on request bodies still arriving (issue: hard edges §7): clients that send a large body
 * slowly, or never its last byte, must not hold memory without limit.
 * - `bodyBudget`: the bytes of bodies being received at once, over all requests, stay under
 *   BODY_MEMORY: a request's declared Content-Length (BODY_LIMIT when it is chunked) is reserved
 *   before its body is read and released when the response ends; past the bound a 503 with
 *   Retry-After answers at once, without reading the body.
 * - `serverTimeouts`: the whole request, body included, must arrive within BODY_TIMEOUT_MS and its
 *   headers within HEADERS_TIMEOUT_MS (Node then answers 408 and closes the connection), checked
 *   every second rather than Node's default 30.
 */
import type { ServerOptions } from 'node:http';
import type { RequestHandler } from 'express';
import { AppError } from '../errors.js';
import { sendError } from './errors.js';

export function bodyBudget(maxBytes: number, bodyLimit: number): RequestHandler {
  let inFlight = 0;
  return (req, res, next) => {
    const declared = req.headers['content-length'];
    const chunked = req.headers['transfer-encoding'] !== undefined;
    if (declared === undefined && !chunked) return next();
    // An oversized declared length is the body parser's 413; reserve at most BODY_LIMIT for it.
    const reserve = Math.min(bodyLimit, chunked ? bodyLimit : Number(declared) || 0);
    if (reserve === 0) return next();
    if (inFlight + reserve > maxBytes) {
      res.setHeader('Retry-After', '1');
      res.setHeader('Connection', 'close');
      sendError(res, new AppError('service_unavailable', `too many request bodies are being received at once (BODY_MEMORY ${maxBytes} bytes); retry shortly`));
      return;
    }
    inFlight += reserve;
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      inFlight -= reserve;
    };
    res.once('close', release);
    res.once('finish', release);
    next();
  };
}

export function serverTimeouts(config: { BODY_TIMEOUT_MS: number; HEADERS_TIMEOUT_MS: number }): ServerOptions {
  return {
    requestTimeout: config.BODY_TIMEOUT_MS,
    headersTimeout: Math.min(config.HEADERS_TIMEOUT_MS, config.BODY_TIMEOUT_MS),
    connectionsCheckingInterval: 1_000,
  };
}
