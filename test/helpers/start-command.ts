import { readFileSync } from 'node:fs';

/**
 * `npm start`'s command as words, from package.json's start script: `node [flags] dist/src/main.js`.
 * The start-command test checks that shape and the Dockerfile's CMD against it; `npm run bench`
 * starts the service with its flags.
 */
export function startCommandWords(): string[] {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { scripts: { start: string } };
  return pkg.scripts.start.trim().split(/\s+/);
}
