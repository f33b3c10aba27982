/**
 * Code mode (issue 73): the `run_code` meta-tool runs one program in the sandbox (src/sandbox/),
 * whose tool calls take the same path as `call_tool` (tenant and catalog scope, the upstream that
 * listed the tool, argument checks, timeouts, audit), and answers with the program's return value
 * and console output only: the intermediate results never reach the model.
 *
 * In a program a call resolves to the tool's structuredContent when it has one, else to the text
 * of its content (other blocks as a short placeholder); a result with isError rejects with a
 * ToolError carrying the tool's text.
 */
import { createHash } from 'node:crypto';
import type { RunOutcome, SandboxPool, ToolCallAnswer } from '../sandbox/sandbox-pool.js';
import type { UpstreamCallResult } from '../upstream/upstream-caller.js';
import { callTool, type DiscoveryDeps, type DiscoveryScope } from './discovery.js';

export interface CodeModeDeps extends DiscoveryDeps {
  sandbox: SandboxPool;
  /** Each call a program makes, for the upstream-call metric (the run itself is one meta-tool call). */
  onProgramCall?: (upstream: string | undefined, outcome: string, ms: number) => void;
}

/** What run_code answers: the outcome, and the program's digest for the log and audit. */
export interface CodeRun {
  outcome: RunOutcome;
  program: string;
  ms: number;
}

export async function runCode(deps: CodeModeDeps, scope: DiscoveryScope, code: string, signal?: AbortSignal): Promise<CodeRun> {
  const started = performance.now();
  // Calls from a program reach only catalogs that allow code mode (discovery.ts scopeCatalogs).
  const programScope: DiscoveryScope = { ...scope, fromProgram: true };
  const call = async (name: string, args: Record<string, unknown>, callSignal: AbortSignal): Promise<ToolCallAnswer> => {
    // Each call counts against the key's requests a minute, as the call_tool request it replaces would.
    const charged = await scope.chargeKey?.();
    if (charged && !charged.ok) {
      deps.onProgramCall?.(undefined, 'rate_limited', 0);
      return { ok: false, error: `"${name}" was not called: ${charged.message} (each tool call of a program counts as one request)` };
    }
    const callStarted = performance.now();
    const result = await callTool(deps, programScope, name, args, callSignal);
    deps.onProgramCall?.(result.upstream, result.isError ? 'tool_error' : 'ok', performance.now() - callStarted);
    return result.isError ? { ok: false, error: resultText(result) || `"${name}" failed` } : { ok: true, value: resultValue(result) };
  };
  // Workers are shared fairly by tenant: one tenant's programs cannot keep another's waiting.
  const outcome = await deps.sandbox.run(code, call, signal, scope.tenant);
  const ms = performance.now() - started;
  deps.audit?.record({
    event: 'code_run',
    tenant: scope.tenant,
    catalog: scope.catalog ?? '*',
    hash: programDigest(code),
    outcome: outcome.ok ? 'ok' : outcome.error!.kind,
    ms,
    calls: outcome.calls,
    ...(outcome.ok ? {} : { reason: outcome.error!.name }),
  });
  return { outcome, program: programDigest(code), ms };
}

/** sha256 of the program, 16 hex digits: the audit names a program without keeping it. */
export const programDigest = (code: string) => createHash('sha256').update(code).digest('hex').slice(0, 16);

/** What a call resolves to in the program. */
function resultValue(result: UpstreamCallResult): unknown {
  if (result.structuredContent && typeof result.structuredContent === 'object') return result.structuredContent;
  return resultText(result);
}

/** The text blocks of a result, joined; other blocks as `[image image/png, 1234 bytes of base64]`. */
function resultText(result: UpstreamCallResult): string {
  return (result.content ?? [])
    .map((block) => {
      if (block.type === 'text' && typeof block.text === 'string') return block.text;
      if (block.type === 'resource' && block.resource && typeof block.resource === 'object') {
        const resource = block.resource as { uri?: unknown; text?: unknown };
        return typeof resource.text === 'string' ? resource.text : `[resource ${String(resource.uri ?? '')}]`;
      }
      if (block.type === 'resource_link') return `[resource ${String(block.uri ?? '')}]`;
      const data = typeof block.data === 'string' ? `, ${block.data.length} bytes of base64` : '';
      return `[${String(block.type)}${block.mimeType ? ` ${String(block.mimeType)}` : ''}${data}]`;
    })
    .join('\n');
}

/** The run as the model reads it: the value's JSON, then the console; an error names its line. */
export function runText(outcome: RunOutcome): string {
  const parts: string[] = [];
  if (outcome.ok) parts.push(outcome.valueTruncated ? `${outcome.value}... [result cut at the output limit]` : (outcome.value ?? 'null'));
  else {
    const { error } = outcome;
    const where = error?.position ? ` at line ${error.position.line}, column ${error.position.column}` : '';
    parts.push(`${error?.name ?? 'Error'}${where}: ${error?.message ?? 'the program failed'}`);
  }
  if (outcome.logs.length > 0) parts.push(`console:\n${outcome.logs.join('\n')}${outcome.logsDropped > 0 ? `\n[${outcome.logsDropped} more lines cut]` : ''}`);
  return parts.join('\n');
}

/** The structured answer of a run that returned (openapi-free: the MCP output schema in server.ts). */
export function runStructured(outcome: RunOutcome, ms: number): Record<string, unknown> {
  let result: unknown = null;
  if (outcome.ok && !outcome.valueTruncated) {
    try {
      result = JSON.parse(outcome.value ?? 'null');
    } catch {
      result = outcome.value;
    }
  }
  return {
    ...(outcome.valueTruncated ? { result_truncated: outcome.value } : { result }),
    logs: outcome.logs,
    ...(outcome.logsDropped > 0 ? { logs_dropped: outcome.logsDropped } : {}),
    calls: outcome.calls,
    ms: Math.round(ms * 100) / 100,
  };
}
