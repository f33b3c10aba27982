/**
 * A proxied call's arguments checked against the tool's input schema before anything is sent
 * upstream (issue 70): a string for an integer, a 6-character string where maxLength is 5, or a
 * field the schema does not declare is the agent's mistake to hear about, not the upstream's to
 * absorb. Ajv compiles each schema once (by content hash) for the draft it declares (2020-12,
 * 2019-09, else draft-07, which reads draft-04/06 schemas the way MCP servers write them).
 *
 * The schemas come from upstream servers, so they are hostile input: `pattern` runs on RE2 (re2js,
 * linear time) so a crafted pattern cannot hold the event loop, remote `$ref`s are never fetched
 * (Ajv resolves only what is inside the schema), and a schema Ajv cannot compile is not checked at
 * all (the upstream still validates its own input) rather than blocking the tool.
 */
import { Ajv, type ValidateFunction } from 'ajv';
import { Ajv2019 } from 'ajv/dist/2019.js';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { RE2JS } from 're2js';
import { LruCache } from '../lib/lru-cache.js';

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

/** Ajv's RegExpEngine over RE2: `new RegExp`'s backtracking is what makes a pattern a weapon. */
const re2 = Object.assign(
  (pattern: string, flags: string) => {
    const compiled = RE2JS.compile(RE2JS.translateRegExp(pattern), flags.includes('i') ? RE2JS.CASE_INSENSITIVE : 0);
    return { test: (input: string) => compiled.test(input) };
  },
  { code: 're2' },
);

const options = { strict: false, allErrors: false, validateSchema: false, code: { regExp: re2 }, loadSchema: undefined } as const;

function withFormats<T extends Ajv>(ajv: T): T {
  addFormats(ajv);
  return ajv;
}

/** One instance per draft, built on first use: each holds its compiled validators' shared code. */
let drafts: { draft07: Ajv; draft2019: Ajv; draft2020: Ajv } | undefined;
const ajvs = () =>
  (drafts ??= { draft07: withFormats(new Ajv(options)), draft2019: withFormats(new Ajv2019(options)), draft2020: withFormats(new Ajv2020(options)) });

function ajvFor(schema: Record<string, unknown>): { ajv: Ajv; schema: Record<string, unknown> } {
  const declared = typeof schema.$schema === 'string' ? schema.$schema : '';
  if (declared.includes('2020-12')) return { ajv: ajvs().draft2020, schema };
  if (declared.includes('2019-09')) return { ajv: ajvs().draft2019, schema };
  // draft-04/06/07 or none: draft-07 reads them; an unknown $schema would make Ajv look it up.
  const { $schema: _declared, ...rest } = schema;
  return { ajv: ajvs().draft07, schema: rest };
}

/** A compiled check, or null when the schema could not be compiled (then arguments pass unchecked). */
type Check = ValidateFunction | null;

/** Compiled validators by the tool's content hash: a catalog's tools are called again and again. */
export type ArgumentChecks = LruCache<string, { check: Check }>;

const CHECKS_MAX = 2_000;

export const argumentChecks = (): ArgumentChecks => new LruCache(CHECKS_MAX);

export type ArgumentsVerdict = { ok: true } | { ok: false; message: string } | { ok: true; unchecked: string };

function compile(schema: Record<string, unknown>): { check: Check; reason?: string } {
  try {
    const { ajv, schema: readable } = ajvFor(schema);
    return { check: ajv.compile(readable) };
  } catch (error) {
    return { check: null, reason: (error as Error).message.slice(0, 200) };
  }
}

/** Whether a schema lets an object carry properties it does not list (absent keywords: yes in JSON Schema). */
function declaresOpenProperties(schema: Record<string, unknown>): boolean {
  return (
    !('properties' in schema) ||
    typeof schema.properties !== 'object' ||
    schema.additionalProperties === true ||
    (typeof schema.additionalProperties === 'object' && schema.additionalProperties !== null) ||
    'patternProperties' in schema ||
    'unevaluatedProperties' in schema ||
    ['allOf', 'anyOf', 'oneOf', 'if', '$ref'].some((key) => key in schema)
  );
}

/**
 * Checks `args` against `schema` (null: no schema, nothing to check). Besides the schema, a
 * top-level field the schema's `properties` do not name is refused when the schema says nothing of
 * other properties: a model's misspelt argument would otherwise be dropped by the upstream in silence.
 */
export function checkArguments(checks: ArgumentChecks, key: string, schema: Record<string, unknown> | null, args: Record<string, unknown>): ArgumentsVerdict {
  if (schema === null || typeof schema !== 'object') return { ok: true };
  let entry = checks.get(key);
  let reason: string | undefined;
  if (!entry) {
    const compiled = compile(schema);
    entry = { check: compiled.check };
    reason = compiled.reason;
    checks.set(key, entry);
  }
  if (!entry.check) return { ok: true, unchecked: reason ?? 'the input schema could not be compiled' };
  if (!declaresOpenProperties(schema) && schema.additionalProperties === undefined) {
    const known = new Set(Object.keys(schema.properties as Record<string, unknown>));
    const extra = Object.keys(args).filter((name) => !known.has(name));
    if (extra.length > 0) {
      return {
        ok: false,
        message: `arguments: unknown field${extra.length > 1 ? 's' : ''} ${extra.map((name) => JSON.stringify(name)).join(', ')} (the tool takes ${[...known].map((name) => JSON.stringify(name)).join(', ') || 'no arguments'})`,
      };
    }
  }
  if (entry.check(args)) return { ok: true };
  const error = entry.check.errors?.[0];
  if (!error) return { ok: false, message: 'arguments do not match the input schema' };
  const path = `arguments${error.instancePath.replace(/\//g, '.').replace(/~1/g, '/').replace(/~0/g, '~')}`;
  const detail =
    error.keyword === 'additionalProperties'
      ? `unknown field ${JSON.stringify((error.params as { additionalProperty: string }).additionalProperty)}`
      : error.keyword === 'required'
        ? `missing required field ${JSON.stringify((error.params as { missingProperty: string }).missingProperty)}`
        : (error.message ?? 'does not match the input schema');
  return { ok: false, message: `${path}: ${detail}` };
}
