/**
 * The HTTP server main.ts runs (and the tests start): Node's server with the request and header
 * timeouts of body-budget.ts, and Node's own protocol-level rejections answered in the error shape.
 *
 * Some requests never reach express: bad chunked encoding, both Content-Length and
 * Transfer-Encoding, headers past Node's limit, a request that did not arrive in time. Node answers
 * those itself with a bare status line; here they get the JSON error body every other 4xx has, and
 * the connection is closed (the parser's state is lost).
 */
import { createServer, STATUS_CODES, type RequestListener, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { ErrorCode } from '../errors.js';
import { serverTimeouts } from './body-budget.js';
import { STATUS_BY_CODE, type ErrorBody } from './errors.js';

export function createHttpServer(config: { BODY_TIMEOUT_MS: number; HEADERS_TIMEOUT_MS: number }, app: RequestListener): Server {
  const server = createServer(serverTimeouts(config), app);
  server.on('clientError', (error: Error & { code?: string; reason?: string }, socket: Duplex & { bytesWritten?: number }) => {
    // A reset connection, or a response already under way: nothing sensible can be written.
    if (error.code === 'ECONNRESET' || !socket.writable || (socket.bytesWritten ?? 0) > 0) {
      socket.destroy();
      return;
    }
    const { code, message } = describeClientError(error);
    const status = STATUS_BY_CODE[code];
    const body = JSON.stringify({ error: { code, message, request_id: '' } } satisfies ErrorBody);
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
  return server;
}

/** Node's parser and timeout errors (llhttp's HPE_* codes) as an error code (its status: STATUS_BY_CODE) and a message naming the fault. */
function describeClientError(error: { code?: string; reason?: string; message: string }): { code: ErrorCode; message: string } {
  const reason = error.reason ?? error.message;
  switch (error.code) {
    case 'HPE_HEADER_OVERFLOW':
      return { code: 'headers_too_large', message: "request headers too large: keep them under 16 KB (Node's limit)" };
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return { code: 'request_timeout', message: 'the request did not arrive whole in time (BODY_TIMEOUT_MS, HEADERS_TIMEOUT_MS)' };
    case 'HPE_UNEXPECTED_CONTENT_LENGTH':
    case 'HPE_INVALID_TRANSFER_ENCODING':
      if (/content-length/i.test(reason))
        return { code: 'malformed_request', message: 'malformed HTTP request: send Content-Length or Transfer-Encoding: chunked, not both' };
      break;
    case 'HPE_INVALID_CHUNK_SIZE':
    case 'HPE_STRICT':
      return { code: 'malformed_request', message: `malformed HTTP request: bad chunked encoding (${reason})` };
  }
  return { code: 'malformed_request', message: `malformed HTTP request: ${reason}` };
}
