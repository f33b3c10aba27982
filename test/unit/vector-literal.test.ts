import { describe, expect, it } from 'vitest';
import { vectorBinary, vectorFromBinary, vectorLiteral } from '../../src/store/vector-literal.js';

const parse = (literal: string) => literal.slice(1, -1).split(',').map(Number);

describe('vectorLiteral', () => {
  it('writes pgvector text input that reads back within 1e-9, finer than float4', () => {
    const vector = Array.from({ length: 512 }, (_, i) => Math.sin(i * 12.9898) * 0.2);
    const literal = vectorLiteral(vector);
    expect(literal).toMatch(/^\[-?\d+e-9(,-?\d+e-9)*\]$/);
    parse(literal).forEach((value, i) => expect(Math.abs(value - vector[i]!)).toBeLessThanOrEqual(5e-10));
    for (const value of parse(literal)) expect(Math.abs(Math.fround(value) - value)).toBeLessThan(1e-8);
  });

  it('keeps components of 1 and more as they are, and takes typed arrays', () => {
    expect(vectorLiteral([1, -2.5, 0, 0.5])).toBe('[1,-2.5,0e-9,500000000e-9]');
    expect(vectorLiteral(Float32Array.from([0.25]))).toBe('[250000000e-9]');
    expect(vectorLiteral([])).toBe('[]');
  });
});

describe('vectorBinary', () => {
  it("writes pgvector's binary input: dimension, a zero, then big-endian float4 components", () => {
    const buffer = vectorBinary([1, -0.5, 0.1]);
    expect(buffer).toHaveLength(4 + 3 * 4);
    expect([buffer.readInt16BE(0), buffer.readInt16BE(2)]).toEqual([3, 0]);
    expect([buffer.readFloatBE(4), buffer.readFloatBE(8), buffer.readFloatBE(12)]).toEqual([1, -0.5, Math.fround(0.1)]);
    expect(buffer.subarray(4, 8)).toEqual(Buffer.from([0x3f, 0x80, 0, 0]));
    expect(vectorBinary(Float32Array.from([0.25])).readFloatBE(4)).toBe(0.25);
  });

  it('refuses more dimensions than pgvector holds', () => {
    expect(() => vectorBinary(new Float32Array(16_001))).toThrow(RangeError);
    expect(vectorBinary(new Float32Array(16_000))).toHaveLength(4 + 64_000);
  });
});

describe('vectorFromBinary', () => {
  it("reads pgvector's binary output (vector_send), from a Buffer or a view into a larger array", () => {
    // What PostgreSQL answered for vector_send('[1,2,-0.5]'::vector).
    const sent = Buffer.from('000300003f80000040000000bf000000', 'hex');
    expect([...vectorFromBinary(sent)]).toEqual([1, 2, -0.5]);
    const values = Float32Array.from([0.1, -0.2, 0.30000001, 1e-8]);
    const inLarger = new Uint8Array(64);
    inLarger.set(vectorBinary(values), 7);
    expect([...vectorFromBinary(inLarger.subarray(7, 7 + 4 + 16))]).toEqual([...values]);
  });

  it('refuses bytes that do not match their dimension', () => {
    expect(() => vectorFromBinary(Buffer.from('000300003f800000', 'hex'))).toThrow(RangeError);
  });
});
