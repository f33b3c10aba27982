/**
 * Worker-thread entry that owns the embedded PGlite (pglite-thread.ts), so that PostgreSQL's work
 * runs beside the HTTP thread instead of on it. Speaks `PgliteRequest` / `PgliteReply`.
 *
 * PGlite runs one statement at a time, so this thread decides which runs next (pglite-schedule.ts):
 * a unit of work is a statement outside a transaction, or a whole transaction (its statements run as
 * they arrive; every other unit waits until it ends, as PGlite itself would make them).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { PGlite, type Transaction } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import { takeNext } from './pglite-schedule.js';
import type { PgliteError, PgliteReply, PgliteRequest } from './pglite-thread.js';

const port = parentPort;
if (!port) throw new Error('pglite-worker.ts must run in a worker thread');

const reply = (message: PgliteReply) => port.postMessage(message);

/** Only the fields a caller reads (code, detail, constraint, ...): PGlite also attaches the query's options, functions included, which cannot cross threads. */
function describe(error: unknown): PgliteError {
  if (!(error instanceof Error)) return { message: String(error) };
  const fields: Record<string, string | number> = {};
  for (const [key, value] of Object.entries(error)) {
    if (typeof value === 'string' || typeof value === 'number') fields[key] = value;
  }
  return { ...fields, message: error.message, name: error.name };
}

/** The caller's parsers are drizzle's: these types are read as their text. */
const asText = (oids: number[]) => Object.fromEntries(oids.map((oid) => [oid, (value: string) => value]));

type Unit = Exclude<PgliteRequest, { kind: 'end' }> & { arrived: number };

const { dataDir } = workerData as { dataDir: string };
let pg: PGlite | null = null;
let busy = false;
let closed = false;
const waiting = { request: [] as Unit[], background: [] as Unit[] };
let open: { tx: Transaction; id: number; endId?: number; end: (commit: boolean) => void } | null = null;
class Rollback extends Error {}

async function runQuery(target: PGlite | Transaction, request: Extract<PgliteRequest, { kind: 'query' }>): Promise<void> {
  try {
    const result = await target.query(request.sql, request.params, { rowMode: request.rowMode, parsers: asText(request.textOids) });
    reply({ id: request.id, ok: true, value: { rows: result.rows, fields: result.fields, affectedRows: result.affectedRows } });
  } catch (error) {
    reply({ id: request.id, ok: false, error: describe(error) });
  }
}

/** Opens a transaction and holds it until `end` names it; settles when it has committed or rolled back. */
async function runTransaction(db: PGlite, id: number): Promise<void> {
  let opened = false;
  try {
    await db.transaction(
      (tx) =>
        new Promise<void>((resolve, reject) => {
          open = { tx, id, end: (commit) => (commit ? resolve() : reject(new Rollback())) };
          opened = true;
          reply({ id, ok: true, value: null });
        }),
    );
    reply({ id: open!.endId!, ok: true, value: null });
  } catch (error) {
    if (error instanceof Rollback) reply({ id: open!.endId!, ok: true, value: null });
    else reply({ id: opened ? open!.endId! : id, ok: false, error: describe(error) });
  } finally {
    open = null;
  }
}

async function run(db: PGlite, unit: Unit): Promise<void> {
  if (unit.kind === 'query') return runQuery(db, unit);
  if (unit.kind === 'begin') return runTransaction(db, unit.id);
  closed = true;
  await db.close().catch(() => {});
  reply({ id: unit.id, ok: true, value: null });
}

/**
 * Chooses the next unit on the next turn of the event loop, not at once: PGlite executes a statement
 * synchronously, so the messages that arrived meanwhile are still in the port until this thread
 * gets back to it, and choosing at once would run whatever came first.
 */
let choosing = false;
function pump(): void {
  if (busy || choosing || !pg) return;
  choosing = true;
  setImmediate(() => {
    choosing = false;
    const unit = takeNext(waiting, performance.now());
    if (!unit) return;
    busy = true;
    void run(pg!, unit).finally(() => {
      busy = false;
      pump();
    });
  });
}

port.on('message', (request: PgliteRequest) => {
  if (closed) {
    reply({ id: request.id, ok: false, error: { message: 'the embedded database is closed' } });
    return;
  }
  if (request.kind === 'end' || (request.kind === 'query' && request.tx !== undefined)) {
    const tx = request.kind === 'end' ? request.tx : request.tx!;
    if (open?.id !== tx) {
      reply({ id: request.id, ok: false, error: { message: `transaction ${tx} is not open` } });
      return;
    }
    if (request.kind === 'query') void runQuery(open.tx, request);
    else {
      open.endId = request.id;
      open.end(request.commit);
    }
    return;
  }
  (request.background ? waiting.background : waiting.request).push({ ...request, arrived: performance.now() });
  pump();
});

PGlite.create(dataDir, { extensions: { vector } }).then(
  (db) => {
    pg = db;
    reply({ id: 0, ok: true, value: null });
    pump();
  },
  (error: unknown) => reply({ id: 0, ok: false, error: describe(error) }),
);
