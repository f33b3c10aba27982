import { existsSync } from 'node:fs';
import path from 'node:path';
import type { Embedder, EmbedderStatus } from './embedder.js';
import { SERVICE_MODEL_PREFIX, type ServiceEmbedderOptions } from './service-embedder.js';
import type { Pooling } from './transformers.js';
import { USE_LITE_MODEL_ID } from './use-lite.js';

export interface LoadEmbedderOptions {
  /** 'use-lite', 'none', `openai:<model>` (an embedding service) or a transformers.js model id such as 'Xenova/all-MiniLM-L6-v2'. */
  model: string;
  /** The embedding service's address and limits, for `openai:<model>`. */
  service?: Omit<ServiceEmbedderOptions, 'model' | 'queryPrefix' | 'documentPrefix'>;
  /** Folder of local transformers.js models (`<modelDir>/<model>/...`). */
  modelDir?: string;
  allowRemote: boolean;
  /** Worker threads for use-lite. */
  threads: number;
  /** use-lite's model threads' nice value (Linux); default `DEFAULT_USE_LITE_NICE`. */
  threadNice?: number;
  pooling?: Pooling;
  queryPrefix?: string;
  documentPrefix?: string;
}

/** pino's logger fits this; so does a test double. */
export interface EmbedLogger {
  info(details: object, message: string): void;
  warn(details: object, message: string): void;
}

export const DISABLED_MODEL = 'none';

/**
 * Builds the configured embedder. Never throws: a model that cannot load leaves the service
 * ranking with BM25 alone, so the failure becomes an `unavailable` status whose reason names
 * the missing package or folder (marked `transient` when an embedding service was only
 * unreachable or failing); /readyz answers 503 for a model that is not transient (deps.ts). The
 * implementations are imported lazily so that choosing use-lite never loads onnxruntime, and a
 * missing package is reported rather than fatal.
 */
export async function loadEmbedder(options: LoadEmbedderOptions, logger?: EmbedLogger): Promise<{ embedder: Embedder | null; status: EmbedderStatus }> {
  const modelId = options.model;
  if (modelId === DISABLED_MODEL) {
    return { embedder: null, status: { state: 'disabled', modelId } };
  }
  const started = performance.now();
  try {
    const embedder =
      modelId === USE_LITE_MODEL_ID
        ? await loadUseLite(options)
        : modelId.startsWith(SERVICE_MODEL_PREFIX)
          ? await loadService(options)
          : await loadTransformers(options);
    logger?.info({ modelId, dimension: embedder.dimension, loadMs: Math.round(performance.now() - started) }, 'embedding model ready');
    return { embedder, status: { state: 'ready', modelId: embedder.modelId } };
  } catch (error) {
    const reason = describeLoadFailure(error);
    const transient = (error as { transient?: boolean }).transient === true;
    logger?.warn({ modelId, reason, transient }, 'embedding model unavailable; ranking with BM25 only');
    return { embedder: null, status: { state: 'unavailable', modelId, reason, ...(transient ? { transient } : {}) } };
  }
}

async function loadUseLite(options: LoadEmbedderOptions): Promise<Embedder> {
  const { createUseLiteEmbedder } = await import('./use-lite.js');
  return createUseLiteEmbedder({ threads: options.threads, nice: options.threadNice });
}

async function loadService(options: LoadEmbedderOptions): Promise<Embedder> {
  const model = options.model.slice(SERVICE_MODEL_PREFIX.length);
  if (!model) throw new Error('EMBED_MODEL=openai:<model> needs the model name after "openai:"');
  if (!options.service) throw new Error('an embedding service needs EMBED_BASE_URL');
  const { ServiceEmbedder } = await import('./service-embedder.js');
  return ServiceEmbedder.connect({ ...options.service, model, queryPrefix: options.queryPrefix, documentPrefix: options.documentPrefix });
}

async function loadTransformers(options: LoadEmbedderOptions): Promise<Embedder> {
  if (options.modelDir !== undefined && !options.allowRemote) {
    // The library's own message for this lists a file deep inside the folder; say what is missing.
    const folder = path.resolve(options.modelDir, options.model);
    if (!existsSync(folder)) throw new Error(`model folder not found: ${folder} (remote models are disabled)`);
  }
  const { createTransformersEmbedder } = await import('./transformers.js');
  return createTransformersEmbedder({
    modelId: options.model,
    modelDir: options.modelDir,
    allowRemote: options.allowRemote,
    pooling: options.pooling,
    queryPrefix: options.queryPrefix,
    documentPrefix: options.documentPrefix,
  });
}

/** Node's "Cannot find package 'x' imported from y" already names the package; keep it whole. */
function describeLoadFailure(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'ERR_MODULE_NOT_FOUND') return `package not installed: ${error.message}`;
  return error.message;
}
