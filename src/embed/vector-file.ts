import { createHash } from 'node:crypto';
import { appendFileSync, existsSync, mkdirSync, readFileSync, truncateSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Embedder } from './embedder.js';

/** A record's key: the first bytes of sha256(kind, text); 16 bytes leave collisions to chance alone. */
const KEY_BYTES = 16;

/**
 * Keeps every vector the model computes in one append-only file, and answers a text it already
 * holds from there: `npm run eval -- --vector-file <file>` (and the eval regression test, which runs
 * the same corpora on both stores in one CI run) embeds each tool and query once. The file is the
 * model's own output, stored exactly (float64), so an answer from it is the one the model gives;
 * its name must say which model and which code made it (the caller's choice), as nothing in a
 * record does. Documents and queries are keyed apart (a model may prefix queries). Records are
 * fixed-size, appended once per call: a torn last record (a process killed mid-write) is ignored.
 */
export function withVectorFile(embedder: Embedder, file: string): Embedder {
  const size = KEY_BYTES + embedder.dimension * 8;
  const held = new Map<string, number[]>();
  if (existsSync(file)) {
    const bytes = readFileSync(file);
    // Appends go after the last whole record, never after a torn one.
    const whole = bytes.length - (bytes.length % size);
    if (whole < bytes.length) truncateSync(file, whole);
    for (let at = 0; at < whole; at += size) {
      const vector = new Array<number>(embedder.dimension);
      for (let i = 0; i < vector.length; i++) vector[i] = bytes.readDoubleLE(at + KEY_BYTES + i * 8);
      held.set(bytes.toString('hex', at, at + KEY_BYTES), vector);
    }
  } else {
    mkdirSync(dirname(file), { recursive: true });
  }
  const keyOf = (kind: 'd' | 'q', text: string) => createHash('sha256').update(kind).update('\0').update(text).digest().subarray(0, KEY_BYTES);

  function keep(entries: { key: Buffer; vector: number[] }[]): void {
    if (entries.length === 0) return;
    const out = Buffer.alloc(entries.length * size);
    entries.forEach(({ key, vector }, n) => {
      key.copy(out, n * size);
      vector.forEach((value, i) => out.writeDoubleLE(value, n * size + KEY_BYTES + i * 8));
      held.set(key.toString('hex'), vector);
    });
    appendFileSync(file, out);
  }

  return {
    modelId: embedder.modelId,
    dimension: embedder.dimension,
    ...(embedder.sharesQueries ? { sharesQueries: true } : {}),
    ...(embedder.lastFailure ? { lastFailure: () => embedder.lastFailure?.() } : {}),
    async embedDocuments(texts) {
      const keys = texts.map((text) => keyOf('d', text));
      const missing = [...new Set(texts.filter((_, i) => !held.has(keys[i]!.toString('hex'))))];
      if (missing.length > 0) {
        const vectors = await embedder.embedDocuments(missing);
        keep(missing.map((text, i) => ({ key: keyOf('d', text), vector: vectors[i]! })));
      }
      return keys.map((key) => held.get(key.toString('hex'))!);
    },
    async embedQuery(text) {
      const key = keyOf('q', text);
      const known = held.get(key.toString('hex'));
      if (known) return known;
      const vector = await embedder.embedQuery(text);
      keep([{ key, vector }]);
      return vector;
    },
    close: () => embedder.close(),
  };
}
