/**
 * TypeScript declarations of tools: the type of each JSON Schema construct, the bounds a hostile
 * schema meets (megabytes, recursion, remote $refs, comment-closing descriptions), and a compile of
 * the declarations and signatures of every tool of the four eval corpora with the TypeScript
 * compiler (strict), which must report nothing.
 */
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it, vi } from 'vitest';
import { outputType, schemaType, toolAccessor, toolDeclaration, toolSignature, type TypedTool } from '../../src/catalog/tool-types.js';

const EVAL = fileURLToPath(new URL('../../../shared/eval/', import.meta.url));
const CORPORA = ['bfcl', 'livemcpbench', 'sealtools', 'toolbench_stable'];

interface Line {
  name: string;
  description?: string;
  input_schema?: Record<string, unknown> | null;
}

const VIRTUAL = '/virtual/declarations.ts';
const COMPILER_OPTIONS: ts.CompilerOptions = {
  strict: true,
  noEmit: true,
  target: ts.ScriptTarget.ES2022,
  lib: ['lib.es2022.d.ts'],
  types: [],
  skipLibCheck: true,
};
const libFiles = new Map<string, ts.SourceFile | undefined>();

/** The TypeScript compiler's diagnostics for `text` as one script file. */
function compile(text: string): readonly ts.Diagnostic[] {
  const host = ts.createCompilerHost(COMPILER_OPTIONS);
  const readLib = host.getSourceFile.bind(host);
  const source = ts.createSourceFile(VIRTUAL, text, ts.ScriptTarget.ES2022, true);
  host.getSourceFile = (fileName, languageVersion, onError) => {
    if (fileName === VIRTUAL) return source;
    if (!libFiles.has(fileName)) libFiles.set(fileName, readLib(fileName, languageVersion, onError));
    return libFiles.get(fileName);
  };
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (fileName) => fileName === VIRTUAL || fileExists(fileName);
  const readFile = host.readFile.bind(host);
  host.readFile = (fileName) => (fileName === VIRTUAL ? text : readFile(fileName));
  return ts.getPreEmitDiagnostics(ts.createProgram([VIRTUAL], COMPILER_OPTIONS, host));
}

/** The first few diagnostics as `file:line:column message` and the line they point at, or '' for none. */
function shown(diagnostics: readonly ts.Diagnostic[]): string {
  return diagnostics
    .slice(0, 5)
    .map((diagnostic) => {
      const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n');
      if (!diagnostic.file || diagnostic.start === undefined) return message;
      const { line, character } = diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start);
      const starts = diagnostic.file.getLineStarts();
      const lineText = diagnostic.file.text.slice(starts[line], starts[line + 1] ?? diagnostic.file.text.length).trimEnd();
      return `${diagnostic.file.fileName}:${line + 1}:${character + 1} ${message}\n    ${lineText.slice(0, 200)}`;
    })
    .join('\n');
}

/** The function name a declaration declares (it follows its doc comment). */
function declaredName(declaration: string): string {
  const match = /^declare function ([A-Za-z_$][A-Za-z0-9_$]*)\(args: /m.exec(declaration);
  expect(match, declaration.slice(0, 500)).not.toBeNull();
  return match![1]!;
}

/**
 * A declaration in a namespace of its own (tools of two corpora share names), `declare` dropped as
 * the namespace is ambient already, and a use of the function from outside: the name must be declared
 * there, and not swallowed by a comment that a description closed early.
 */
function inNamespace(declaration: string, index: number): string {
  const name = declaredName(declaration);
  return `declare namespace T${index} {\n${declaration.replace(/^declare function /m, 'function ')}\n}\ntype R${index} = Awaited<ReturnType<typeof T${index}.${name}>>;\n`;
}

/** Compiles `text` and expects no diagnostics, showing the first few otherwise. */
function expectCompiles(text: string): void {
  const diagnostics = compile(text);
  expect(diagnostics.length, `diagnostics, the first:\n${shown(diagnostics)}`).toBe(0);
}

const schemaOf = (properties: Record<string, unknown>, required: string[] = []) => ({ type: 'object', properties, required });

describe('schemaType', () => {
  it('writes required properties plain and optional ones with ?', () => {
    expect(schemaType(schemaOf({ city: { type: 'string' }, days: { type: 'integer' }, metric: { type: 'boolean' } }, ['city']), { docs: false })).toBe(
      '{ city: string; days?: number; metric?: boolean; }',
    );
    expect(schemaType(schemaOf({ city: { type: 'string', description: 'The city.' } }, ['city']))).toBe('{\n  /** The city. */\n  city: string;\n}');
  });

  it('writes enum and const values as literal types', () => {
    expect(schemaType({ enum: ['c', 'f', 1, true, null] })).toBe('"c" | "f" | 1 | true | null');
    expect(schemaType({ type: 'string', enum: ['say "hi"'] })).toBe('"say \\"hi\\""');
    expect(schemaType({ const: 'fixed' })).toBe('"fixed"');
    expect(schemaType({ const: 42 })).toBe('42');
    expect(schemaType({ enum: [] })).toBe('never');
    expect(schemaType({ const: { an: 'object' } })).toBe('unknown');
  });

  it('writes anyOf and oneOf as unions, allOf as an intersection', () => {
    expect(schemaType({ anyOf: [{ type: 'string' }, { type: 'number' }] })).toBe('string | number');
    expect(schemaType({ oneOf: [{ type: 'string' }, { type: 'null' }] })).toBe('string | null');
    expect(schemaType({ anyOf: [{ type: 'string' }, {}] })).toBe('unknown');
    expect(
      schemaType(
        { allOf: [schemaOf({ a: { type: 'string' } }, ['a']), schemaOf({ b: { anyOf: [{ type: 'string' }, { type: 'number' }] } })] },
        { docs: false },
      ),
    ).toBe('{ a: string; } & { b?: string | number; }');
    expect(schemaType({ allOf: [{ anyOf: [{ type: 'string' }, { type: 'number' }] }, { type: 'string' }] })).toBe('(string | number) & string');
    expect(schemaType({ type: ['string', 'integer'] })).toBe('string | number');
  });

  it('adds null for nullable: true', () => {
    expect(schemaType({ type: 'string', nullable: true })).toBe('string | null');
    expect(schemaType({ enum: ['a', 'b'], nullable: true })).toBe('"a" | "b" | null');
    expect(schemaType({ nullable: true })).toBe('unknown');
  });

  it('writes arrays of objects and tuples', () => {
    expect(schemaType({ type: 'array', items: schemaOf({ id: { type: 'string' } }, ['id']) }, { docs: false })).toBe('{ id: string; }[]');
    expect(schemaType({ type: 'array', items: { anyOf: [{ type: 'string' }, { type: 'number' }] } })).toBe('(string | number)[]');
    expect(schemaType({ type: 'array', prefixItems: [{ type: 'number' }, { type: 'string' }] })).toBe('[number, string]');
    expect(schemaType({ type: 'array', items: [{ type: 'number' }, { type: 'boolean' }] })).toBe('[number, boolean]');
    expect(schemaType({ type: 'array' })).toBe('unknown[]');
  });

  it('parenthesizes a union whatever its doc comments hold', () => {
    const item = { anyOf: [schemaOf({ a: { type: 'string', description: 'has { a brace, a " quote and a | bar' } }), { type: 'string' }] };
    const type = schemaType({ type: 'array', items: item });
    expect(type.startsWith('({')).toBe(true);
    expect(type.endsWith('| string)[]')).toBe(true);
    expectCompiles(`type X = ${type};\nconst ok: X = [{ a: 'x' }, 'y'];\n`);
  });

  it('writes an additionalProperties schema as an index signature every property fits', () => {
    expect(schemaType({ type: 'object', additionalProperties: { type: 'number' } }, { docs: false })).toBe('{ [key: string]: number; }');
    expect(schemaType({ type: 'object', additionalProperties: false })).toBe('Record<string, never>');
    expect(schemaType({ type: 'object', additionalProperties: true })).toBe('Record<string, unknown>');
    const mixed = schemaType(
      { ...schemaOf({ a: { type: 'string' }, b: { type: 'number' } }, ['a']), additionalProperties: { type: 'boolean' } },
      { docs: false },
    );
    expect(mixed).toBe('{ a: string; b?: number; [key: string]: boolean | string | number | undefined; }');
    expectCompiles(`type X = ${mixed};\nconst ok: X = { a: 'x', b: 1, extra: true };\n`);
  });

  it('follows local $refs to $defs and definitions', () => {
    const address = schemaOf({ street: { type: 'string' } }, ['street']);
    expect(schemaType({ $defs: { Address: address }, ...schemaOf({ home: { $ref: '#/$defs/Address' } }, ['home']) }, { docs: false })).toBe(
      '{ home: { street: string; }; }',
    );
    expect(schemaType({ definitions: { id: { type: 'integer' } }, ...schemaOf({ id: { $ref: '#/definitions/id' } }) }, { docs: false })).toBe(
      '{ id?: number; }',
    );
    expect(schemaType({ $defs: { 'a/b': { type: 'string' } }, ...schemaOf({ x: { $ref: '#/$defs/a~1b' } }) }, { docs: false })).toBe('{ x?: string; }');
    expect(schemaType(schemaOf({ x: { $ref: '#/$defs/missing' } }), { docs: false })).toBe('{ x?: unknown; }');
  });

  it('ends a recursive $ref as unknown', () => {
    const tree = {
      $defs: { node: schemaOf({ value: { type: 'number' }, children: { type: 'array', items: { $ref: '#/$defs/node' } } }, ['value']) },
      $ref: '#/$defs/node',
    };
    expect(schemaType(tree, { docs: false })).toBe('{ value: number; children?: unknown[]; }');
    expect(schemaType(schemaOf({ self: { $ref: '#' } }), { docs: false })).toBe('{ self?: { self?: unknown; }; }');
    expect(schemaType({ $defs: { a: { $ref: '#/$defs/b' }, b: { $ref: '#/$defs/a' } }, $ref: '#/$defs/a' })).toBe('unknown');
  });

  it('never fetches a remote $ref: it is unknown', () => {
    const fetchSpy = vi.spyOn(globalThis, 'fetch');
    try {
      for (const ref of ['http://169.254.169.254/x', 'file:///etc/passwd', 'https://example.com/schema.json#/defs/a', '/etc/passwd', 'other.json#/a']) {
        const type = schemaType(schemaOf({ x: { $ref: ref } }, ['x']), { docs: false });
        expect(type).toBe('{ x: unknown; }');
        expect(toolDeclaration({ address: 'probe', description: '', inputSchema: { $ref: ref } })).toContain(
          '(args: Record<string, unknown>): Promise<string>;',
        );
      }
      expect(fetchSpy).not.toHaveBeenCalled();
    } finally {
      fetchSpy.mockRestore();
    }
  });

  it('quotes property names that are not identifiers', () => {
    const type = schemaType(schemaOf({ 'first-name': { type: 'string' }, '2fa': { type: 'boolean' }, 'a b': {}, 'say "x"': {}, ok_1: {} }, ['first-name']), {
      docs: false,
    });
    expect(type).toBe('{ "first-name": string; "2fa"?: boolean; "a b"?: unknown; "say \\"x\\""?: unknown; ok_1?: unknown; }');
    expectCompiles(`type X = ${type};`);
  });

  it('keeps a description containing */ inside its doc comment', () => {
    const hostile = 'Ends here */ declare const injected: number; /* and\r\nmore */';
    const declaration = toolDeclaration({ address: 'hostile', description: hostile, inputSchema: schemaOf({ q: { type: 'string', description: hostile } }) });
    // One closing `*/` per doc comment (the tool's and the property's), none from the descriptions.
    expect(declaration.split('*/').length - 1).toBe(2);
    expect(declaration).not.toContain('\r');
    expectCompiles(declaration);
    // Had the comment ended early, `injected` would be declared.
    expect(shown(compile(`${declaration}\nconst probe = injected;\n`))).toContain("Cannot find name 'injected'");
  });

  it('cuts property descriptions too long', () => {
    const type = schemaType(schemaOf({ q: { type: 'string', description: 'word '.repeat(2_000) } }));
    expect(type.length).toBeLessThan(1_200);
    expect(type).toContain('...');
  });
});

describe('outputType', () => {
  it('is the text without an outputSchema, the schema type with one', () => {
    expect(outputType(undefined)).toBe('string');
    expect(outputType(true)).toBe('string');
    expect(outputType(schemaOf({ temperature: { type: 'number' } }, ['temperature']), { docs: false })).toBe('{ temperature: number; }');
  });
});

describe('toolAccessor', () => {
  it('uses dots for identifiers and brackets otherwise', () => {
    expect(toolAccessor('files/read_file')).toBe('tools.files.read_file');
    expect(toolAccessor('a-b')).toBe('tools["a-b"]');
    expect(toolAccessor('search')).toBe('tools.search');
    expect(toolAccessor('my-catalog/get.weather')).toBe('tools["my-catalog"]["get.weather"]');
    expect(toolAccessor('x/say "hi"')).toBe('tools.x["say \\"hi\\""]');
  });
});

describe('toolDeclaration', () => {
  const input = schemaOf({ path: { type: 'string', description: 'A file path.' } }, ['path']);

  it('resolves to Promise<string> without an outputSchema', () => {
    const declaration = toolDeclaration({ address: 'files/read_file', description: 'Reads a file.', inputSchema: input });
    expect(declaration).toBe(
      [
        '/**',
        ' * Reads a file.',
        ' *',
        ' * Call: await tools.files.read_file(args) (resolves to the text of its result)',
        ' */',
        'declare function read_file(args: {',
        '  /** A file path. */',
        '  path: string;',
        '}): Promise<string>;',
      ].join('\n'),
    );
    expectCompiles(declaration);
  });

  it('resolves to the output type with an outputSchema', () => {
    const declaration = toolDeclaration({
      address: 'weather',
      description: '',
      inputSchema: input,
      outputSchema: schemaOf({ temperature: { type: 'number' }, unit: { enum: ['c', 'f'] } }, ['temperature', 'unit']),
    });
    expect(declaration).toContain('/** Call: await tools.weather(args) */\n');
    expect(declaration).toMatch(/\): Promise<\{\n {2}temperature: number;\n {2}unit: "c" \| "f";\n\}>;$/);
    expectCompiles(declaration);
  });

  it('gives a valid function name for any tool name', () => {
    const names = ['delete', 'class', 'await', 'yield', 'eval', 'arguments', 'a-b', '2fa', 'get.weather', '', 'ns/default', 'émoji 🌦️'];
    const declarations = names.map((name) => toolDeclaration({ address: name, description: name, inputSchema: null }));
    expect(declaredName(declarations[0]!)).toBe('delete_');
    for (const declaration of declarations) expectCompiles(declaration);
    expectCompiles(declarations.map(inNamespace).join('\n'));
  });

  it('writes Record<string, unknown> for no schema or an empty one', () => {
    for (const inputSchema of [null, undefined, {}, true, 'nonsense', [1, 2]]) {
      expect(toolDeclaration({ address: 'x', description: 'd', inputSchema })).toContain('declare function x(args: Record<string, unknown>): Promise<string>;');
    }
  });
});

describe('toolSignature', () => {
  it('is one line, the accessor and the types', () => {
    const signature = toolSignature({
      address: 'files/read_file',
      description: 'Reads a file.\nSecond line.',
      inputSchema: schemaOf({ path: { type: 'string', description: 'multi\nline' }, options: schemaOf({ encoding: { enum: ['utf8', 'a\nb'] } }) }, ['path']),
    });
    expect(signature).toBe('tools.files.read_file(args: { path: string; options?: Record<string, unknown>; }): Promise<string>');
  });

  it('is cut for a huge schema', () => {
    const properties = Object.fromEntries(Array.from({ length: 2_000 }, (_, i) => [`property_${i}`, { type: 'string', description: 'line one\nline two' }]));
    const signature = toolSignature({ address: 'big', description: 'd', inputSchema: schemaOf(properties), outputSchema: schemaOf(properties) });
    expect(signature).not.toContain('\n');
    expect(signature.length).toBeLessThan(300);
    expect(signature).toMatch(/^tools\.big\(args: \{ property_0\?: string; .*\.\.\.\): Promise<object>$/);
  });
});

describe('hostile schemas', () => {
  /** About 5 MB: thousands of described properties, each 40 objects deep, enums, a long key and a long const. */
  function hugeSchema(): Record<string, unknown> {
    const properties: Record<string, unknown> = {};
    for (let i = 0; i < 3_000; i++) {
      let nested: Record<string, unknown> = { type: 'string', enum: Array.from({ length: 20 }, (_, v) => `value_${i}_${v}`) };
      for (let level = 0; level < 40; level++)
        nested = schemaOf({ [`level_${level}`]: nested, note: { type: 'string', description: 'x'.repeat(20) } }, ['note']);
      properties[`property_${i}`] = { ...nested, description: `Property ${i}. ${'Lorem ipsum dolor sit amet. '.repeat(4)}` };
    }
    properties['k'.repeat(100_000)] = { const: 'c'.repeat(100_000) };
    return schemaOf(properties, Object.keys(properties));
  }

  it('writes a bounded declaration for a 5 MB schema, quickly', () => {
    const schema = hugeSchema();
    expect(JSON.stringify(schema).length).toBeGreaterThan(5_000_000);
    const started = performance.now();
    const tool = { address: 'huge', description: 'A huge schema.', inputSchema: schema, outputSchema: schema };
    const declaration = toolDeclaration(tool);
    const signature = toolSignature(tool);
    const elapsed = performance.now() - started;
    expect(elapsed).toBeLessThan(2_000);
    expect(declaration.length).toBeLessThan(100_000);
    expect(declaration).toContain('[key: string]: unknown;');
    expect(signature).not.toContain('\n');
    expect(signature.length).toBeLessThan(400);
    expectCompiles(declaration);
  });

  it('writes a bounded type for a huge enum, a huge tuple and a long key', () => {
    const values = Array.from({ length: 100_000 }, (_, i) => `value_${i}`);
    expect(schemaType({ enum: values })).toBe('string');
    expect(schemaType({ enum: [...values, 1, null] })).toBe('string | number | null');
    expect(schemaType({ type: 'array', prefixItems: Array.from({ length: 100_000 }, () => ({ type: 'string' })) })).toBe('unknown[]');
    expect(schemaType(schemaOf({ ['k'.repeat(1_000_000)]: { type: 'string' } }))).toBe('{\n  /** More properties, not shown. */\n  [key: string]: unknown;\n}');
    expect(schemaType({ anyOf: Array.from({ length: 100_000 }, (_, i) => ({ const: i })) }).length).toBeLessThanOrEqual(8_000);
  });

  it('survives chains thousands deep (anyOf, allOf, $ref, items) without a stack overflow', () => {
    let anyOf: Record<string, unknown> = { type: 'string' };
    let allOf: Record<string, unknown> = { type: 'string' };
    let items: Record<string, unknown> = { type: 'string' };
    for (let i = 0; i < 10_000; i++) {
      anyOf = { anyOf: [anyOf, { type: 'number' }] };
      allOf = { allOf: [allOf] };
      items = { type: 'array', items };
    }
    const defs = Object.fromEntries(Array.from({ length: 10_000 }, (_, i) => [`d${i}`, { $ref: `#/$defs/d${i + 1}` }]));
    for (const schema of [anyOf, allOf, items, { $defs: defs, $ref: '#/$defs/d0' }]) {
      const declaration = toolDeclaration({ address: 'deep', description: '', inputSchema: schema, outputSchema: schema });
      expect(declaration.length).toBeLessThan(2_000);
      expectCompiles(declaration);
    }
  });

  it('stays small for $refs that fan out exponentially', () => {
    const defs: Record<string, unknown> = { l40: { type: 'string' } };
    for (let i = 0; i < 40; i++)
      defs[`l${i}`] = { anyOf: [{ $ref: `#/$defs/l${i + 1}` }, schemaOf({ a: { $ref: `#/$defs/l${i + 1}` }, b: { $ref: `#/$defs/l${i + 1}` } })] };
    const started = performance.now();
    const type = schemaType({ $defs: defs, $ref: '#/$defs/l0' });
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(type.length).toBeLessThanOrEqual(8_000);
  });
});

describe('declarations of the eval corpora', () => {
  const tools: TypedTool[] = CORPORA.flatMap((corpus) =>
    readFileSync(`${EVAL}${corpus}/catalog.jsonl`, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Line)
      .map((line) => ({ address: `${corpus}/${line.name}`, description: line.description ?? '', inputSchema: line.input_schema ?? null })),
  );
  // The corpora have no output schemas: every other tool takes the next tool's input schema as its output's.
  for (let i = 0; i < tools.length; i += 2) tools[i]!.outputSchema = tools[(i + 1) % tools.length]!.inputSchema ?? undefined;

  it('the compile check catches a broken declaration', () => {
    expect(compile('declare function ok(args: { a: string }): Promise<string>;')).toHaveLength(0);
    const broken = [
      'declare function broken(args: { a: string ): Promise<string>;',
      '/** ends */ early */\ndeclare function early(args: Record<string, unknown>): Promise<string>;',
      'declare function dup(args: { a: string; a: number; }): Promise<string>;',
      'declare function index(args: { a?: string; [key: string]: number; }): Promise<string>;',
      'declare function missing(args: Undeclared): Promise<string>;',
    ];
    for (const declaration of broken) expect(compile(declaration).length, declaration).toBeGreaterThan(0);
    // One broken declaration among good ones, wrapped as the corpus check wraps them.
    const good = tools.slice(0, 50).map(toolDeclaration);
    expect(compile(good.map(inNamespace).join('\n'))).toHaveLength(0);
    expect(compile([...good, broken[0]!].map(inNamespace).join('\n')).length).toBeGreaterThan(0);
    // A declaration a comment swallows declares nothing.
    expect(compile(inNamespace('/** never closed\ndeclare function gone(args: Record<string, unknown>): Promise<string>;', 0)).length).toBeGreaterThan(0);
  });

  it(`compiles, strict, the declaration and signature of every tool (${tools.length})`, () => {
    expect(tools.length).toBeGreaterThan(8_000);
    const started = performance.now();
    const declarations = tools.map(toolDeclaration);
    const signatures = tools.map(toolSignature);
    const generated = performance.now() - started;
    for (const [i, signature] of signatures.entries()) {
      expect(signature, tools[i]!.address).not.toMatch(/[\n\r\u2028\u2029]/);
      expect(signature.startsWith(`${toolAccessor(tools[i]!.address)}(args: `), signature).toBe(true);
    }
    // A signature not cut short is a call signature: `tools.x(args: {...}): Promise<...>` with the accessor dropped declares a function.
    const whole = signatures.flatMap((signature, i) => {
      const rest = signature.slice(toolAccessor(tools[i]!.address).length);
      return /\.\.\.\): Promise</.test(rest) ? [] : [`declare function s${i}${rest};`];
    });
    expect(whole.length).toBeGreaterThan(tools.length * 0.8);
    const text = `${declarations.map(inNamespace).join('\n')}\n${whole.join('\n')}\n`;
    const diagnostics = compile(text);
    const compiled = performance.now() - started - generated;
    expect(diagnostics.length, `diagnostics, the first:\n${shown(diagnostics)}`).toBe(0);
    expect(generated + compiled).toBeLessThan(30_000);
  });
});
