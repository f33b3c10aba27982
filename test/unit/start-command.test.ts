// @store-independent: never opens the store the suite is given (vitest.config.ts runs it once, not again on PostgreSQL).
/**
 * The service runs with the same node flags however it is started: `npm start`, the container
 * (Dockerfile CMD) and `npm run bench` (which reads the start script). The flags are part of the
 * selector's latency (see README, "Measured quality and speed"), so a drift would go unnoticed
 * until a benchmark disagreed with production.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { startCommandWords } from '../helpers/start-command.js';

const root = new URL('../../', import.meta.url);
const startWords = startCommandWords();
const dockerfile = readFileSync(new URL('Dockerfile', root), 'utf8');

function dockerCmd(text: string): string[] {
  const lines = text.split('\n').filter((line) => /^CMD\s/.test(line));
  if (lines.length === 0) throw new Error('Dockerfile has no CMD');
  return JSON.parse(lines.at(-1)!.replace(/^CMD\s+/, '')) as string[];
}

describe('start command', () => {
  it('npm start runs node with the young-generation flag on the built server', () => {
    expect(startWords[0]).toBe('node');
    expect(startWords.at(-1)).toBe('dist/src/main.js');
    expect(startWords.some((word) => /^--max-semi-space-size=\d+$/.test(word))).toBe(true);
  });

  it('the container runs exactly what npm start runs', () => {
    expect(dockerCmd(dockerfile)).toEqual(startWords);
  });
});
