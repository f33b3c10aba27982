/**
 * client/ is a real package: built with tsc, packed with npm, installed from the tarball into an
 * empty project, and imported there (ESM, with types), talking to a running toolsift.
 */
import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';

const root = new URL('../..', import.meta.url).pathname;

describe('the @toolsift/client package', () => {
  let app: TestApp;
  const project = mkdtempSync(join(tmpdir(), 'toolsift-client-'));
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(async () => {
    await app?.close();
    rmSync(project, { recursive: true, force: true });
  });

  it('packs only dist/ and package.json, installs from the tarball and works from another project', async () => {
    execFileSync('npm', ['run', '-s', 'client:build'], { cwd: root, stdio: 'pipe' });
    const packed = JSON.parse(
      execFileSync('npm', ['pack', '--json', '--pack-destination', project], { cwd: join(root, 'client'), encoding: 'utf8' }),
    ) as Array<{ filename: string; files: Array<{ path: string }> }>;
    expect(packed[0]!.files.map((file) => file.path).sort()).toEqual([
      'dist/index.d.ts',
      'dist/index.js',
      'dist/schema.d.ts',
      'dist/tool-search.d.ts',
      'dist/tool-search.js',
      'package.json',
    ]);
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
    execFileSync('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', join(project, packed[0]!.filename)], { cwd: project, stdio: 'pipe' });
    writeFileSync(
      join(project, 'main.js'),
      `import { createToolsiftClient, rankToolNames } from '@toolsift/client';
       const client = createToolsiftClient({ baseUrl: process.argv[2] });
       const { data } = await client.GET('/healthz');
       const names = await rankToolNames({ baseUrl: process.argv[2] }, 'send an email', [{ name: 'send_email', description: 'Send an email' }, { name: 'read_file', description: 'Read a file' }], { maxResults: 1 });
       console.log(JSON.stringify({ health: data, names }));`,
    );
    // Not execFileSync: the service answering it runs in this process.
    const { stdout } = await promisify(execFile)(process.execPath, ['main.js', app.url], { cwd: project, encoding: 'utf8', timeout: 30_000 });
    const output = JSON.parse(stdout);
    expect(output).toEqual({ health: { status: 'ok' }, names: ['send_email'] });
  }, 180_000);
});
