import { z } from 'zod';
import type { JsonSchema, Tool, ToolFormat } from '../lib/tool.js';

export const TOOL_NAME_MAX = 128;

const toolName = z
  .string({ error: (issue) => (issue.input === undefined ? 'name is required' : 'name must be a string') })
  .min(1, 'name must not be empty')
  .max(TOOL_NAME_MAX, `name must be at most ${TOOL_NAME_MAX} characters`);
const description = z.string({ error: 'description must be a string' }).nullish();
const jsonSchema = z.record(z.string(), z.unknown(), { error: 'must be a JSON Schema object' });
/** Fields any shape may carry on top of its own. */
const extras = {
  tags: z.array(z.string().min(1).max(64), { error: 'tags must be an array of strings' }).max(64).optional(),
  server: z.string().min(1).max(128).nullish(),
};

const mcpTool = z.object({
  name: toolName,
  title: z.string().optional(),
  description,
  inputSchema: jsonSchema,
  ...extras,
});
const anthropicTool = z.object({ name: toolName, description, input_schema: jsonSchema.nullable(), ...extras });
const openaiChatTool = z.object({
  type: z.literal('function'),
  function: z.object({ name: toolName, description, parameters: jsonSchema.nullish() }),
  ...extras,
});
const openaiResponsesTool = z.object({
  type: z.literal('function'),
  name: toolName,
  description,
  parameters: jsonSchema.nullish(),
  ...extras,
});
const gatewayTool = z.object({
  name: toolName,
  description,
  definition: z.record(z.string(), z.unknown()).nullish(),
  parameters: jsonSchema.nullish(),
  ...extras,
});

export class ToolFormatError extends Error {
  constructor(
    message: string,
    readonly issues: { path: (string | number)[]; message: string }[],
  ) {
    super(message);
  }
}

type Parsed = Omit<Tool, 'definition' | 'tags' | 'server'> & { tags?: string[]; server?: string | null };

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Which shape a raw tool claims to be, from its distinguishing keys. */
export function detectToolFormat(raw: Record<string, unknown>): ToolFormat {
  if (raw.type !== undefined) return 'function' in raw ? 'openai_chat' : 'openai_responses';
  if ('inputSchema' in raw) return 'mcp';
  if ('input_schema' in raw) return 'anthropic';
  return 'gateway';
}

function parseWith<T>(schema: z.ZodType<T>, raw: unknown, format: ToolFormat): T {
  const result = schema.safeParse(raw);
  if (result.success) return result.data;
  const issues = result.error.issues.map((issue) => ({
    path: issue.path.map((part) => (typeof part === 'symbol' ? String(part) : part)),
    message: issue.message,
  }));
  const first = issues[0]!;
  if (format === 'gateway' && first.path[0] === 'name') {
    throw new ToolFormatError(
      `not a recognised tool (${first.message}): expected MCP {name, inputSchema}, OpenAI {type: "function", ...}, ` +
        'Anthropic {name, input_schema} or {name, description?, parameters?, definition?}',
      issues,
    );
  }
  const where = first.path.length ? `${first.path.join('.')}: ` : '';
  throw new ToolFormatError(`not a valid ${format} tool (${where}${first.message})`, issues);
}

function parseShape(raw: unknown, allowWrapper: boolean): Parsed {
  if (!isRecord(raw)) throw new ToolFormatError('a tool must be a JSON object', []);
  const format = detectToolFormat(raw);
  if (raw.type !== undefined && raw.type !== 'function') {
    throw new ToolFormatError(`unsupported tool type "${String(raw.type)}" (only "function" tools are accepted)`, [
      { path: ['type'], message: 'expected "function"' },
    ]);
  }
  switch (format) {
    case 'mcp': {
      const tool = parseWith(mcpTool, raw, format);
      return { ...tool, format, description: tool.description ?? tool.title ?? '', inputSchema: tool.inputSchema };
    }
    case 'anthropic': {
      const tool = parseWith(anthropicTool, raw, format);
      return { ...tool, format, description: tool.description ?? '', inputSchema: tool.input_schema };
    }
    case 'openai_chat': {
      const tool = parseWith(openaiChatTool, raw, format);
      const fn = tool.function;
      return { ...tool, format, name: fn.name, description: fn.description ?? '', inputSchema: fn.parameters ?? null };
    }
    case 'openai_responses': {
      const tool = parseWith(openaiResponsesTool, raw, format);
      return { ...tool, format, description: tool.description ?? '', inputSchema: tool.parameters ?? null };
    }
    case 'gateway': {
      if (!allowWrapper) {
        throw new ToolFormatError('definition must be an MCP, OpenAI or Anthropic tool', [
          { path: ['definition'], message: 'no inputSchema, input_schema or type: "function"' },
        ]);
      }
      const tool = parseWith(gatewayTool, raw, format);
      let inner: Parsed | undefined;
      if (tool.definition) {
        try {
          inner = parseShape(tool.definition, false);
        } catch (error) {
          if (!(error instanceof ToolFormatError)) throw error;
          throw new ToolFormatError(`definition: ${error.message}`, [
            { path: ['definition'], message: error.message },
            ...error.issues.map((issue) => ({ ...issue, path: ['definition', ...issue.path] })),
          ]);
        }
      }
      return {
        format,
        // The wrapper's name is what the gateway matches answers against.
        name: tool.name,
        description: tool.description || inner?.description || '',
        inputSchema: tool.parameters ?? inner?.inputSchema ?? null,
        tags: tool.tags ?? inner?.tags,
        server: tool.server ?? inner?.server,
      };
    }
  }
}

/**
 * One raw tool in any accepted shape (MCP, OpenAI Chat, OpenAI Responses, Anthropic, or the
 * Context Gateway wrapper around any of them) to the canonical Tool. Throws ToolFormatError.
 */
export function normalizeTool(raw: unknown): Tool {
  const parsed = parseShape(raw, true);
  // PostgreSQL text cannot hold U+0000: without this a NUL in a description is a 500, not a 400.
  if ([parsed.name, parsed.description, parsed.server ?? '', ...(parsed.tags ?? [])].some((text) => text.includes('\u0000'))) {
    throw new ToolFormatError('name, description, tags and server must not contain NUL (\\u0000) characters', []);
  }
  return {
    name: parsed.name,
    description: parsed.description,
    inputSchema: (parsed.inputSchema ?? null) as JsonSchema | null,
    tags: [...new Set(parsed.tags ?? [])].sort(),
    server: parsed.server ?? null,
    format: parsed.format,
    definition: raw,
  };
}

export interface ToolIssue {
  index: number;
  name?: string;
  message: string;
  issues?: { path: (string | number)[]; message: string }[];
}

/**
 * Normalizes a list of tools, collecting every bad one (by index) and duplicate names, so a client
 * learns everything wrong with its catalog in one answer.
 */
export function normalizeTools(raws: unknown[]): { tools: Tool[]; problems: ToolIssue[] } {
  const tools: Tool[] = [];
  const problems: ToolIssue[] = [];
  const firstIndex = new Map<string, number>();
  raws.forEach((raw, index) => {
    try {
      const tool = normalizeTool(raw);
      const seen = firstIndex.get(tool.name);
      if (seen !== undefined) {
        problems.push({ index, name: tool.name, message: `duplicate tool name "${tool.name}" (first at index ${seen})` });
        return;
      }
      firstIndex.set(tool.name, index);
      tools.push(tool);
    } catch (error) {
      if (!(error instanceof ToolFormatError)) throw error;
      const name = isRecord(raw) && typeof raw.name === 'string' ? raw.name : undefined;
      problems.push({ index, ...(name ? { name } : {}), message: error.message, issues: error.issues });
    }
  });
  return { tools, problems };
}

/**
 * The tool list inside a request body: `{tools: [...]}` (also an MCP `tools/list` result), a
 * JSON-RPC response wrapping one, or a bare array.
 */
export function extractToolList(body: unknown): unknown[] | undefined {
  if (Array.isArray(body)) return body;
  if (!isRecord(body)) return undefined;
  if (Array.isArray(body.tools)) return body.tools;
  if (isRecord(body.result) && Array.isArray(body.result.tools)) return body.result.tools;
  return undefined;
}

/** Keys each shape defines (its provider's, plus toolsift's `tags` and `server`). */
const KNOWN_KEYS: Record<ToolFormat, ReadonlySet<string>> = {
  mcp: new Set(['name', 'title', 'description', 'inputSchema', 'outputSchema', 'annotations', 'icons', '_meta', 'execution', 'tags', 'server']),
  anthropic: new Set([
    'name',
    'description',
    'input_schema',
    'cache_control',
    'type',
    'strict',
    'defer_loading',
    'input_examples',
    'allowed_callers',
    'tags',
    'server',
  ]),
  openai_chat: new Set(['type', 'function', 'tags', 'server']),
  openai_responses: new Set(['type', 'name', 'description', 'parameters', 'strict', 'defer_loading', 'tags', 'server']),
  gateway: new Set(['name', 'description', 'definition', 'parameters', 'tags', 'server']),
};

/** Keys that look like a misspelt schema: the tool is then stored without its parameters. */
const SCHEMA_LIKE = /schema|param|argument|input/i;

export interface ToolWarning {
  index: number;
  name?: string;
  key: string;
  message: string;
}

/**
 * What a tool carries that its shape does not define: accepted (the tool is still valid) but
 * reported, because a misspelt schema key ("schema", "inputschema") silently drops the tool's
 * parameters from its searchable text and its hash.
 */
export function toolWarnings(raw: unknown, index: number): ToolWarning[] {
  if (!isRecord(raw)) return [];
  const format = detectToolFormat(raw);
  const known = KNOWN_KEYS[format];
  const name = typeof raw.name === 'string' ? raw.name : undefined;
  return Object.keys(raw)
    .filter((key) => !known.has(key))
    .map((key) => ({
      index,
      ...(name ? { name } : {}),
      key,
      message: SCHEMA_LIKE.test(key)
        ? `unknown key "${key}" ignored: read as a ${format} tool, so its parameters are not searched (did you mean ${format === 'anthropic' ? 'input_schema' : 'inputSchema'}?)`
        : `unknown key "${key}" ignored (read as a ${format} tool)`,
    }));
}
