/**
 * Worker-thread entry that counts definition tokens (catalog/token-thread.ts), so that neither the
 * counting (~40-80 us a tool) nor the tokenizer's tables are on the main thread. Speaks
 * `WorkerPool`'s protocol: texts in, o200k_base token counts out.
 */
import { parentPort } from 'node:worker_threads';
import { countText } from './count-text.js';
import type { WorkerMessage, WorkerRequest } from '../embed/worker-pool.js';

const port = parentPort;
if (!port) throw new Error('tokens-worker.ts must run in a worker thread');

port.on('message', ({ id, payload }: WorkerRequest<string[]>) => {
  try {
    port.postMessage({ type: 'result', id, value: payload.map(countText) } satisfies WorkerMessage<number[]>);
  } catch (error) {
    port.postMessage({ type: 'error', id, message: error instanceof Error ? error.message : String(error) } satisfies WorkerMessage<number[]>);
  }
});
port.postMessage({ type: 'ready' } satisfies WorkerMessage<number[]>);
