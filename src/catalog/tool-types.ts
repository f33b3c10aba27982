/**
 * TypeScript declarations of tools, for models writing code-mode programs: the input type from
 * the tool's inputSchema, the output type from its outputSchema (what a call resolves to in a
 * program: its structuredContent) or `string` (its text) without one, and the description as a
 * doc comment. A small generator rather than json-schema-to-typescript: it is synchronous, never
 * resolves a `$ref` outside the schema (that library's resolver follows http and file refs, which a
 * hostile upstream's schema would turn into requests from the gateway), and bounds its output.
 * Every declaration it writes type-checks (test/unit/tool-types.test.ts compiles those of the four
 * eval corpora with the TypeScript compiler).
 */

type Schema = Record<string, unknown> | boolean;

/** Nesting written out in full; deeper parts are `unknown`. */
const DEPTH_MAX = 8;
/**
 * A declaration's type text past which deeper parts are cut to `unknown`, an object's further
 * properties to an index signature and an enum to its values' types (a schema can be megabytes).
 */
const TYPE_CHARS_MAX = 8_000;
/** Schemas entered at once (`anyOf` in `anyOf`, `$ref` to `$ref`...); a deeper chain is `unknown`, not a stack overflow. */
const NESTING_MAX = 64;
/** What a property's doc comment keeps of its description. */
const DOC_CHARS_MAX = 1_000;
/** What a short signature (search_tools) keeps of the input type. */
const SIGNATURE_CHARS_MAX = 240;

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
const RESERVED = new Set(
  'break case catch class const continue debugger default delete do else enum export extends false finally for function if import in instanceof new null return super switch this throw true try typeof var void while with yield let static implements interface package private protected public await'.split(
    ' ',
  ),
);

/** How a program reaches the tool at `address` (`name` or `catalog/name`): `tools.a.b`, or `tools["a-b"]` where a part is not an identifier. */
export function toolAccessor(address: string): string {
  return `tools${address
    .split('/')
    .map((part) => (IDENTIFIER.test(part) ? `.${part}` : `[${JSON.stringify(part)}]`))
    .join('')}`;
}

interface Context {
  root: Schema;
  /** $refs being expanded (a recursive schema ends as `unknown`, not a loop). */
  expanding: Set<string>;
  /** Whether properties carry their descriptions as doc comments. */
  docs: boolean;
  /** Nested object levels written out before `{ ... }`-style cut (signatures keep one). */
  depthMax: number;
  /** Characters written so far, against TYPE_CHARS_MAX (never decreases, so it also bounds the work). */
  written: number;
  /** Schemas being expanded, against NESTING_MAX. */
  nesting: number;
}

/** The TypeScript type of a JSON Schema. */
export function schemaType(schema: unknown, options: { docs?: boolean; depthMax?: number } = {}): string {
  const root = isSchema(schema) ? schema : true;
  return typeOf(root, { root, expanding: new Set(), docs: options.docs ?? true, depthMax: options.depthMax ?? DEPTH_MAX, written: 0, nesting: 0 }, 0);
}

function isSchema(value: unknown): value is Schema {
  return typeof value === 'boolean' || (value !== null && typeof value === 'object' && !Array.isArray(value));
}

function typeOf(schema: Schema, context: Context, depth: number): string {
  if (context.nesting >= NESTING_MAX) return 'unknown';
  context.nesting++;
  try {
    const type = typeOfUnbounded(schema, context, depth);
    context.written += type.length;
    // Objects, enums and tuples cut themselves to fit; a union or intersection too long is `unknown`.
    return type.length > TYPE_CHARS_MAX ? 'unknown' : type;
  } finally {
    context.nesting--;
  }
}

function typeOfUnbounded(schema: Schema, context: Context, depth: number): string {
  if (schema === true) return 'unknown';
  if (schema === false) return 'never';
  if (depth > context.depthMax || context.written > TYPE_CHARS_MAX) return 'unknown';
  const ref = schema.$ref;
  if (typeof ref === 'string') {
    const target = resolveRef(context.root, ref);
    if (!target || context.expanding.has(ref)) return 'unknown';
    context.expanding.add(ref);
    try {
      return typeOf(target, context, depth);
    } finally {
      context.expanding.delete(ref);
    }
  }
  const nullable = schema.nullable === true;
  const withNull = (type: string) => (nullable && type !== 'unknown' ? `${type} | null` : type);
  if ('const' in schema) return withNull(literals([schema.const], context));
  if (Array.isArray(schema.enum)) return withNull(literals(schema.enum, context));
  for (const key of ['anyOf', 'oneOf'] as const) {
    const options = schema[key];
    if (Array.isArray(options) && options.length > 0) return withNull(union(options.filter(isSchema).map((option) => typeOf(option, context, depth))));
  }
  if (Array.isArray(schema.allOf) && schema.allOf.length > 0) {
    const parts = schema.allOf.filter(isSchema).map((part) => typeOf(part, context, depth));
    const own = ownType(schema, context, depth);
    return withNull(
      [...parts, ...(own === 'unknown' ? [] : [own])]
        .filter((part) => part !== 'unknown')
        .map(parenthesize)
        .join(' & ') || 'unknown',
    );
  }
  return withNull(ownType(schema, context, depth));
}

/** The type from `type` (one or several), `properties` and `items`. */
function ownType(schema: Record<string, unknown>, context: Context, depth: number): string {
  const declared = Array.isArray(schema.type)
    ? schema.type.filter((type): type is string => typeof type === 'string')
    : typeof schema.type === 'string'
      ? [schema.type]
      : [];
  const types = declared.length > 0 ? declared : schema.properties || schema.additionalProperties ? ['object'] : schema.items ? ['array'] : [];
  if (types.length === 0) return 'unknown';
  return union(types.map((type) => primitive(type, schema, context, depth)));
}

function primitive(type: string, schema: Record<string, unknown>, context: Context, depth: number): string {
  switch (type) {
    case 'string':
      return 'string';
    case 'number':
    case 'integer':
      return 'number';
    case 'boolean':
      return 'boolean';
    case 'null':
      return 'null';
    case 'array':
      return arrayType(schema, context, depth);
    case 'object':
      return objectType(schema, context, depth);
    default:
      return 'unknown';
  }
}

function arrayType(schema: Record<string, unknown>, context: Context, depth: number): string {
  const tuple = Array.isArray(schema.prefixItems) ? schema.prefixItems : Array.isArray(schema.items) ? schema.items : undefined;
  if (tuple) {
    const items: string[] = [];
    for (const item of tuple) {
      if (context.written > TYPE_CHARS_MAX) return 'unknown[]';
      items.push(isSchema(item) ? typeOf(item, context, depth + 1) : 'unknown');
    }
    return `[${items.join(', ')}]`;
  }
  const items = isSchema(schema.items) ? typeOf(schema.items, context, depth + 1) : 'unknown';
  return `${parenthesize(items)}[]`;
}

function objectType(schema: Record<string, unknown>, context: Context, depth: number): string {
  const properties =
    schema.properties && typeof schema.properties === 'object' && !Array.isArray(schema.properties) ? (schema.properties as Record<string, unknown>) : {};
  const required = new Set(Array.isArray(schema.required) ? schema.required.filter((name): name is string => typeof name === 'string') : []);
  const extra = schema.additionalProperties;
  const names = Object.keys(properties);
  if (names.length === 0 && (extra === undefined || extra === true)) return 'Record<string, unknown>';
  if (depth >= context.depthMax) return 'Record<string, unknown>';
  const indent = '  '.repeat(depth + 1);
  const members: string[] = [];
  /** The named properties' types, which an index signature's type must include (`undefined` for an optional one). */
  const types: string[] = [];
  let size = 0;
  let cut = false;
  for (const name of names) {
    const property = properties[name];
    if (!isSchema(property)) continue;
    if (context.written > TYPE_CHARS_MAX) {
      cut = true;
      break;
    }
    const type = typeOf(property, context, depth + 1);
    const doc =
      context.docs && typeof property === 'object' && typeof property.description === 'string' ? docComment(shortened(property.description), indent) : '';
    const member = `${doc}${indent}${propertyKey(name)}${required.has(name) ? '' : '?'}: ${type};`;
    // Room is left for the braces and the index signature: the object stays within TYPE_CHARS_MAX.
    if (size + member.length > TYPE_CHARS_MAX - 200) {
      cut = true;
      break;
    }
    size += member.length + 1;
    members.push(member);
    types.push(type, ...(required.has(name) ? [] : ['undefined']));
  }
  if (cut) {
    // The properties left out are still allowed: an index signature of `unknown` admits them.
    members.push(`${context.docs ? `${indent}/** More properties, not shown. */\n` : ''}${indent}[key: string]: unknown;`);
  } else if (isSchema(extra) && extra !== true && extra !== false) {
    // Every named property must fit the index signature's type, or TypeScript rejects the declaration.
    const index = union([typeOf(extra, context, depth + 1), ...types]);
    members.push(`${indent}[key: string]: ${index.length > SIGNATURE_CHARS_MAX ? 'unknown' : index};`);
  }
  if (members.length === 0) return extra === false ? 'Record<string, never>' : 'Record<string, unknown>';
  return context.docs ? `{\n${members.join('\n')}\n${'  '.repeat(depth)}}` : `{ ${members.map((member) => member.trim()).join(' ')} }`;
}

function propertyKey(name: string): string {
  return IDENTIFIER.test(name) ? name : JSON.stringify(name);
}

/** The union of `values` as literal types, or of their types (`string`...) where the literals would not fit TYPE_CHARS_MAX. */
function literals(values: unknown[], context: Context): string {
  const types: string[] = [];
  let size = 0;
  for (const value of values) {
    const type = literal(value);
    size += type.length + 3;
    if (context.written + size > TYPE_CHARS_MAX) return union(values.map(widened));
    types.push(type);
  }
  return union(types);
}

function widened(value: unknown): string {
  if (value === null) return 'null';
  return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean' ? typeof value : 'unknown';
}

function literal(value: unknown): string {
  if (value === null || typeof value === 'boolean' || typeof value === 'number') return String(value);
  if (typeof value === 'string') return JSON.stringify(value);
  return 'unknown';
}

function union(types: string[]): string {
  const unique = [...new Set(types)];
  if (unique.includes('unknown')) return 'unknown';
  return unique.length === 0 ? 'never' : unique.map(parenthesize).join(' | ');
}

/** A union or intersection inside another one, or before `[]`, in parentheses. */
function parenthesize(type: string): string {
  let nesting = 0;
  let quoted = false;
  for (let i = 0; i < type.length; i++) {
    const char = type[i]!;
    if (quoted) {
      if (char === '\\') i++;
      else if (char === '"') quoted = false;
    } else if (char === '"') quoted = true;
    else if (char === '/' && type[i + 1] === '*') {
      // A doc comment's text (`{`, `"`, `|` in a description) is not part of the type.
      const end = type.indexOf('*/', i + 2);
      if (end < 0) break;
      i = end + 1;
    } else if (char === '{' || char === '[' || char === '(' || char === '<') nesting++;
    else if (char === '}' || char === ']' || char === ')' || char === '>') nesting--;
    else if (nesting === 0 && (char === '|' || char === '&')) return `(${type})`;
  }
  return type;
}

/** A local JSON pointer (`#/$defs/Address`, `#/definitions/x`); nothing outside the schema is ever fetched. */
function resolveRef(root: Schema, ref: string): Schema | undefined {
  if (ref === '#') return root;
  if (!ref.startsWith('#/')) return undefined;
  let node: unknown = root;
  for (const raw of ref.slice(2).split('/')) {
    const key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    if (node === null || typeof node !== 'object' || !Object.hasOwn(node, key)) return undefined;
    node = (node as Record<string, unknown>)[key];
  }
  return isSchema(node) ? node : undefined;
}

/** A description cut to DOC_CHARS_MAX characters (not inside a surrogate pair). */
function shortened(text: string): string {
  if (text.length <= DOC_CHARS_MAX) return text;
  const end = /[\uD800-\uDBFF]/.test(text[DOC_CHARS_MAX - 1]!) ? DOC_CHARS_MAX - 1 : DOC_CHARS_MAX;
  return `${text.slice(0, end)}...`;
}

/** A doc comment that cannot end early: `*\/` in a description is written `*\u2215`. */
function docComment(text: string, indent: string): string {
  const lines = text
    .replace(/\*\//g, '*\u2215')
    .replace(/\r\n?/g, '\n')
    .split('\n')
    .map((line) => line.trimEnd());
  while (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
  if (lines.length === 0) return '';
  if (lines.length === 1) return `${indent}/** ${lines[0]} */\n`;
  return `${indent}/**\n${lines.map((line) => `${indent} *${line ? ` ${line}` : ''}`).join('\n')}\n${indent} */\n`;
}

/** What a call to the tool resolves to in a program. */
export function outputType(outputSchema: unknown, options: { docs?: boolean; depthMax?: number } = {}): string {
  return isSchema(outputSchema) && outputSchema !== true ? schemaType(outputSchema, options) : 'string';
}

/** A tool as a program sees it. */
export interface TypedTool {
  /** The address at this endpoint (`name`, or `catalog/name` at /mcp). */
  address: string;
  description: string;
  inputSchema: unknown;
  outputSchema?: unknown;
}

/** A function name for the declaration: the tool's name where it is an identifier, else a safe one. */
function functionName(address: string): string {
  const name = address.slice(address.lastIndexOf('/') + 1);
  const cleaned = name.replace(/[^A-Za-z0-9_$]/g, '_');
  const identifier = /^[A-Za-z_$]/.test(cleaned) ? cleaned : `_${cleaned}`;
  return RESERVED.has(identifier) ? `${identifier}_` : identifier;
}

/**
 * The tool as a TypeScript declaration: its description and how a program calls it as a doc
 * comment, then a function whose argument is the input type and whose promise holds the output type.
 */
export function toolDeclaration(tool: TypedTool): string {
  const input = schemaType(tool.inputSchema);
  const output = outputType(tool.outputSchema);
  const doc = docComment(
    `${tool.description.trim()}${tool.description.trim() ? '\n\n' : ''}Call: await ${toolAccessor(tool.address)}(args)${tool.outputSchema ? '' : ' (resolves to the text of its result)'}`,
    '',
  );
  return `${doc}declare function ${functionName(tool.address)}(args: ${input === 'unknown' ? 'Record<string, unknown>' : input}): Promise<${output}>;`;
}

/** One line for search_tools: how to call the tool and with what (nested objects cut short). */
export function toolSignature(tool: TypedTool): string {
  const input = schemaType(tool.inputSchema, { docs: false, depthMax: 1 });
  const output = outputType(tool.outputSchema, { docs: false, depthMax: 1 });
  const inputText = input.length > SIGNATURE_CHARS_MAX ? `${input.slice(0, SIGNATURE_CHARS_MAX)}...` : input;
  const outputText = output.length > SIGNATURE_CHARS_MAX / 2 ? 'object' : output;
  return `${toolAccessor(tool.address)}(args: ${inputText === 'unknown' ? 'Record<string, unknown>' : inputText}): Promise<${outputText}>`;
}
