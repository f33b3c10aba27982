import { appendFileSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Embedder } from '../../src/embed/embedder.js';
import { withVectorFile } from '../../src/embed/vector-file.js';

/** A model that counts its calls: documents and queries of one text differ, as a query prefix makes them. */
function countingModel(): Embedder & { calls: string[] } {
  const calls: string[] = [];
  const vector = (kind: string, text: string) => [text.length / 7, kind === 'q' ? Math.PI : Math.E, 1 / 3];
  return {
    calls,
    modelId: 'counting',
    dimension: 3,
    embedDocuments: async (texts) => {
      calls.push(...texts.map((text) => `d:${text}`));
      return texts.map((text) => vector('d', text));
    },
    embedQuery: async (text) => {
      calls.push(`q:${text}`);
      return vector('q', text);
    },
    close: async () => {},
  };
}

describe('withVectorFile (embed/vector-file.ts)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'toolsift-vectors-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('answers a text it holds from the file, exactly as the model gave it, and asks the model only for the others', async () => {
    const file = join(dir, 'nested', 'a.vec');
    const first = countingModel();
    const kept = withVectorFile(first, file);
    const documents = await kept.embedDocuments(['send an email', 'read a file', 'send an email']);
    const query = await kept.embedQuery('send an email');
    expect(first.calls).toEqual(['d:send an email', 'd:read a file', 'q:send an email']);

    const second = countingModel();
    const again = withVectorFile(second, file);
    expect(await again.embedDocuments(['read a file', 'list folders', 'send an email'])).toEqual([documents[1], [12 / 7, Math.E, 1 / 3], documents[0]]);
    expect(await again.embedQuery('send an email')).toEqual(query);
    // A document's vector is not a query's: the query of a text held only as a document asks the model.
    expect(await again.embedQuery('read a file')).toEqual([11 / 7, Math.PI, 1 / 3]);
    expect(second.calls).toEqual(['d:list folders', 'q:read a file']);
  });

  it('ignores a torn last record (a process killed mid-write) and keeps the whole ones', async () => {
    const file = join(dir, 'b.vec');
    const kept = withVectorFile(countingModel(), file);
    await kept.embedDocuments(['one', 'two']);
    const whole = statSync(file).size;
    appendFileSync(file, Buffer.alloc(10, 7));
    const model = countingModel();
    const again = withVectorFile(model, file);
    await again.embedDocuments(['one', 'two', 'three']);
    expect(model.calls).toEqual(['d:three']);
    // The next record went where the torn one began: a third reader holds all three.
    const third = countingModel();
    expect(await withVectorFile(third, file).embedDocuments(['three', 'two', 'one'])).toEqual([
      [5 / 7, Math.E, 1 / 3],
      [3 / 7, Math.E, 1 / 3],
      [3 / 7, Math.E, 1 / 3],
    ]);
    expect(third.calls).toEqual([]);
    expect(statSync(file).size).toBe((whole / 2) * 3);
  });
});
