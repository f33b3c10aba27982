import { readFileSync } from 'node:fs';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { parse } from 'yaml';

const specPath = new URL('../../openapi.yaml', import.meta.url);

interface Operation {
  method: string;
  pattern: RegExp;
  path: string;
}

let compiled: { ajv: Ajv2020; spec: any; operations: Operation[]; validators: Map<string, ValidateFunction> } | undefined;

function load() {
  if (compiled) return compiled;
  const spec = parse(readFileSync(specPath, 'utf8'));
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  (addFormats as unknown as (ajv: Ajv2020) => void)(ajv);
  ajv.addSchema({ ...spec, $id: 'openapi' });
  const operations: Operation[] = [];
  for (const [path, item] of Object.entries<any>(spec.paths)) {
    for (const method of ['get', 'put', 'post', 'delete', 'patch']) {
      if (!item[method]) continue;
      const pattern = new RegExp(`^${path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}/?$`);
      operations.push({ method: method.toUpperCase(), pattern, path });
    }
  }
  compiled = { ajv, spec, operations, validators: new Map() };
  return compiled;
}

const pointer = (...parts: string[]) => parts.map((part) => part.replaceAll('~', '~0').replaceAll('/', '~1')).join('/');

/**
 * Checks a real response against openapi.yaml: the status must be documented for the operation and
 * a JSON body must match its schema. Throws with what differs, so a handler that drifts from the
 * spec fails the test that exercised it. Paths the spec does not describe are not checked.
 */
export function assertMatchesSpec(method: string, url: string, status: number, body: unknown): void {
  const { ajv, spec, operations, validators } = load();
  const path = new URL(url, 'http://x').pathname;
  const operation = operations.find((op) => op.method === method.toUpperCase() && op.pattern.test(path));
  if (!operation) return;
  const responses = spec.paths[operation.path][operation.method.toLowerCase()].responses;
  let response = responses[String(status)];
  if (!response) {
    throw new Error(`openapi.yaml documents no ${status} for ${operation.method} ${operation.path} (body: ${JSON.stringify(body)?.slice(0, 300)})`);
  }
  let responsePointer = `#/${pointer('paths', operation.path, operation.method.toLowerCase(), 'responses', String(status))}`;
  if (response.$ref) {
    responsePointer = response.$ref;
    response = response.$ref
      .split('/')
      .slice(1)
      .reduce((node: any, key: string) => node[key], spec);
  }
  const media = response.content?.['application/json'];
  if (!media) {
    if (body !== undefined && status !== 204) throw new Error(`${operation.method} ${operation.path} ${status}: body not documented`);
    return;
  }
  const schemaPointer = `openapi${responsePointer}/content/application~1json/schema`;
  let validate = validators.get(schemaPointer);
  if (!validate) {
    validate = ajv.compile({ $ref: schemaPointer });
    validators.set(schemaPointer, validate);
  }
  if (!validate(body)) {
    throw new Error(
      `${operation.method} ${path} ${status} does not match openapi.yaml: ${ajv.errorsText(validate.errors)}\nbody: ${JSON.stringify(body)?.slice(0, 500)}`,
    );
  }
}
