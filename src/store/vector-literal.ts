import { sql, type SQL } from 'drizzle-orm';

/**
 * A vector as pgvector's text input, `[x1,x2,...]`. Components below 1 in magnitude (every
 * component of a unit vector) are written as integers of 1e-9: three times faster to format than
 * JavaScript's shortest round-trip form and half the bytes, and finer than the float4 pgvector
 * stores (its step near 0.04 is 4e-9). Writing 4,000 vectors of 512 dimensions the plain way cost a
 * worker ~1 s of its main thread, the thread that feeds the model.
 */
export function vectorLiteral(vector: ArrayLike<number>): string {
  let text = '[';
  for (let i = 0; i < vector.length; i++) {
    const value = vector[i]!;
    if (i > 0) text += ',';
    text += Math.abs(value) < 1 ? `${Math.round(value * 1e9)}e-9` : String(value);
  }
  return `${text}]`;
}

/**
 * A vector in pgvector's binary input (`vector_recv`): the dimension and a reserved zero as
 * big-endian int16, then each component as a big-endian float4. node-postgres sends a Buffer
 * parameter in binary format, so PostgreSQL reads it without parsing text: 2 KB a 512-d vector
 * against ~7 KB of literal, and neither side formats or parses 512 numbers.
 */
export function vectorBinary(vector: ArrayLike<number>): Buffer {
  if (vector.length > 16_000) throw new RangeError(`a pgvector vector has at most 16,000 dimensions, got ${vector.length}`);
  const buffer = Buffer.allocUnsafe(4 + 4 * vector.length);
  buffer.writeInt16BE(vector.length, 0);
  buffer.writeInt16BE(0, 2);
  for (let i = 0; i < vector.length; i++) buffer.writeFloatBE(vector[i]!, 4 + 4 * i);
  return buffer;
}

/**
 * A vector from pgvector's binary output (`vector_send`: the layout `vectorBinary` writes): the same
 * float4 values as its text form (pgvector writes the shortest round trip) without parsing 512
 * numbers of text a vector.
 */
export function vectorFromBinary(bytes: Uint8Array): Float32Array {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const dimension = view.getInt16(0);
  if (bytes.byteLength !== 4 + 4 * dimension)
    throw new RangeError(`a binary vector of ${dimension} dimensions has ${4 + 4 * dimension} bytes, got ${bytes.byteLength}`);
  const vector = new Float32Array(dimension);
  for (let i = 0; i < dimension; i++) vector[i] = view.getFloat32(4 + 4 * i);
  return vector;
}

/**
 * A stored vector column as a driver reads it fastest, for `vectorRead`: binary from node-postgres
 * (`binary`, database.ts `sendsBinaryParameters`), text from PGlite. For 3,740 vectors on
 * PostgreSQL, binary takes ~140 ms to read plus ~9 to decode against ~200 plus ~120 of JSON.parse on
 * the main thread (bench/probes/vector-read.ts); on PGlite, whose bytea parser is JavaScript, binary
 * takes over twice as long as text.
 */
export function vectorColumn(column: SQL, binary: boolean): SQL {
  return binary ? sql`vector_send(${column})` : sql`${column}::text`;
}

/** A vector read through `vectorColumn`. */
export function vectorRead(value: Uint8Array | string): Float32Array {
  return typeof value === 'string' ? Float32Array.from(JSON.parse(value) as number[]) : vectorFromBinary(value);
}
