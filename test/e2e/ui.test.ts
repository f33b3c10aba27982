/**
 * The web playground (/ui) in a real browser: Debian's Chromium driven by playwright-core. Load the
 * page with an API key, pick a catalog, search, read the explain columns, open a tool's brief and
 * full definition, post a pasted tool list to the selector, see an upstream MCP server's sync state,
 * and keep a screenshot of each view to look at.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { uniqueName } from '../helpers/database.js';
import { freePort, startEverything } from '../helpers/process.js';

const executablePath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const screenshots = join(tmpdir(), 'toolsift-ui');

const tools = [
  {
    name: 'read_file',
    description: 'Read the complete contents of a file from disk.',
    inputSchema: { type: 'object', properties: { path: { type: 'string' } } },
    server: 'filesystem',
    tags: ['Files'],
  },
  {
    name: 'write_file',
    description: 'Create or overwrite a file with new content.',
    inputSchema: { type: 'object', properties: { path: { type: 'string' }, content: { type: 'string' } } },
    server: 'filesystem',
    tags: ['Files'],
  },
  {
    name: 'web_search',
    description: 'Search the web and return the top results.',
    inputSchema: { type: 'object', properties: { query: { type: 'string' } } },
    server: 'search',
  },
  {
    name: 'send_email',
    description: 'Send an email <b>now</b> to a recipient.',
    inputSchema: { type: 'object', properties: { to: { type: 'string' } } },
    server: 'mail',
  },
  {
    name: 'get_weather',
    description: 'Current weather and forecast for a city.',
    inputSchema: { type: 'object', properties: { city: { type: 'string' } } },
    server: 'weather',
  },
];

describe('the /ui playground in Chromium', () => {
  let app: TestApp;
  let browser: Browser;
  let page: Page;
  const catalog = uniqueName('ui');
  // A tenant with nothing in it yet: what a newcomer sees first.
  const freshTenant = uniqueName('ui-fresh');
  let upstreamPort = 0;

  beforeAll(async () => {
    if (!existsSync(executablePath)) throw new Error(`Chromium not found at ${executablePath}: run scripts/install-chromium.sh (or set CHROMIUM_PATH)`);
    // server-everything listens on loopback, which the address policy refuses unless opened.
    app = await startTestApp({ API_KEYS: `ui-key:ui-tenant,fresh-key:${freshTenant}`, EMBED_MODEL: 'use-lite', UPSTREAM_ALLOW: '127.0.0.1/32' });
    const put = await app.request('PUT', `/v1/catalogs/${catalog}`, { tools }, { authorization: 'Bearer ui-key' });
    expect(put.status).toBe(200);
    for (let tries = 0; ; tries++) {
      const { body } = await app.request('GET', `/v1/catalogs/${catalog}`, undefined, { authorization: 'Bearer ui-key' });
      if (body.embedding.done === tools.length) break;
      if (tries > 600) throw new Error(`embeddings not done: ${JSON.stringify(body.embedding)}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    browser = await chromium.launch({ executablePath, args: ['--headless', '--no-sandbox', '--disable-background-networking', '--disable-component-update'] });
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    mkdirSync(screenshots, { recursive: true });
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await app?.close();
  });

  it('serves the page with its own assets only, under a strict CSP', async () => {
    const response = await fetch(`${app.url}/ui/`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-security-policy')).toContain("script-src 'self'");
    const html = await response.text();
    for (const [, asset] of html.matchAll(/(?:src|href)="((?!data:)[^"]+)"/g)) {
      expect(asset!.startsWith('http'), `${asset} must come from the service itself`).toBe(false);
      expect((await fetch(new URL(asset!, `${app.url}/ui/`))).status, asset).toBe(200);
    }
    expect((await fetch(`${app.url}/ui`, { redirect: 'manual' })).status).toBe(301);
  });

  it('asks for a key, then searches a catalog and shows every explain column', async () => {
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    page.on('console', (message) => {
      // The first catalog list is asked for without a key: that 401 is the page's cue to ask for one.
      if (message.type() === 'error' && !message.text().includes('status of 401')) errors.push(message.text());
    });
    await page.goto(`${app.url}/ui/`);
    await expect.poll(() => page.textContent('#search-status')).toContain('API key');
    await page.fill('#api-key', 'ui-key');
    await page.dispatchEvent('#api-key', 'change');
    await expect.poll(() => page.locator('#catalog option').allTextContents()).toContain(`${catalog} (5 tools)`);
    await page.selectOption('#catalog', catalog);
    await expect.poll(() => page.textContent('#catalog-progress')).toContain('embeddings 5/5');

    await page.fill('#query', 'open a file and read what it says');
    await page.click('#search-form button[type=submit]');
    await expect.poll(() => page.locator('#results tbody tr').count()).toBeGreaterThan(0);
    const first = page.locator('#results tbody tr').first();
    expect(await first.getAttribute('data-name')).toBe('read_file');
    // BM25 rank, vector rank and the server vote (the filesystem server matches) are all shown.
    expect(Number(await first.locator('.bm25-rank').textContent())).toBeGreaterThan(0);
    expect(Number(await first.locator('.vector-rank').textContent())).toBeGreaterThan(0);
    expect(Number(await first.locator('.server-vote').textContent())).toBeGreaterThan(0);
    expect(await page.textContent('#search-status')).toMatch(/tools in [\d.]+ ms/);

    // A description with markup is shown as text, never rendered.
    await page.fill('#query', 'send an email');
    await page.click('#search-form button[type=submit]');
    await expect.poll(() => page.locator('#results tbody tr').first().getAttribute('data-name')).toBe('send_email');
    expect(await page.locator('#results b').count()).toBe(0);
    expect(await page.locator('#results tbody tr').first().textContent()).toContain('<b>now</b>');

    await page.locator('#results tbody tr').first().click();
    await expect.poll(() => page.textContent('#tool-body')).toContain('"parameters"');
    await page.click('[data-detail=full]');
    await expect.poll(() => page.textContent('#tool-body')).toContain('"inputSchema"');
    await page.screenshot({ path: join(screenshots, 'search.png'), fullPage: true });
    expect(errors).toEqual([]);
  });

  it('posts a pasted tool list to the selector in either gateway shape', async () => {
    await page.click('nav button[data-view=selector]');
    await page.fill('#selector-pattern', 'what is the weather in Paris');
    await page.fill('#selector-tools', JSON.stringify(tools.map(({ name, description }) => ({ name, description }))));
    for (const shape of ['0.5.2', '0.5.3']) {
      await page.selectOption('#selector-shape', shape);
      await page.fill('#selector-top', '2');
      await page.click('#selector-form button[type=submit]');
      await expect.poll(() => page.locator('#selector-names li').allTextContents()).toHaveLength(2);
      expect((await page.locator('#selector-names li').allTextContents())[0]).toBe('get_weather');
    }
    await page.fill('#selector-tools', '[not json');
    await page.click('#selector-form button[type=submit]');
    await expect.poll(() => page.textContent('#selector-status')).toContain('not valid JSON');
    await page.screenshot({ path: join(screenshots, 'selector.png'), fullPage: true });
  });

  it('shows each upstream MCP server of the catalog with its sync state', async () => {
    const everything: ChildProcess = await startEverything(await freePort().then((port) => (upstreamPort = port)));
    try {
      const synced = uniqueName('ui-upstreams');
      const url = `http://127.0.0.1:${upstreamPort}/mcp`;
      const put = await app.request('PUT', `/v1/catalogs/${synced}/upstreams/everything`, { url }, { authorization: 'Bearer ui-key' });
      expect(put.status).toBe(200);
      const count = put.body.upstream.tool_count as number;
      expect(count).toBeGreaterThan(5);
      // The page's catalog list is read again when the key changes.
      await page.dispatchEvent('#api-key', 'change');
      await expect.poll(() => page.locator('#catalog option').allTextContents()).toContain(`${synced} (${count} tools)`);
      await page.click('nav button[data-view=search]');
      await page.selectOption('#catalog', synced);
      await page.click('nav button[data-view=upstreams]');
      await expect.poll(() => page.locator('#upstreams tbody tr').count()).toBe(1);
      const cells = await page.locator('#upstreams tbody tr td').allTextContents();
      expect(cells.slice(0, 3)).toEqual(['everything', url, String(count)]);
      expect(cells[3]).not.toBe('never');
      expect(cells[4]).toBe(`+${count} ~0 -0`);
      expect(cells[5]).toBe('–'); // no error (the page's mark for an empty cell)
      expect(cells[6]).toBe('0'); // every tool approved by the registration
      await page.screenshot({ path: join(screenshots, 'upstreams.png'), fullPage: true });

      // The search catalog has no upstreams: the view says so.
      await page.click('nav button[data-view=search]');
      await page.selectOption('#catalog', catalog);
      await page.click('nav button[data-view=upstreams]');
      await expect.poll(() => page.textContent('#upstreams-status')).toContain('No upstream MCP servers');
    } finally {
      everything.kill('SIGKILL');
    }
  });

  it('offers a newcomer with no catalog the sample: one click stores it, and a search of it answers; the selector fills in the same tools', async () => {
    const fresh = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const errors: string[] = [];
    fresh.on('pageerror', (error) => errors.push(error.message));
    fresh.on('console', (message) => {
      if (message.type() === 'error' && !message.text().includes('status of 401')) errors.push(message.text());
    });
    try {
      await fresh.goto(`${app.url}/ui/`);
      expect(await fresh.isVisible('#add-sample')).toBe(false);
      await fresh.fill('#api-key', 'fresh-key');
      await fresh.dispatchEvent('#api-key', 'change');
      await expect.poll(() => fresh.isVisible('#add-sample')).toBe(true);
      expect(await fresh.textContent('#search-status')).toContain('No catalogs yet');
      await fresh.click('#add-sample');
      await expect.poll(() => fresh.locator('#catalog option').allTextContents()).toEqual(['sample (35 tools)']);
      expect(await fresh.isVisible('#add-sample')).toBe(false);
      expect(await fresh.inputValue('#query')).toContain('weather');
      // Said once the list is read again (the option can show before the catalog's progress is read).
      await expect.poll(() => fresh.textContent('#search-status')).toContain('Added the catalog "sample" (35 tools)');
      // The sample is an ordinary catalog of the tenant, embedded like any other.
      const headers = { authorization: 'Bearer fresh-key' };
      for (let tries = 0; (await app.request('GET', '/v1/catalogs/sample', undefined, headers)).body.embedding.done < 35; tries++) {
        if (tries > 600) throw new Error('the sample catalog was not embedded');
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      await fresh.click('#search-form button[type=submit]');
      await expect.poll(() => fresh.locator('#results tbody tr').count()).toBe(10);
      const servers = await fresh.locator('#results tbody tr td:nth-child(3)').allTextContents();
      expect(servers.slice(0, 2)).toEqual(['weather', 'weather']);
      await fresh.screenshot({ path: join(screenshots, 'sample.png'), fullPage: true });

      await fresh.click('nav button[data-view=selector]');
      await fresh.click('#selector-sample');
      await expect.poll(async () => JSON.parse((await fresh.inputValue('#selector-tools')) || '[]').length).toBe(35);
      expect(await fresh.inputValue('#selector-pattern')).toContain('meeting');
      await fresh.click('#selector-form button[type=submit]');
      await expect.poll(() => fresh.locator('#selector-names li').allTextContents()).toContain('create_event');
      expect(errors).toEqual([]);
    } finally {
      await fresh.close();
    }
  });
});
