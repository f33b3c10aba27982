/**
 * The replay of issue 72 (src/eval/replay.ts) on a small catalog: events through recordFeedback,
 * searches through searchCatalog, on the test store (BM25 only, no model). Its held-out queries are
 * told apart as the issue asks (fed: a relevant tool got feedback; in full: every one did), and a
 * near-repeat of a fed task is ranked by what was used where the events say what was shown.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createDeps, type Deps } from '../../src/deps.js';
import { runReplay, type ReplayRow } from '../../src/eval/replay.js';
import { testDatabase } from '../helpers/database.js';
import { TEST_SECRETS_KEY } from '../helpers/process.js';

const TOOLS = [
  { name: 'open_ticket_viewer', description: 'Open the ticket viewer to look at an open ticket.' },
  { name: 'create_ticket', description: 'Create a ticket in the issue tracker.' },
  { name: 'send_email', description: 'Send an email message to a recipient.' },
  { name: 'read_calendar', description: 'Read the events in a calendar.' },
  { name: 'convert_currency', description: 'Convert an amount between two currencies.' },
  { name: 'weather_forecast', description: 'Weather forecast for a city.' },
];
const QUERIES = [
  // A recurring task: BM25 puts the viewer first; agents used create_ticket.
  { id: 't1', query: 'open a ticket', relevant: ['create_ticket'] },
  { id: 't2', query: 'open a ticket please', relevant: ['create_ticket'] },
  { id: 't3', query: 'please open a ticket', relevant: ['create_ticket'] },
  { id: 't4', query: 'open a new ticket', relevant: ['create_ticket'] },
  // Two tools at once, and tools asked for once.
  { id: 'm1', query: 'send an email and read my calendar', relevant: ['send_email', 'read_calendar'] },
  { id: 'm2', query: 'email the calendar events', relevant: ['send_email', 'read_calendar'] },
  { id: 'c1', query: 'convert 10 dollars to euros', relevant: ['convert_currency', 'send_email'] },
  { id: 'w1', query: 'weather in Paris tomorrow', relevant: ['weather_forecast'] },
];

describe('replay (issue 72)', () => {
  let deps: Deps;
  let folder: string;
  beforeAll(async () => {
    folder = mkdtempSync(join(tmpdir(), 'toolsift-replay-'));
    writeFileSync(join(folder, 'catalog.jsonl'), TOOLS.map((tool) => JSON.stringify(tool)).join('\n'));
    writeFileSync(join(folder, 'queries.dev.jsonl'), QUERIES.map((query) => JSON.stringify(query)).join('\n'));
    deps = await createDeps(loadConfig({ EMBED_MODEL: 'none', CATALOG_WARMUP: 'false', SECRETS_KEY: TEST_SECRETS_KEY }), {
      database: await testDatabase(),
      logger: pino({ level: 'silent' }),
    });
  });
  afterAll(async () => {
    await deps?.close();
    rmSync(folder, { recursive: true, force: true });
  });

  it('ranks each held-out query after the other folds were fed, and tells fed, fed in full and unfed apart', async () => {
    const rows: ReplayRow[] = [];
    const report = await runReplay(deps, {
      dataset: folder,
      folds: 2,
      scenarios: ['clean', 'shown'],
      settings: new Map([['default', {}]]),
      seed: 3,
      onRow: (row) => rows.push(row),
    });
    const clean = rows.filter((row) => row.scenario === 'clean');
    const shown = rows.filter((row) => row.scenario === 'shown');
    for (const scenario of [clean, shown]) expect(scenario.map((row) => row.id).sort()).toEqual(QUERIES.map((query) => query.id).sort());
    // Each row's fed status, from the other fold's relevant tools.
    for (const row of clean) {
      const fed = new Set(clean.filter((other) => other.fold !== row.fold).flatMap((other) => other.relevant));
      const count = row.relevant.filter((name) => fed.has(name)).length;
      expect(row.fed).toBe(count === 0 ? 'none' : count === row.relevant.length ? 'full' : 'part');
    }
    const count = (fed: ReplayRow['fed'][]) => clean.filter((row) => fed.includes(row.fed)).length;
    const on = report.on.clean!.default!;
    expect([on.fed.queries, on.fedInFull.queries, on.unfed.queries]).toEqual([count(['part', 'full']), count(['full']), count(['none'])]);
    expect(report.off.fed.queries + report.off.unfed.queries).toBe(QUERIES.length);
    // The recurring task is split over both folds (4 queries, 2 folds, dealt in turn after a shuffle:
    // not necessarily 2 and 2, so only those with a repeat in the other fold are checked). The viewer
    // and create_ticket are alike in the words in play ("open", "ticket"): twins, unless the events
    // say the agents were shown the viewer and passed it over (ranking/learned.ts).
    const recurring = shown.filter((row) => row.id.startsWith('t') && row.fed === 'full');
    expect(recurring.length).toBeGreaterThan(0);
    for (const row of recurring) {
      expect(row.off[0]).toBe('open_ticket_viewer');
      expect(row.on[0]).toBe('create_ticket');
      expect(row.ndcg10On).toBeGreaterThan(row.ndcg10Off);
    }
    expect(report.on.shown!.default!.fedInFull.ndcg10).toBeGreaterThan(report.off.fedInFull.ndcg10);
    expect(on.fedInFull.ndcg10).toBeGreaterThanOrEqual(report.off.fedInFull.ndcg10);
    // Unfed queries are ranked as without learning.
    for (const row of rows.filter((entry) => entry.fed === 'none')) expect(row.on).toEqual(row.off);
  });
});
