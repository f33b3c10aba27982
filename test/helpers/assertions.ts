import { expect } from 'vitest';
import type { TestResponse } from './app.js';

export interface ErrorDetail {
  code: string;
  message: string;
  details?: any;
  request_id: string;
}

/** The one error shape: status, JSON, {error: {code, message, details?, request_id}}, X-Request-Id echoed. */
export function expectError(response: TestResponse, status: number, code: string): ErrorDetail {
  expect(response.status, response.text).toBe(status);
  expect(response.headers.get('content-type')).toMatch(/^application\/json/);
  expect(response.body).toEqual({
    error: {
      code,
      message: expect.any(String),
      request_id: expect.any(String),
      ...(response.body?.error?.details === undefined ? {} : { details: expect.anything() }),
    },
  });
  expect(response.body.error.request_id).not.toBe('');
  expect(response.headers.get('x-request-id')).toBe(response.body.error.request_id);
  return response.body.error as ErrorDetail;
}

/** Waits until `test` holds, checking every 100 ms; fails naming `what` after `timeoutMs`. */
export async function until(what: string, test: () => boolean | Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await test())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
