import { pipeline, type FeatureExtractionPipeline } from '@huggingface/transformers';
import { chunk, l2Normalize, type Embedder } from './embedder.js';

export type Pooling = 'mean' | 'cls';
export type ModelDtype = 'fp32' | 'fp16' | 'q8' | 'int8' | 'uint8' | 'q4' | 'bnb4' | 'q4f16';

export interface TransformersOptions {
  /** Hub id or a path under `modelDir`, e.g. 'Xenova/all-MiniLM-L6-v2' or 'test/tiny-random-bert'. */
  modelId: string;
  /**
   * Folder holding `<modelId>/config.json, tokenizer.json, onnx/model.onnx`. Downloads (when
   * `allowRemote`) are stored here too, so a model fetched once loads offline afterwards.
   */
  modelDir?: string;
  /** Fetch from the Hugging Face hub when the files are not in `modelDir`. */
  allowRemote: boolean;
  pooling?: Pooling;
  queryPrefix?: string;
  documentPrefix?: string;
  /** Which ONNX file: 'fp32' is `onnx/model.onnx`, 'q8' is `onnx/model_quantized.onnx`. */
  dtype?: ModelDtype;
  /** Texts per forward pass for documents; see `DEFAULT_TRANSFORMERS_CHUNK_SIZE`. */
  chunkSize?: number;
}

type ModelDefaults = { pooling: Pooling; queryPrefix?: string; documentPrefix?: string };

const BGE_QUERY_PREFIX = 'Represent this sentence for searching relevant passages: ';

/**
 * How known model families were trained: the wrong pooling or a missing prefix silently costs
 * retrieval quality, so the id picks them unless the caller says otherwise. First match wins.
 */
const KNOWN_MODELS: ReadonlyArray<[RegExp, ModelDefaults]> = [
  [/(^|\/)bge-/i, { pooling: 'cls', queryPrefix: BGE_QUERY_PREFIX }],
  [/(^|\/)(multilingual-)?e5-/i, { pooling: 'mean', queryPrefix: 'query: ', documentPrefix: 'passage: ' }],
  [/(^|\/)gte-/i, { pooling: 'mean' }],
  [/(^|\/)all-MiniLM-|(^|\/)all-mpnet-/i, { pooling: 'mean' }],
];

export function modelDefaults(modelId: string): ModelDefaults {
  return KNOWN_MODELS.find(([pattern]) => pattern.test(modelId))?.[1] ?? { pooling: 'mean' };
}

/**
 * onnxruntime-node runs each forward pass synchronously on the JS thread (its `run` is only
 * deferred with setImmediate), so a large batch would stall the event loop for its whole length.
 * Documents therefore go through in chunks, and a query issued meanwhile runs between two chunks.
 */
export const DEFAULT_TRANSFORMERS_CHUNK_SIZE = 16;

const PROBE_TEXT = 'dimension probe';

/** `pipeline`'s generic return type is a union too large for tsc (TS2590); pin the one task used. */
const loadFeatureExtraction = pipeline as (
  task: 'feature-extraction',
  modelId: string,
  options: { dtype: ModelDtype; cache_dir?: string; local_files_only: boolean },
) => Promise<FeatureExtractionPipeline>;

/**
 * Loads the model and embeds one probe text to learn its dimension. Rejects when the files are
 * missing or the model cannot run.
 *
 * transformers.js keeps its settings in a process-wide `env` object; this passes the folder and
 * the offline switch per call (`cache_dir`, `local_files_only`) instead, so two embedders with
 * different folders do not interfere and nothing global is changed.
 */
export async function createTransformersEmbedder(options: TransformersOptions): Promise<Embedder> {
  const defaults = modelDefaults(options.modelId);
  const pooling = options.pooling ?? defaults.pooling;
  const queryPrefix = options.queryPrefix ?? defaults.queryPrefix ?? '';
  const documentPrefix = options.documentPrefix ?? defaults.documentPrefix ?? '';
  const chunkSize = options.chunkSize ?? DEFAULT_TRANSFORMERS_CHUNK_SIZE;

  const extractor = await loadFeatureExtraction('feature-extraction', options.modelId, {
    dtype: options.dtype ?? 'fp32',
    ...(options.modelDir === undefined ? {} : { cache_dir: options.modelDir }),
    local_files_only: !options.allowRemote,
  });

  const embed = async (texts: string[]): Promise<number[][]> => {
    const output = await extractor(texts, { pooling, normalize: true });
    const [rows, dimension] = output.dims as [number, number];
    const data = output.data as Float32Array;
    // Normalized again in float64 so stored vectors have unit length to ~1e-12, not ~1e-7.
    return Array.from({ length: rows }, (_, row) => l2Normalize(data.subarray(row * dimension, (row + 1) * dimension)));
  };

  const [probe] = await embed([PROBE_TEXT]);
  const dimension = probe!.length;

  return {
    modelId: options.modelId,
    dimension,
    async embedDocuments(texts) {
      const vectors: number[][] = [];
      for (const part of chunk(texts, chunkSize)) {
        vectors.push(...(await embed(part.map((text) => documentPrefix + text))));
      }
      return vectors;
    },
    async embedQuery(text) {
      const [vector] = await embed([queryPrefix + text]);
      return vector!;
    },
    close: () => extractor.dispose(),
  };
}
