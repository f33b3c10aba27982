/**
 * Code-mode programs run off the main thread: a pool of worker threads (sandbox-worker.ts), each
 * running one program at a time in its own WebAssembly engine instance. A CPU-bound or
 * memory-hungry program holds up its worker only, never the event loop that answers searches and
 * health checks. The pool enforces the wall time (a shared flag the engine's interrupt handler
 * reads, then terminating the worker if it does not stop) and carries each tool call from the
 * program to `call` and its answer back, at most CALLS_IN_FLIGHT of a run at once.
 */
import type { Worker } from 'node:worker_threads';
import { spawnWorkerModule } from '../lib/worker-module.js';
import type { FromWorker, RunError, RunOutcome, SandboxLimits, ToWorker } from './protocol.js';

export type { RunError, RunOutcome, SandboxLimits } from './protocol.js';

/** A tool call's answer as the program receives it: a value (parsed JSON inside), or a ToolError's message. */
export type ToolCallAnswer = { ok: true; value: unknown } | { ok: false; error: string };

/** Runs one tool call for a program; never throws (a failure is `{ ok: false }`). */
export type ToolCallHandler = (name: string, args: Record<string, unknown>, signal: AbortSignal) => Promise<ToolCallAnswer>;

/** Calls of one run in flight at once: a program firing 10,000 at once waits its turn, the upstream is not flooded. */
const CALLS_IN_FLIGHT = 8;
/** How long a stopped run's worker may take to answer before it is terminated and replaced. */
const STOP_GRACE_MS = 1_000;
/** Runs waiting for a worker; beyond this a run is refused at once (the service is saturated). */
const QUEUE_MAX = 256;
/** Runs of one owner (a tenant) waiting at once: one tenant cannot fill the queue and have the others refused. */
const OWNER_QUEUE_MAX = 64;

/** A run waiting for a worker, in its owner's line. */
interface Waiter {
  give: (slot: Slot | null) => void;
}

/** One owner's share: its runs holding a worker, its line, and when it was last given a worker. */
interface Owner {
  active: number;
  waiting: Waiter[];
  lastServed: number;
}

interface Slot {
  worker: Worker;
  ready: Promise<void>;
  busy: boolean;
  run: ActiveRun | null;
}

interface ActiveRun {
  id: number;
  abort: Int32Array;
  controller: AbortController;
  call: ToolCallHandler;
  inFlight: number;
  waiting: Array<() => void>;
  finish: (outcome: RunOutcome) => void;
}

export interface SandboxPoolOptions {
  workers: number;
  limits: SandboxLimits;
  /** The workers' nice value on Linux (0-19): a busy program yields the cores to request handling. */
  nice?: number;
  /** Where a worker that died or had to be terminated is reported. */
  onWorkerLost?: (reason: string) => void;
}

/**
 * Who waits gets a worker fairly: a freed worker goes to the owner (tenant) holding the fewest
 * workers among those waiting, the one served longest ago on a tie, each owner's runs in their
 * order. One tenant's many programs cannot keep another's waiting past the run ahead of it; a lone
 * tenant still uses every worker.
 */
export class SandboxPool {
  readonly limits: SandboxLimits;
  #slots: Slot[] = [];
  #owners = new Map<string, Owner>();
  #waitingCount = 0;
  #served = 0;
  #nextId = 1;
  #closed = false;

  constructor(private readonly options: SandboxPoolOptions) {
    this.limits = options.limits;
  }

  /** Starts one worker now, so the first program does not wait for the engine and transpiler to load. */
  async warm(): Promise<void> {
    const slot = this.#slots[0] ?? this.#spawn();
    await slot.ready;
  }

  /**
   * Runs `program`; its tool calls go to `call`. Always answers with an outcome: errors in the
   * program, limits reached and a lost worker are outcomes, not throws.
   */
  async run(program: string, call: ToolCallHandler, signal?: AbortSignal, owner = ''): Promise<RunOutcome> {
    const { limits } = this;
    const empty = { logs: [], logsDropped: 0, calls: 0, startMs: 0, cpuMs: 0 };
    const refuse = (error: RunError): RunOutcome => ({ ok: false, error, ...empty });
    if (this.#closed) return refuse({ kind: 'internal', name: 'Closed', message: 'toolsift is shutting down' });
    const bytes = Buffer.byteLength(program);
    if (bytes > limits.programBytes)
      return refuse({ kind: 'limit', name: 'ProgramSize', message: `the program is ${bytes} bytes, over the limit of ${limits.programBytes}` });
    const queuedAt = performance.now();
    const share = this.#owner(owner);
    const slot = await this.#acquire(share, limits.wallMs, signal);
    if (!slot) {
      this.#forget(owner, share);
      return refuse(
        signal?.aborted
          ? { kind: 'cancelled', name: 'Cancelled', message: 'the request was cancelled before the program started' }
          : { kind: 'limit', name: 'Busy', message: `every sandbox stayed busy for ${Math.round(performance.now() - queuedAt)} ms: try again shortly` },
      );
    }
    try {
      return await this.#runOn(slot, program, call, signal);
    } finally {
      share.active -= 1;
      this.#forget(owner, share);
      this.#release(slot);
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const share of this.#owners.values()) for (const waiter of share.waiting.splice(0)) waiter.give(null);
    this.#waitingCount = 0;
    await Promise.all(this.#slots.map((slot) => slot.worker.terminate()));
    this.#slots = [];
  }

  #spawn(): Slot {
    const worker = spawnWorkerModule(import.meta.url, 'sandbox-worker', { workerData: { nice: this.options.nice ?? 0 } });
    let markReady!: () => void;
    let failReady!: (error: Error) => void;
    const ready = new Promise<void>((resolve, reject) => {
      markReady = resolve;
      failReady = reject;
    });
    ready.catch(() => {});
    const slot: Slot = { worker, ready, busy: false, run: null };
    worker.on('message', (message: FromWorker) => {
      if (message.type === 'ready') markReady();
      else if (message.type === 'call') this.#call(slot, message);
      else if (message.type === 'done' && slot.run?.id === message.id) slot.run.finish(message.outcome);
    });
    worker.on('error', (error) => {
      failReady(error);
      this.#lose(slot, `the sandbox worker failed: ${error.message}`);
    });
    worker.on('exit', (code) => {
      failReady(new Error(`sandbox worker exited with code ${code}`));
      this.#lose(slot, `the sandbox worker exited (code ${code})`);
    });
    this.#slots.push(slot);
    return slot;
  }

  /** A worker gone: its run ends with an internal error and the slot is replaced on next use. */
  #lose(slot: Slot, reason: string): void {
    const index = this.#slots.indexOf(slot);
    if (index < 0) return;
    this.#slots.splice(index, 1);
    if (!this.#closed) this.options.onWorkerLost?.(reason);
    slot.run?.finish({
      ok: false,
      error: { kind: 'internal', name: 'SandboxLost', message: `${reason}; the run was lost` },
      logs: [],
      logsDropped: 0,
      calls: 0,
      startMs: 0,
      cpuMs: 0,
    });
  }

  #owner(name: string): Owner {
    let share = this.#owners.get(name);
    if (!share) {
      share = { active: 0, waiting: [], lastServed: 0 };
      this.#owners.set(name, share);
    }
    return share;
  }

  /** An owner with nothing running or waiting keeps no entry (the map is as large as the owners at work). */
  #forget(name: string, share: Owner): void {
    if (share.active === 0 && share.waiting.length === 0 && this.#owners.get(name) === share) this.#owners.delete(name);
  }

  /** The waiting owner due a worker: fewest held, then served longest ago. */
  #nextWaiter(): Waiter | undefined {
    let due: Owner | undefined;
    for (const share of this.#owners.values()) {
      if (share.waiting.length === 0) continue;
      if (!due || share.active < due.active || (share.active === due.active && share.lastServed < due.lastServed)) due = share;
    }
    if (!due) return undefined;
    this.#waitingCount -= 1;
    this.#serve(due);
    return due.waiting.shift();
  }

  /** An owner is given a worker: counted at once, so no release in between reads it as idle. */
  #serve(share: Owner): void {
    share.active += 1;
    share.lastServed = ++this.#served;
  }

  async #acquire(share: Owner, waitMs: number, signal?: AbortSignal): Promise<Slot | null> {
    const free = this.#slots.find((slot) => !slot.busy);
    if (free) {
      free.busy = true;
      this.#serve(share);
      return free;
    }
    if (this.#slots.length < this.options.workers) {
      const slot = this.#spawn();
      slot.busy = true;
      this.#serve(share);
      return slot;
    }
    if (this.#waitingCount >= QUEUE_MAX || share.waiting.length >= OWNER_QUEUE_MAX) return null;
    return new Promise<Slot | null>((resolve) => {
      const waiter: Waiter = {
        give: (slot) => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          resolve(slot);
        },
      };
      const drop = () => {
        const index = share.waiting.indexOf(waiter);
        if (index >= 0) {
          share.waiting.splice(index, 1);
          this.#waitingCount -= 1;
        }
        resolve(null);
      };
      const onAbort = () => {
        clearTimeout(timer);
        drop();
      };
      const timer = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        drop();
      }, waitMs);
      signal?.addEventListener('abort', onAbort, { once: true });
      share.waiting.push(waiter);
      this.#waitingCount += 1;
    });
  }

  #release(slot: Slot): void {
    slot.run = null;
    // A slot whose worker was lost is not handed on: the next waiter gets a fresh one.
    const live = this.#slots.includes(slot) ? slot : this.#slots.length < this.options.workers ? this.#spawn() : null;
    const next = live ? this.#nextWaiter() : undefined;
    if (next && live) {
      live.busy = true;
      next.give(live);
    } else if (live) live.busy = false;
  }

  async #runOn(slot: Slot, program: string, call: ToolCallHandler, signal?: AbortSignal): Promise<RunOutcome> {
    const { limits } = this;
    try {
      await slot.ready;
    } catch (error) {
      return {
        ok: false,
        error: { kind: 'internal', name: 'SandboxLost', message: (error as Error).message },
        logs: [],
        logsDropped: 0,
        calls: 0,
        startMs: 0,
        cpuMs: 0,
      };
    }
    const id = this.#nextId++;
    const shared = new SharedArrayBuffer(4);
    const controller = new AbortController();
    return new Promise<RunOutcome>((resolve) => {
      let finished = false;
      let grace: NodeJS.Timeout | undefined;
      const stop = (why: RunError) => {
        if (finished) return;
        // The engine's interrupt handler reads the flag (a busy loop stops); a run waiting on
        // tools hears the message. A worker that answers neither within the grace is replaced.
        Atomics.store(new Int32Array(shared), 0, 1);
        controller.abort(why.message);
        slot.worker.postMessage({ type: 'abort', id } satisfies ToWorker);
        stopReason = why;
        grace = setTimeout(() => {
          void slot.worker.terminate();
          this.#lose(slot, 'a stopped run did not end in time');
        }, STOP_GRACE_MS);
      };
      let stopReason: RunError | undefined;
      const wall = setTimeout(
        () => stop({ kind: 'limit', name: 'WallTime', message: `the program ran longer than its wall time of ${limits.wallMs} ms` }),
        limits.wallMs,
      );
      const onAbort = () => stop({ kind: 'cancelled', name: 'Cancelled', message: 'the request was cancelled' });
      signal?.addEventListener('abort', onAbort, { once: true });
      slot.run = {
        id,
        abort: new Int32Array(shared),
        controller,
        call,
        inFlight: 0,
        waiting: [],
        finish: (outcome) => {
          if (finished) return;
          finished = true;
          clearTimeout(wall);
          clearTimeout(grace);
          signal?.removeEventListener('abort', onAbort);
          controller.abort('the run ended');
          // The wall time or the cancel is the reason, whatever the engine reported on the way out.
          resolve(stopReason && !outcome.ok ? { ...outcome, error: stopReason } : outcome);
        },
      };
      if (signal?.aborted) onAbort();
      slot.worker.postMessage({ type: 'run', id, program, limits, abort: shared } satisfies ToWorker);
    });
  }

  /** A tool call from a program: parsed, run through `call` (CALLS_IN_FLIGHT at a time), answered as JSON text. */
  #call(slot: Slot, message: Extract<FromWorker, { type: 'call' }>): void {
    const run = slot.run;
    if (!run || run.id !== message.id) return;
    const answer = (reply: ToolCallAnswer) => {
      if (slot.run !== run) return;
      let json: string | undefined;
      if (reply.ok) {
        json = JSON.stringify(reply.value ?? null);
      }
      slot.worker.postMessage(
        (reply.ok
          ? { type: 'answer', id: run.id, callId: message.callId, ok: true, json: json! }
          : { type: 'answer', id: run.id, callId: message.callId, ok: false, error: reply.error }) satisfies ToWorker,
      );
    };
    let args: unknown;
    try {
      args = JSON.parse(message.args);
    } catch {
      answer({ ok: false, error: `the arguments of "${message.name}" are not JSON` });
      return;
    }
    if (args === null || typeof args !== 'object' || Array.isArray(args)) {
      answer({ ok: false, error: `the arguments of "${message.name}" must be an object` });
      return;
    }
    const start = async () => {
      run.inFlight++;
      try {
        answer(await run.call(message.name, args as Record<string, unknown>, run.controller.signal));
      } catch (error) {
        answer({ ok: false, error: `"${message.name}" failed: ${(error as Error).message}` });
      } finally {
        run.inFlight--;
        run.waiting.shift()?.();
      }
    };
    if (run.inFlight < CALLS_IN_FLIGHT) void start();
    else run.waiting.push(() => void start());
  }
}
