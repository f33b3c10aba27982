import { describe, expect, it } from 'vitest';
import { seededRandom } from '../../src/eval/seeded-random.js';
import { addTypos, misspell } from '../../src/eval/typos.js';

describe('seeded typos for the eval', () => {
  it('are the same for the same seed and differ for another', () => {
    const text = 'search the web for the weather forecast in Paris tomorrow';
    expect(addTypos(text, 0.5, seededRandom(7))).toBe(addTypos(text, 0.5, seededRandom(7)));
    expect(addTypos(text, 0.5, seededRandom(7))).not.toBe(addTypos(text, 0.5, seededRandom(8)));
  });

  it('edit only words of at least 4 letters, once each, and none at rate 0', () => {
    const text = 'get the weather for a city';
    expect(addTypos(text, 0, seededRandom(1))).toBe(text);
    const changed = addTypos(text, 1, seededRandom(3)).split(' ');
    expect(changed.filter((word, index) => word !== text.split(' ')[index])).toHaveLength(2);
    expect([changed[1], changed[3], changed[4]]).toEqual(['the', 'for', 'a']);
    const random = seededRandom(5);
    for (let i = 0; i < 200; i++) {
      const edited = misspell('forecast', random);
      expect(edited).not.toBe('forecast');
      expect(edited[0]).toBe('f');
      expect(Math.abs(edited.length - 8)).toBeLessThanOrEqual(1);
    }
  });
});
