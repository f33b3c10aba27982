/**
 * A sandbox worker thread: runs code-mode programs in QuickJS compiled to WebAssembly
 * (quickjs-emscripten, the QuickJS-ng engine). Each run gets a fresh WebAssembly instance of the
 * engine (its own linear memory: nothing of one run, or one tenant, is left for the next), whose
 * global scope holds only the engine's built-ins, `tools`, `callTool`, `ToolError` and a
 * `console`: no file system, network, process, timers or host objects. The program is TypeScript
 * or JavaScript; types are stripped by amaro (Node's own type stripper, SWC in WebAssembly),
 * which blanks them out in place, so a line and column in the run still point into the program.
 *
 * A tool call is a host function returning an engine promise: the worker sends the call to the
 * pool (main thread), which runs it through the same path as call_tool, and settles the promise
 * when the answer comes back. Calls made together run together (Promise.all works).
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { parentPort, workerData } from 'node:worker_threads';
import quickjsNg from '@jitl/quickjs-ng-wasmfile-release-sync';
import amaro from 'amaro';
import {
  newQuickJSWASMModuleFromVariant,
  newVariant,
  type QuickJSContext,
  type QuickJSDeferredPromise,
  type QuickJSHandle,
  type QuickJSSyncVariant,
} from 'quickjs-emscripten-core';
import { lowerThreadPriority } from '../lib/thread-priority.js';
import type { FromWorker, ProgramPosition, RunError, RunOutcome, SandboxLimits, ToWorker } from './protocol.js';

// The engine's WebAssembly is compiled once per worker; each run instantiates it afresh (~1-4 ms,
// against ~5 ms when each instance compiles it again).
const wasmModule = new WebAssembly.Module(readFileSync(createRequire(import.meta.url).resolve('@jitl/quickjs-ng-wasmfile-release-sync/wasm')));
const quickjs = quickjsNg as unknown as QuickJSSyncVariant;
/** The engine's linear memory at start (Emscripten's INITIAL_MEMORY): its static data, stack and first heap. */
const BASE_MEMORY_BYTES = 16 * 1024 * 1024;
const WASM_PAGE_BYTES = 64 * 1024;

/**
 * A run's engine, in a linear memory that cannot grow past the memory limit. The engine's own
 * accounting cannot be the limit: this build has no malloc_usable_size, so QuickJS refuses only a
 * single allocation larger than the limit and counts nothing else (300 strings of 1 MiB passed a
 * 64 MiB limit). The WebAssembly memory's maximum holds whatever the program allocates: past it
 * malloc fails and the engine throws out of memory.
 */
function engineVariant(memoryBytes: number) {
  const maximum = Math.ceil((BASE_MEMORY_BYTES + memoryBytes) / WASM_PAGE_BYTES);
  const memory = new WebAssembly.Memory({ initial: BASE_MEMORY_BYTES / WASM_PAGE_BYTES, maximum });
  return {
    variant: newVariant(quickjs, { wasmModule, wasmMemory: memory }),
    /** Whether the program has used (nearly) all of it: an error without a value then is the engine out of memory. */
    exhausted: () => memory.buffer.byteLength + 2 * 1024 * 1024 >= maximum * WASM_PAGE_BYTES,
  };
}

/** The engine's stack: deep recursion ends as a RangeError well before the worker's own stack. */
const STACK_BYTES = 512 * 1024;
/** A tool call's arguments, as JSON text. */
const ARGUMENTS_BYTES_MAX = 1024 * 1024;
const PROGRAM_FILE = 'program.ts';

/** The program is the body of an async function: `await` and `return` work at its top level. */
const PROGRAM_HEAD = 'async function program() {\n';

/**
 * Evaluated before the program in the same context. `__toolsift` (the host's two functions) is
 * taken off the global object first, so only these wrappers reach it. A call site is kept for a
 * failed call's error: after an await the engine's stack no longer shows the program's line.
 */
const PRELUDE = `(() => {
'use strict';
const host = globalThis.__toolsift;
delete globalThis.__toolsift;
class ToolError extends Error {
  constructor(message, tool) { super(message); this.name = 'ToolError'; this.tool = tool; }
}
const show = (value) => {
  if (typeof value === 'string') return value;
  try { const text = JSON.stringify(value); return text === undefined ? String(value) : text; } catch { return String(value); }
};
const callTool = async (name, args) => {
  const site = new Error().stack;
  let text;
  try {
    text = await host.call(String(name), args === undefined ? '{}' : JSON.stringify(args));
  } catch (message) {
    const error = new ToolError(String(message), String(name));
    error.stack = site;
    throw error;
  }
  return JSON.parse(text);
};
const binding = (path) =>
  new Proxy(function tool() {}, {
    get(_target, key) {
      if (typeof key !== 'string' || key === 'then') return undefined;
      return binding(path === '' ? key : path + '/' + key);
    },
    apply(_target, _this, args) {
      if (path === '') return Promise.reject(new TypeError('tools is not a tool: call tools.<name>(args) or callTool(name, args)'));
      return callTool(path, args[0]);
    },
  });
const line = (values) => values.map(show).join(' ');
globalThis.console = Object.freeze({
  log: (...values) => host.log('log', line(values)),
  info: (...values) => host.log('info', line(values)),
  warn: (...values) => host.log('warn', line(values)),
  error: (...values) => host.log('error', line(values)),
  debug: (...values) => host.log('debug', line(values)),
});
globalThis.ToolError = ToolError;
globalThis.callTool = callTool;
globalThis.tools = binding('');
globalThis.__encode = (value, limit) => {
  delete globalThis.__encode;
  const text = value === undefined ? 'null' : JSON.stringify(value);
  if (text === undefined) return 'null';
  return text.length > limit ? text.slice(0, limit + 1) : text;
};
})();
`;

type Answer = Extract<ToWorker, { type: 'answer' }>;

/** The run in progress (one at a time per worker): where answers to its calls go. */
let current: { id: number; answers: Answer[]; wake: (() => void) | null; aborted: boolean } | null = null;

const post = (message: FromWorker) => parentPort!.postMessage(message);

parentPort!.on('message', (message: ToWorker) => {
  if (message.type === 'run') {
    current = { id: message.id, answers: [], wake: null, aborted: false };
    void run(message.program, message.limits, message.abort).then(
      (outcome) => post({ type: 'done', id: message.id, outcome }),
      (error: Error) =>
        post({ type: 'done', id: message.id, outcome: failed({ kind: 'internal', name: 'InternalError', message: error.message }, 0, 0, [], 0, 0) }),
    );
    return;
  }
  if (!current || message.id !== current.id) return;
  if (message.type === 'abort') current.aborted = true;
  else current.answers.push(message);
  current.wake?.();
});

// A busy program yields the cores to the thread that answers searches and health checks.
lowerThreadPriority((workerData as { nice?: number } | undefined)?.nice ?? 0);

// Loading amaro compiles SWC's WebAssembly: done once per worker, before the first run.
amaro.transformSync('', { mode: 'strip-only' });
post({ type: 'ready' });

function failed(error: RunError, calls: number, startMs: number, logs: string[], logsDropped: number, cpuMs: number): RunOutcome {
  return { ok: false, error, logs, logsDropped, calls, startMs, cpuMs };
}

/** The program's types blanked out in place, or where it does not parse. */
function stripTypes(program: string): { code: string } | { error: RunError } {
  try {
    return { code: amaro.transformSync(`${PROGRAM_HEAD}${program}\n}`, { mode: 'strip-only', filename: PROGRAM_FILE }).code };
  } catch (error) {
    const { message, startLine, startColumn } = error as { message?: string; startLine?: number; startColumn?: number };
    const position = typeof startLine === 'number' ? programPosition(startLine, (startColumn ?? 0) + 1) : undefined;
    return { error: { kind: 'syntax', name: 'SyntaxError', message: String(message ?? error), ...(position ? { position } : {}) } };
  }
}

/** A position in the wrapped source as one in the program (the head is one line). */
function programPosition(line: number, column: number): ProgramPosition | undefined {
  return line >= 2 ? { line: line - 1, column } : undefined;
}

/** The first frame of the program in an engine stack (`at f (program.ts:4:11)`). */
function positionInStack(stack: string | undefined): ProgramPosition | undefined {
  const match = stack?.match(/program\.ts:(\d+):(\d+)/);
  return match ? programPosition(Number(match[1]), Number(match[2])) : undefined;
}

class OutputLog {
  readonly lines: string[] = [];
  dropped = 0;
  #bytes = 0;
  constructor(private readonly limit: number) {}
  add(level: string, text: string): void {
    const line = level === 'log' ? text : `[${level}] ${text}`;
    const bytes = Buffer.byteLength(line) + 1;
    if (this.#bytes + bytes > this.limit) {
      if (this.#bytes < this.limit) this.lines.push(cutBytes(line, this.limit - this.#bytes - 1));
      this.#bytes = this.limit;
      this.dropped++;
      return;
    }
    this.#bytes += bytes;
    this.lines.push(line);
  }
}

/** At most `bytes` UTF-8 bytes of `text`, never half a character. */
function cutBytes(text: string, bytes: number): string {
  const buffer = Buffer.from(text);
  if (buffer.length <= bytes) return text;
  return buffer
    .subarray(0, Math.max(0, bytes))
    .toString('utf8')
    .replace(/\uFFFD$/, '');
}

async function run(program: string, limits: SandboxLimits, abort: SharedArrayBuffer): Promise<RunOutcome> {
  const logs = new OutputLog(limits.outputBytes);
  const stripped = stripTypes(program);
  if ('error' in stripped) return failed(stripped.error, 0, 0, logs.lines, 0, 0);

  const started = performance.now();
  // A fresh instance of the engine: its memory is new, and dropped with it after the run.
  const { variant, exhausted } = engineVariant(limits.memoryBytes);
  const engine = await newQuickJSWASMModuleFromVariant(variant);
  const startMs = performance.now() - started;
  const runtime = engine.newRuntime();
  runtime.setMemoryLimit(limits.memoryBytes);
  runtime.setMaxStackSize(STACK_BYTES);

  const aborted = new Int32Array(abort);
  let cpuMs = 0;
  let sliceStart = 0;
  /** Why the engine was interrupted: the interrupt itself is uncatchable in the program. */
  let stoppedBy: RunError | undefined;
  runtime.setInterruptHandler(() => {
    if (stoppedBy) return true;
    if (Atomics.load(aborted, 0) !== 0) {
      stoppedBy = { kind: 'cancelled', name: 'Cancelled', message: 'the run was stopped (wall time reached or the request was cancelled)' };
      return true;
    }
    if (cpuMs + performance.now() - sliceStart > limits.cpuMs) {
      stoppedBy = { kind: 'limit', name: 'CpuLimit', message: `the program ran longer than its CPU limit of ${limits.cpuMs} ms` };
      return true;
    }
    return false;
  });
  /** Runs engine work, counting its time against the CPU limit. */
  const slice = <T>(work: () => T): T => {
    sliceStart = performance.now();
    try {
      return work();
    } finally {
      cpuMs += performance.now() - sliceStart;
    }
  };

  const vm = runtime.newContext();
  const pending = new Map<number, QuickJSDeferredPromise>();
  let calls = 0;
  let nextCallId = 0;
  const state = current!;
  const outcome = (result: Omit<RunOutcome, 'logs' | 'logsDropped' | 'calls' | 'startMs' | 'cpuMs'>): RunOutcome => ({
    ...result,
    logs: logs.lines,
    logsDropped: logs.dropped,
    calls,
    startMs,
    cpuMs,
  });
  try {
    const host = vm.newObject();
    vm.newFunction('call', (nameHandle, argsHandle) => {
      const name = vm.getString(nameHandle);
      const args = vm.getString(argsHandle);
      calls++;
      if (calls > limits.maxCalls) {
        stoppedBy ??= { kind: 'limit', name: 'CallLimit', message: `the program made more than ${limits.maxCalls} tool calls` };
        throw new Error(stoppedBy.message);
      }
      if (Buffer.byteLength(args) > ARGUMENTS_BYTES_MAX) throw new Error(`the arguments of "${name}" are over ${ARGUMENTS_BYTES_MAX} bytes of JSON`);
      const deferred = vm.newPromise();
      const callId = nextCallId++;
      pending.set(callId, deferred);
      post({ type: 'call', id: state.id, callId, name, args });
      return deferred.handle;
    }).consume((fn) => vm.setProp(host, 'call', fn));
    vm.newFunction('log', (levelHandle, textHandle) => {
      logs.add(vm.getString(levelHandle), vm.getString(textHandle));
    }).consume((fn) => vm.setProp(host, 'log', fn));
    vm.setProp(vm.global, '__toolsift', host);
    host.dispose();

    const prelude = slice(() => vm.evalCode(PRELUDE, 'prelude.js'));
    if (prelude.error) {
      const error = vm.dump(prelude.error);
      prelude.error.dispose();
      return outcome({ ok: false, error: { kind: 'internal', name: 'InternalError', message: `prelude: ${JSON.stringify(error)}` } });
    }
    prelude.value.dispose();

    const evaluated = slice(() => vm.evalCode(`${stripped.code}\nprogram().then((value) => __encode(value, ${limits.outputBytes}))`, PROGRAM_FILE));
    if (evaluated.error) return outcome({ ok: false, error: thrown(vm, evaluated.error, stoppedBy, limits, exhausted) });
    const promise = evaluated.value;
    try {
      for (;;) {
        const jobs = slice(() => runtime.executePendingJobs());
        if (jobs.error) return outcome({ ok: false, error: thrown(vm, jobs.error, stoppedBy, limits, exhausted) });
        if (stoppedBy) return outcome({ ok: false, error: stoppedBy });
        const settled = vm.getPromiseState(promise);
        if (settled.type === 'fulfilled') {
          const text = vm.getString(settled.value);
          settled.value.dispose();
          const cut = cutBytes(text, limits.outputBytes);
          return outcome({ ok: true, value: cut, ...(cut.length < text.length ? { valueTruncated: true } : {}) });
        }
        if (settled.type === 'rejected') return outcome({ ok: false, error: thrown(vm, settled.error, stoppedBy, limits, exhausted) });
        if (pending.size === 0)
          return outcome({
            ok: false,
            error: {
              kind: 'runtime',
              name: 'NeverSettles',
              message: 'the program waits on a promise that nothing will settle (no tool call is pending): it would never finish',
            },
          });
        // Wait for an answer to a pending call (or the pool's abort), then settle it in the engine.
        while (state.answers.length === 0 && !state.aborted) await new Promise<void>((resolve) => (state.wake = resolve));
        state.wake = null;
        if (state.aborted)
          return outcome({
            ok: false,
            error: { kind: 'cancelled', name: 'Cancelled', message: 'the run was stopped (wall time reached or the request was cancelled)' },
          });
        for (const answer of state.answers.splice(0)) {
          const deferred = pending.get(answer.callId);
          if (!deferred) continue;
          pending.delete(answer.callId);
          const settlement = answer.ok ? vm.newString(answer.json) : vm.newString(answer.error);
          if (answer.ok) deferred.resolve(settlement);
          else deferred.reject(settlement);
          settlement.dispose();
          deferred.dispose();
        }
      }
    } finally {
      promise.dispose();
    }
  } catch (error) {
    // The engine itself failing (its memory exhausted while the host wrote into it, for one).
    const message = (error as Error).message ?? String(error);
    if (/out of memory/i.test(message) || exhausted()) return outcome({ ok: false, error: memoryLimit(limits) });
    return outcome({ ok: false, error: stoppedBy ?? { kind: 'internal', name: 'InternalError', message } });
  } finally {
    for (const deferred of pending.values()) deferred.dispose();
    // The instance goes with the run; disposing is for the engine's own bookkeeping.
    try {
      vm.dispose();
      runtime.dispose();
    } catch {
      // A handle still alive after a failure: the whole instance is dropped anyway.
    }
    current = null;
  }
}

const memoryLimit = (limits: SandboxLimits): RunError => ({
  kind: 'limit',
  name: 'MemoryLimit',
  message: `the program used more than its memory limit of ${Math.round(limits.memoryBytes / 1024 / 1024)} MiB`,
});

/** An error the program threw (or the engine raised in it) as the run's error. */
function thrown(vm: QuickJSContext, handle: QuickJSHandle, stoppedBy: RunError | undefined, limits: SandboxLimits, exhausted: () => boolean): RunError {
  if (stoppedBy) {
    handle.dispose();
    return stoppedBy;
  }
  let dumped: unknown;
  try {
    dumped = vm.dump(handle);
  } finally {
    handle.dispose();
  }
  if (dumped && typeof dumped === 'object') {
    const { name, message, stack } = dumped as { name?: unknown; message?: unknown; stack?: unknown };
    const text = String(message ?? '');
    if (/out of memory/i.test(text)) return memoryLimit(limits);
    const position = positionInStack(typeof stack === 'string' ? stack : undefined);
    return {
      kind: 'runtime',
      name: typeof name === 'string' ? name : 'Error',
      message: text || JSON.stringify(dumped),
      ...(position ? { position } : {}),
    };
  }
  // Out of memory, the engine may not manage even an error object: it throws null.
  if ((dumped === null || dumped === undefined) && exhausted()) return memoryLimit(limits);
  return { kind: 'runtime', name: 'Error', message: `the program threw ${typeof dumped === 'string' ? dumped : JSON.stringify(dumped)}` };
}
