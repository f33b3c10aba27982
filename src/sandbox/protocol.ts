/**
 * The messages between the sandbox pool (main thread, sandbox-pool.ts) and a sandbox worker
 * (sandbox-worker.ts). A tool call leaves the sandbox as a name and JSON text, and its answer
 * comes back as JSON text: nothing but strings crosses, in either direction.
 */

/** What one run may use. Every limit ends the run with an error that names it. */
export interface SandboxLimits {
  /** From the start of the run in a worker to its answer, waiting on tools included. */
  wallMs: number;
  /** Time the program itself runs (the engine's interrupt handler checks it). */
  cpuMs: number;
  /** The engine's heap. */
  memoryBytes: number;
  /** The return value, and the console output, each cut at this many bytes. */
  outputBytes: number;
  /** Tool calls one run may make. */
  maxCalls: number;
  /** The program's source. */
  programBytes: number;
}

export type ToWorker =
  | { type: 'run'; id: number; program: string; limits: SandboxLimits; abort: SharedArrayBuffer }
  | { type: 'answer'; id: number; callId: number; ok: true; json: string }
  | { type: 'answer'; id: number; callId: number; ok: false; error: string }
  | { type: 'abort'; id: number };

export type FromWorker =
  | { type: 'ready' }
  | { type: 'call'; id: number; callId: number; name: string; args: string }
  | { type: 'done'; id: number; outcome: RunOutcome };

/** Where in the program something went wrong: 1-based, as an editor shows it. */
export interface ProgramPosition {
  line: number;
  column: number;
}

export type ErrorKind = 'syntax' | 'runtime' | 'limit' | 'cancelled' | 'internal';

export interface RunError {
  kind: ErrorKind;
  /** The error's class in the program (`TypeError`, `ToolError`, ...) or the limit's name. */
  name: string;
  message: string;
  position?: ProgramPosition;
}

/** What one run answers: its return value as JSON text, or its error; its console output either way. */
export interface RunOutcome {
  ok: boolean;
  /** JSON text of the return value (`null` for none), cut at outputBytes. */
  value?: string;
  valueTruncated?: boolean;
  error?: RunError;
  logs: string[];
  /** Console lines left out past outputBytes. */
  logsDropped: number;
  calls: number;
  /** Instantiating a fresh engine for the run. */
  startMs: number;
  /** Time the program ran in the engine. */
  cpuMs: number;
}
