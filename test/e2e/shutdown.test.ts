import http from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { scratchDatabase } from '../helpers/database.js';
import { startService } from '../helpers/process.js';
import { uniqueTools } from '../helpers/queue.js';
import { startTcpProxy } from '../helpers/tcp-proxy.js';

describe('SIGTERM on a real server process', () => {
  it('finishes the request in flight, closes the database and exits 0', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'toolsift-sigterm-'));
    const service = startService({ DATA_DIR: dataDir, LOG_LEVEL: 'info', EMBED_MODEL: 'none', QUEUE_PREFIX: `sigterm-${process.pid}-${Date.now()}` });
    try {
      const { child: server, output, exited, base } = await service;
      // A request whose body is still arriving when SIGTERM lands: half is sent, then the signal,
      // then the rest. The server must finish it before exiting.
      const body = JSON.stringify({
        query: 'task 42',
        max_tools: 3,
        tools: Array.from({ length: 200 }, (_, index) => ({ name: `tool_${index}`, description: `Tool ${index} does task ${index % 97}` })),
      });
      const answer = new Promise<{ status: number; body: string }>((resolve, reject) => {
        const request = http.request(`${base}/v1/tool-discovery/search`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
        });
        request.on('response', (response) => {
          let text = '';
          response.on('data', (chunk) => (text += String(chunk)));
          response.on('end', () => resolve({ status: response.statusCode ?? 0, body: text }));
        });
        request.on('error', reject);
        request.write(body.slice(0, body.length / 2));
        setTimeout(() => {
          server.kill('SIGTERM');
          setTimeout(() => request.end(body.slice(body.length / 2)), 300);
        }, 200);
      });
      const response = await answer;
      expect(response.status, response.body).toBe(200);
      expect(JSON.parse(response.body).selected_names).toHaveLength(3);
      expect(await exited, output()).toBe(0);
      expect(output()).toContain('shutting down');
      expect(output()).toContain('"msg":"stopped"');
      // The selection was still being computed when the signal arrived.
      expect(output().indexOf('shutting down'), output()).toBeLessThan(output().indexOf('"msg":"tool selection"'));
      await expect(fetch(`${base}/healthz`)).rejects.toThrow();
    } finally {
      await service.then(
        ({ child }) => child.exitCode === null && child.kill('SIGKILL'),
        () => undefined,
      );
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('with PostgreSQL partitioned and embedding batches waiting to retry, exits within its 20 s drain window', { timeout: 120_000 }, async () => {
    const scratch = await scratchDatabase('postgres', 'toolsift_sigterm');
    const target = new URL(scratch.url!);
    const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
    const proxied = Object.assign(new URL(scratch.url!), { host: `127.0.0.1:${proxy.port}` }).toString();
    const service = startService({ DATABASE_URL: proxied, DB_TIMEOUT_MS: '1000', LOG_LEVEL: 'info', EMBED_MODEL: 'use-lite', REDIS_URL: '' });
    try {
      const { child: server, output, exited, base } = await service;
      const put = await fetch(`${base}/v1/catalogs/partitioned`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ tools: uniqueTools(200, 'sigterm') }),
      });
      expect(put.status).toBe(200);
      proxy.blackhole();
      for (let tries = 0; !output().includes('embedding batch failed; retrying'); tries++) {
        if (tries > 300) throw new Error(`no batch failed:\n${output()}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const signalled = Date.now();
      server.kill('SIGTERM');
      const code = await Promise.race([exited, new Promise<string>((resolve) => setTimeout(() => resolve('still running'), 30_000))]);
      const seconds = (Date.now() - signalled) / 1000;
      expect(code, output().slice(-3000)).not.toBe('still running');
      // Within the drain window (20 s) plus a margin for a loaded machine.
      expect(seconds, output().slice(-3000)).toBeLessThan(25);
      expect(output()).toContain('shutting down');
    } finally {
      await service.then(
        ({ child }) => child.exitCode === null && child.kill('SIGKILL'),
        () => undefined,
      );
      await proxy.close();
      await scratch.drop();
    }
  });
});
