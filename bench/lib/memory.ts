/**
 * Memory held, for benches that measure what a structure holds: heap and array buffers (typed
 * arrays' backing stores live outside the heap) after two full GCs, with GC exposed at run time.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

setFlagsFromString('--expose-gc');
const collect = runInNewContext('gc') as () => void;

/** Bytes of heap and array buffers in use after two full GCs. */
export function memoryInUse(): number {
  collect();
  collect();
  const { heapUsed, arrayBuffers } = process.memoryUsage();
  return heapUsed + arrayBuffers;
}
