/** The tool formats toolsift recognises on input. */
export type ToolFormat = 'mcp' | 'openai_chat' | 'openai_responses' | 'anthropic' | 'gateway';

export type JsonSchema = Record<string, unknown>;

/**
 * One canonical tool, whatever shape it arrived in. Everything the ranking and the store need is
 * here; `definition` keeps what the client sent so `detail=full` can hand it back unchanged.
 */
export interface Tool {
  name: string;
  /** '' when the source had none. */
  description: string;
  /** JSON Schema of the arguments; null when the source had none. */
  inputSchema: JsonSchema | null;
  /** Sorted, de-duplicated. */
  tags: string[];
  server: string | null;
  format: ToolFormat;
  definition: unknown;
}

/** The fields that identify a tool's content: what the content hash covers. */
export type CanonicalTool = Pick<Tool, 'name' | 'description' | 'inputSchema' | 'tags' | 'server'>;

/** The shapes a tool's definition is sent in: Anthropic's, OpenAI's Responses, and as its client sent it. */
export type WireShape = 'anthropic' | 'openai' | 'as_sent';

/** One tool's definition tokens in each shape (catalog/tokens.ts counts them; the store keeps them). */
export type DefinitionTokens = Record<WireShape, number>;
