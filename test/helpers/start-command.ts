import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * `npm start`'s command as words, from package.json's start script: `node [flags] dist/src/main.js`.
 * The start-command test checks that shape and the Dockerfile's CMD against it; `npm run bench`
 * starts the service with its flags (of another checkout's package.json for its `--baseline`).
 */
export function startCommandWords(root = fileURLToPath(new URL('../..', import.meta.url))): string[] {
  const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { scripts: { start: string } };
  // `exec` makes the shell npm runs the script in become node, so signals sent to npm reach it.
  return pkg.scripts.start
    .trim()
    .replace(/^exec\s+/, '')
    .split(/\s+/);
}
