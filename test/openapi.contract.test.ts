/**
 * The OpenAPI document promises no more than the server keeps, and no less: for every operation
 * with a JSON request body, a valid body (one per operation, below) is valid by the document
 * and not refused as invalid_input; then each string in it is replaced with values around the
 * rules (empty, blank, padded, a control character, its documented maxLength and one more,
 * 10,001 characters, each other value its enum allows) and the server's verdict must be the document's. Every query,
 * path and header parameter of every operation is tried the same way, one at a time, and a query
 * parameter the operation does not list must be refused. The document is checked with a real
 * JSON Schema 2020-12 validator (Ajv), never with the zod schemas it came from. It is the
 * document each server serves, on a server with the default [work] limits and on one with
 * tighter ones: a server's document states its own limits, and no refusal of them is excused.
 */
/* eslint-disable @typescript-eslint/no-unsafe-member-access -- the document and reply bodies are parsed JSON */
import { mkdtempSync, rmSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseReply, startHarness, type HttpHarness, type Reply } from './helpers/http.ts';
import { backends, type Backend } from './helpers/stores.ts';
import { defaultWorkConfig, type WorkConfig } from '../src/core/work/config.ts';
import { contractBounds } from '../src/core/work/model.ts';
import { openApiDocument } from '../src/http/openapi.ts';
import { contractBody } from './helpers/work-surface.ts';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Schema = Record<string, unknown>;
type Validate = ((data: unknown) => boolean) & { errors?: unknown };

/**
 * A JSON Schema 2020-12 validator (Ajv 8), formats not checked: the document's shape is the point.
 * It also reads the document's one keyword of its own, `x-baton-unique-by`: no two entries of
 * the array have the same value under that key.
 */
function jsonSchemaValidator(): { compile(schema: Schema): Validate } {
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
  ajv.addKeyword({
    keyword: 'x-baton-unique-by',
    type: 'array',
    schemaType: 'string',
    validate: (key: string, entries: unknown[]) => {
      const named = entries.map((entry) => (entry as Record<string, unknown> | null)?.[key]);
      return new Set(named.map((name) => JSON.stringify(name))).size === named.length;
    },
  });
  return ajv;
}

interface Probe {
  readonly operation: string;
  readonly path: string;
  readonly body: Json;
  /** The server's answer to the body as it is: 200. */
  readonly reply: Reply;
}

interface Verdict {
  readonly operation: string;
  readonly field: string;
  readonly value: string;
  readonly server: string;
  readonly document: 'valid' | 'invalid';
}

/** Every string leaf of a body, by its path of keys and indexes. */
function stringLeaves(value: Json, path: (string | number)[] = []): (string | number)[][] {
  if (typeof value === 'string') return [path];
  if (Array.isArray(value)) return value.flatMap((item, index) => stringLeaves(item, [...path, index]));
  if (value !== null && typeof value === 'object')
    return Object.entries(value).flatMap(([key, child]) => stringLeaves(child, [...path, key]));
  return [];
}

function leafAt(body: Json, path: readonly (string | number)[]): string {
  return path.reduce<Json>((value, key) => (value as Record<string, Json>)[key]!, body) as string;
}

function withLeaf(body: Json, path: readonly (string | number)[], leaf: string): Json {
  const copy = structuredClone(body);
  let parent = copy as Record<string | number, Json>;
  for (const key of path.slice(0, -1)) parent = parent[key] as Record<string | number, Json>;
  parent[path.at(-1)!] = leaf;
  return copy;
}

/** What the document states of a string at this path, in any branch that names it. */
interface StringRules {
  readonly maxLengths: number[];
  /** The values an enum or a const allows there. */
  readonly values: string[];
}

/** The schema of an array's items (a number key) or of an object's property (a string key). */
function childSchema(schema: Schema, key: string | number): Schema | undefined {
  if (typeof key === 'number') return schema.items as Schema | undefined;
  return (
    (schema.properties as Record<string, Schema> | undefined)?.[key] ??
    (typeof schema.additionalProperties === 'object' ? (schema.additionalProperties as Schema) : undefined)
  );
}

function stringRules(schema: Schema | undefined, path: readonly (string | number)[]): StringRules {
  if (schema === undefined) return { maxLengths: [], values: [] };
  const branches = [
    ...((schema.anyOf ?? []) as Schema[]),
    ...((schema.oneOf ?? []) as Schema[]),
    ...((schema.allOf ?? []) as Schema[]),
  ].map((branch) => stringRules(branch, path));
  const [key, ...rest] = path;
  let own: StringRules;
  if (key === undefined) {
    own = {
      maxLengths: typeof schema.maxLength === 'number' ? [schema.maxLength] : [],
      values: [
        ...((schema.enum ?? []) as unknown[]),
        ...(typeof schema.const === 'string' ? [schema.const] : []),
      ].filter((value): value is string => typeof value === 'string'),
    };
  } else {
    own = stringRules(childSchema(schema, key), rest);
  }
  return {
    maxLengths: [...own.maxLengths, ...branches.flatMap((branch) => branch.maxLengths)],
    values: [...own.values, ...branches.flatMap((branch) => branch.values)],
  };
}

interface Trial {
  readonly value: string;
  /**
   * A value at the documented maxLength: valid by the document, yet it may name nothing that
   * exists (an id padded to its longest cites another scope, or a missing source). Such a
   * refusal is relational, which no schema states; it counts only when the server names the
   * field itself as the issue.
   */
  readonly atLimit: boolean;
}

/** The values tried in place of a string: around every rule the server could hold it to. */
function trialsFor(value: string, { maxLengths: limits, values }: StringRules): Trial[] {
  const trials = new Map<string, boolean>();
  for (const probe of [
    '',
    ' ',
    '   ',
    '\t\n',
    ` ${value}`,
    `${value} `,
    `${value}\u0000`,
    `${value}\u0007x`,
    `${value}\u007f`,
    'a\u0001b',
    '/\u0001',
    'x'.repeat(10_001),
    ...limits.map((limit) => value.padEnd(limit + 1, 'x')),
    // Another value an enum allows: the document's if/then rules must follow it.
    ...values,
  ])
    trials.set(probe, false);
  for (const limit of limits) trials.set(value.padEnd(limit, 'x'), true);
  trials.delete(value);
  return [...trials].map(([probe, atLimit]) => ({ value: probe, atLimit }));
}

/**
 * Refusals of a relation, which no request schema can state: a contract's to itself (an unknown
 * criterion or dependency) or to its session (a capability it lacks, a path outside its
 * workspace), and a position's to its stream (past the head, or before what a revision cites).
 */
const relationalRules = new Set([
  'unknown_criterion',
  'unknown_dependency',
  'capability_escalation',
  'path_outside_workspace',
  'past_head',
  'uncited_position',
  // A required item with no required criterion: a relation between an item and the criteria.
  'missing_required_criteria',
]);

interface Refusal {
  readonly verdict: string;
  readonly invalidInput: boolean;
  /** The refusal is about a relation, not about the value the field holds. */
  readonly relational: boolean;
}

function refusalOf(reply: Reply, field: string, trial: Trial): Refusal {
  const error = reply.body?.error as
    { code: string; message: string; details: { rule?: string; issues?: { path: string }[] } } | undefined;
  if (error === undefined) return { verdict: String(reply.status), invalidInput: false, relational: false };
  const namesField = (error.details.issues ?? []).some((issue) => issue.path === field);
  return {
    verdict: `${reply.status} ${error.code}: ${error.message.slice(0, 100)}`,
    // A refusal of the input: 400 or 422 invalid_input (408, a request that did not arrive whole, is not one).
    invalidInput: error.code === 'invalid_input' && (reply.status === 400 || reply.status === 422),
    relational: relationalRules.has(error.details.rule ?? '') || (trial.atLimit && !namesField),
  };
}

interface Parameter {
  readonly name: string;
  readonly in: 'query' | 'path' | 'header';
  readonly required: boolean;
  readonly schema: Schema;
}

interface DocumentedOperation {
  readonly operationId: string;
  readonly method: string;
  /** The document's path: `/v1/sessions/{session_id}/work`. */
  readonly template: string;
  readonly parameters: readonly Parameter[];
  /** A parameter that needs others with it (`through` needs `scope_id`), as the document states it. */
  readonly dependentRequired: Readonly<Record<string, readonly string[]>>;
  /** The valid body of its probe, when it takes one. */
  readonly body: Json | undefined;
}

interface ParameterVerdict {
  readonly operation: string;
  readonly parameter: string;
  /** The values sent: none (left out), one, or the parameter repeated. */
  readonly values: readonly string[];
  readonly server: string;
  readonly document: 'valid' | 'invalid';
}

/**
 * A value of each parameter name that names what the probes made (scope alpha, its first
 * revision, session s1 and its item code): the request every trial varies one parameter of.
 */
const parameterSamples: Readonly<Record<string, string>> = {
  scope_id: 'alpha',
  through: '1',
  position: '4',
  format: 'json',
  session_id: 's1',
  item_id: 'code',
  after: '0',
};

/** A query parameter no operation takes. */
const unlistedParameter = 'not_a_parameter';

/**
 * The values every parameter is sent: the sample of each one, except a header's (Last-Event-ID
 * wins over ?after, so it is sent only when it is the parameter tried).
 */
function baseValues(operation: DocumentedOperation): Record<string, readonly string[]> {
  const base: Record<string, readonly string[]> = {};
  for (const parameter of operation.parameters) {
    const sample = parameterSamples[parameter.name];
    if (sample === undefined && parameter.required)
      throw new Error(`${operation.operationId}: give parameter ${parameter.name} a sample`);
    if (sample !== undefined && parameter.in !== 'header') base[parameter.name] = [sample];
  }
  return base;
}

/** Every byte but a letter, a digit, `_` and `-` percent-encoded: a dot segment stays a value. */
function encodeAll(value: string): string {
  return [...new TextEncoder().encode(value)]
    .map((byte) =>
      /[A-Za-z0-9_-]/.test(String.fromCharCode(byte))
        ? String.fromCharCode(byte)
        : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`,
    )
    .join('');
}

/** The URL and headers of a call with these parameter values: path, query (repeated as given) or header. */
function requestOf(
  operation: DocumentedOperation,
  values: Readonly<Record<string, readonly string[]>>,
): { url: string; headers: Record<string, string> } {
  const where = (name: string) => operation.parameters.find((parameter) => parameter.name === name)?.in;
  const path = operation.template.replace(/\{([a-z_]+)\}/g, (_match, name: string) =>
    encodeAll(values[name]?.[0] ?? ''),
  );
  const query: string[] = [];
  const headers: Record<string, string> = {};
  for (const [name, given] of Object.entries(values)) {
    const place = where(name) ?? 'query';
    if (place === 'header' && given[0] !== undefined) headers[name] = given[0];
    if (place === 'query') query.push(...given.map((value) => `${encodeAll(name)}=${encodeAll(value)}`));
  }
  return { url: query.length === 0 ? path : `${path}?${query.join('&')}`, headers };
}

/**
 * The values a parameter is tried with, around every rule the server could hold it to: left out,
 * empty, blank, padded, control characters, not a number, negative, fractional, past a whole
 * number's bounds, its documented lengths and one past them, each value its enum allows and one
 * it does not, and (in a query) the parameter repeated.
 */
function parameterTrials(parameter: Parameter, sample: readonly string[]): (readonly string[])[] {
  const value = sample[0] ?? parameterSamples[parameter.name] ?? 'x';
  const schemas = schemasAt(parameter.schema, []);
  const lengths = schemas.flatMap((schema) =>
    [schema.minLength, schema.maxLength].filter((limit): limit is number => typeof limit === 'number'),
  );
  const allowed = schemas.flatMap((schema) => [
    ...((schema.enum ?? []) as unknown[]).filter((entry): entry is string => typeof entry === 'string'),
  ]);
  const values = new Set([
    '',
    ' ',
    ` ${value}`,
    `${value} `,
    `${value}\u0001`,
    `${value}\u007f`,
    'é',
    '.',
    '..',
    'a/b',
    '0',
    '-1',
    '1.5',
    '1e3',
    '007',
    'abc',
    'true',
    'null',
    '999999999999999',
    '1000000000000000',
    '9007199254740991',
    '9007199254740992',
    '1'.repeat(25),
    'x'.repeat(10_001),
    ...lengths.flatMap((limit) => [value.padEnd(limit, 'x').slice(0, limit), value.padEnd(limit + 1, 'x')]),
    ...lengths.filter((limit) => limit > 0).map((limit) => value.padEnd(limit - 1, 'x').slice(0, limit - 1)),
    ...allowed,
    ...(allowed.length > 0 ? ['other'] : []),
  ]);
  values.delete(value);
  const trials: (readonly string[])[] = [...values].map((entry) => [entry]);
  if (parameter.in !== 'path') trials.push([]);
  if (parameter.in === 'query') trials.push([value, value]);
  return trials;
}

/**
 * Whether the document takes these values of a parameter. A query or path carries text: a value
 * written as a whole number or a boolean also counts as that number or boolean, as a client
 * serializing the document's integer writes it (`3`, never `3.0` or `3e0`).
 */
function parameterValid(validate: Validate, values: readonly string[]): boolean {
  const readings = (value: string): unknown[] => [
    value,
    ...(/^(0|-?[1-9]\d*)$/.test(value) ? [Number(value)] : []),
    ...(value === 'true' || value === 'false' ? [value === 'true'] : []),
  ];
  if (values.length === 1) return readings(values[0]!).some((reading) => validate(reading));
  return validate(values) || validate(values.map((value) => readings(value).at(-1)));
}

/**
 * What the server made of a parameter. Refused: 400 or 422 invalid_input, unless it is about a
 * relation (details.rule below: a position past the head); or 404 with no route, when a path
 * parameter took the URL elsewhere (an empty or dot segment). Accepted by validation: anything
 * else, including 404 not_found for an object that does not exist, 409 and 412.
 */
function parameterRefusal(reply: Reply): { refused: boolean; verdict: string } {
  const error = reply.body?.error as
    { code: string; message: string; details: { rule?: string } } | undefined;
  if (error === undefined) return { refused: false, verdict: String(reply.status) };
  const verdict = `${reply.status} ${error.code}: ${error.message.slice(0, 100)}`;
  const invalid =
    error.code === 'invalid_input' &&
    (reply.status === 400 || reply.status === 422) &&
    !relationalRules.has(error.details.rule ?? '');
  const noRoute = reply.status === 404 && error.message.startsWith('no route ');
  return { refused: invalid || noRoute, verdict };
}

/** Every subschema the document states at this path of keys and indexes, through its combinators. */
function schemasAt(schema: Schema | undefined, path: readonly (string | number)[]): Schema[] {
  if (schema === undefined) return [];
  const branches = ['anyOf', 'oneOf', 'allOf']
    .flatMap((keyword) => (schema[keyword] ?? []) as Schema[])
    .concat(['then', 'else'].flatMap((keyword) => (schema[keyword] ? [schema[keyword] as Schema] : [])))
    .flatMap((branch) => schemasAt(branch, path));
  const [key, ...rest] = path;
  if (key === undefined) return [schema, ...branches];
  return [...schemasAt(childSchema(schema, key), rest), ...branches];
}

/** A body with one change: a value put at a path, or the key there removed. */
interface BodyTrial {
  readonly field: string;
  /** What was done, for the report: the value put there, or "left out". */
  readonly change: string;
  readonly body: Json;
}

const leftOut = Symbol('left out');

function withNode(body: Json, path: readonly (string | number)[], value: Json | typeof leftOut): Json {
  if (path.length === 0) return value === leftOut ? {} : value;
  const copy = structuredClone(body);
  let parent = copy as Record<string | number, Json>;
  for (const key of path.slice(0, -1)) parent = parent[key] as Record<string | number, Json>;
  const last = path.at(-1)!;
  if (value === leftOut) {
    if (Array.isArray(parent)) parent.splice(last as number, 1);
    else delete parent[last];
  } else parent[last] = value;
  return copy;
}

/** Every node of a body but the strings' own text, by its path of keys and indexes. */
function nodesOf(value: Json, path: (string | number)[] = []): { path: (string | number)[]; value: Json }[] {
  const here = { path, value };
  if (Array.isArray(value)) return [here, ...value.flatMap((item, index) => nodesOf(item, [...path, index]))];
  if (value !== null && typeof value === 'object')
    return [here, ...Object.entries(value).flatMap(([key, child]) => nodesOf(child, [...path, key]))];
  return [here];
}

function numbersIn(schemas: readonly Schema[], keyword: string): number[] {
  return schemas.flatMap((schema) => (typeof schema[keyword] === 'number' ? [schema[keyword]] : []));
}

/**
 * The values tried in place of a node that is not a string's text, around every rule the server
 * could hold it to: null; for a number, negative, zero, fractional, huge, its documented bounds
 * and one past them, and its digits as a string; for a boolean, the other one and look-alikes;
 * for an array, empty, a duplicate item, its documented item counts and one past them, and items
 * of another type; for an object, an unknown key, each documented key it leaves out as null, and
 * each key it has left out; and a value of another type.
 */
function shapeTrials(
  body: Json,
  path: readonly (string | number)[],
  value: Json,
  schemas: Schema[],
): BodyTrial[] {
  const field = path.join('.');
  const values: Json[] = [null];
  if (typeof value === 'number') {
    const minimum = [...numbersIn(schemas, 'minimum'), ...numbersIn(schemas, 'exclusiveMinimum')];
    const maximum = [...numbersIn(schemas, 'maximum'), ...numbersIn(schemas, 'exclusiveMaximum')];
    values.push(-1, 0, 1, 0.5, value + 0.5, 1e15, 2 ** 53, 1e300, String(value), true);
    values.push(
      ...minimum.flatMap((bound) => [bound - 1, bound]),
      ...maximum.flatMap((bound) => [bound, bound + 1]),
    );
  } else if (typeof value === 'boolean') {
    values.push(!value, String(value), value ? 1 : 0);
  } else if (Array.isArray(value)) {
    const first = value[0];
    values.push([], [null], [0], [true], [{}], [[]], 'x', {});
    if (first !== undefined) {
      values.push([...value, first]);
      // Entries no two of which may share a key are copied under new names, so a count is all they try.
      const key = schemas.map((schema) => schema['x-baton-unique-by']).find((by) => typeof by === 'string');
      const entry = (index: number): Json => {
        const copied = value[index % value.length]!;
        if (key === undefined || index < value.length || copied === null || typeof copied !== 'object')
          return copied;
        const named = copied as Record<string, Json>;
        return { ...named, [key]: `${named[key] as string}-${index}` };
      };
      for (const count of [...numbersIn(schemas, 'maxItems'), ...numbersIn(schemas, 'minItems')]) {
        for (const wanted of [count - 1, count, count + 1].filter(
          (wanted) => wanted >= 0 && wanted !== value.length,
        ))
          values.push(Array.from({ length: wanted }, (_item, index) => entry(index)));
      }
    }
  } else if (value !== null && typeof value === 'object') {
    values.push([], 'x', 0, { ...value, not_a_field: 'x' });
    const documented = new Set(
      schemas.flatMap((schema) => Object.keys((schema.properties ?? {}) as Record<string, Schema>)),
    );
    for (const key of documented) if (!Object.hasOwn(value, key)) values.push({ ...value, [key]: null });
  } else if (typeof value === 'string') {
    values.push(0, true, [value], {});
  }
  const trials = values
    .filter((trial) => JSON.stringify(trial) !== JSON.stringify(value))
    .map((trial) => ({ field, change: JSON.stringify(trial), body: withNode(body, path, trial) }));
  if (path.length > 0) trials.push({ field, change: 'left out', body: withNode(body, path, leftOut) });
  return trials;
}

/**
 * The servers the document is checked on: one with the default `[work]` configuration, one
 * whose limits the probes' contract just fits (two items, a revise to revision 2), and, when
 * BATON_TEST_POSTGRES_URL is set, one on PostgreSQL.
 */
const sqlite = backends.find((candidate) => candidate.name === 'sqlite')!;
const postgres = backends.find((candidate) => candidate.name === 'postgres');
const servers: readonly { readonly name: string; readonly backend: Backend; readonly work: WorkConfig }[] = [
  { name: 'default [work] limits, SQLite', backend: sqlite, work: defaultWorkConfig },
  {
    name: '[work] max_items = 3, max_revisions = 2, SQLite',
    backend: sqlite,
    work: { ...defaultWorkConfig, max_items: 3, max_revisions: 2 },
  },
  // Where a store keeps less than the schemas let through (PostgreSQL's text holds no NUL).
  ...(postgres
    ? [{ name: 'default [work] limits, PostgreSQL', backend: postgres, work: defaultWorkConfig }]
    : []),
];

it('a document for no server in particular states the bounds no configuration passes, and the configured ones in words', () => {
  const paths = openApiDocument().paths as Record<string, Record<string, Schema>>;
  const properties = (path: string) =>
    ((paths[path]!.post!.requestBody as Schema).content as Record<string, { schema: Schema }>)[
      'application/json'
    ]!.schema.properties as Record<string, Schema>;
  const revise = properties('/v1/sessions/{session_id}/work/revise');
  for (const items of [properties('/v1/sessions/{session_id}/work/contracts').items!, revise.items!]) {
    expect(items.maxItems).toBe(contractBounds.items);
    expect(items.description).toContain(`[work] max_items (${defaultWorkConfig.max_items} unless configured`);
  }
  expect(revise.previous_revision!.maximum).toBe(contractBounds.revisions - 1);
  expect(revise.previous_revision!.description).toContain(
    `[work] max_revisions (${defaultWorkConfig.max_revisions} unless configured`,
  );
});

describe.each(servers)(
  'the OpenAPI document states what the server enforces ($name)',
  ({ backend, work }) => {
    let h: HttpHarness;
    let workspace: string;
    let document: Schema;
    let probes: Probe[];
    const ajv = jsonSchemaValidator();

    beforeAll(async () => {
      workspace = mkdtempSync(join(tmpdir(), 'baton-contract-'));
      h = await startHarness(backend, { workspaceRoots: [workspace], work });
      document = (await h.call('GET', '/v1/openapi.json', { token: null })).body as Schema;
      probes = await validBodies();
    });
    afterAll(async () => {
      await h.dispose();
      rmSync(workspace, { recursive: true, force: true });
    });

    /** The request schema of the operation at this path, and its operationId. */
    function requestSchema(path: string): { operationId: string; schema: Schema } {
      const template = path.replace(
        /^\/v1\/sessions\/[^/]+\/work\/items\/[^/]+\//,
        '/v1/sessions/{session_id}/work/items/{item_id}/',
      );
      const generic =
        template === path
          ? path
              .replace(/^\/v1\/sessions\/(?!work\/)[^/]+\/work/, '/v1/sessions/{session_id}/work')
              .replace(/^\/v1\/sessions\/(?!work\/)[^/]+\/end$/, '/v1/sessions/{session_id}/end')
          : template;
      const paths = document.paths as Record<string, Record<string, Schema>>;
      const post = paths[generic]?.post;
      if (post === undefined) throw new Error(`the document has no POST ${generic}`);
      const content = (post.requestBody as Schema).content as Record<string, { schema: Schema }>;
      return { operationId: post.operationId as string, schema: content['application/json']!.schema };
    }

    /**
     * A valid body for every operation with a JSON body, in an order that makes each valid: a
     * function runs after the calls before it, with their answers.
     */
    async function validBodies(): Promise<Probe[]> {
      const scope_id = 'alpha';
      const probes: Probe[] = [];
      const run = async (path: string, body: Json): Promise<Reply> => {
        const { operationId } = requestSchema(path);
        const reply = await h.call('POST', path, { body });
        probes.push({ operation: operationId, path, body, reply });
        if (reply.status !== 200) throw new Error(`${operationId} answered ${reply.status}: ${reply.text}`);
        return reply;
      };
      const note = await run('/v1/work/sources/capture', {
        scope_id,
        source_id: 'note-1',
        kind: 'note',
        content: { text: 'the login form drops the session' },
        metadata: { origin: 'chat' },
      });
      const ref = note.body.source_ref as Json;
      await h.call('POST', '/v1/work/sources/capture', {
        body: { scope_id, source_id: 'gone', content: 'x' },
      });
      await run('/v1/work/sources/retract', { scope_id, source_id: 'gone', reason: 'it held a secret' });
      const attribution = { agent: 'claude', session: 'sess-1', human: 'ada' };
      await run('/v1/work/contracts/create', {
        scope_id,
        source_id: 'contract-1',
        objective: 'Fix the login form',
        facts: [{ text: 'the form posts twice', basis: 'verified', evidence: [ref] }],
        in_scope: ['the form'],
        exclusions: ['the database'],
        completion_criteria: ['the login tests pass'],
        authorization_notes: ['may edit src/'],
        open_questions: ['which browser?'],
        attribution,
      });
      const prepared = await run('/v1/work/handoffs/prepare-current', {
        scope_id,
        source_id: 'boundary-1',
        objective: 'Fix the login form',
        current_state: [{ text: 'the fix is half done', basis: 'declared' }],
        disposition: 'blocked',
        next_action: { text: 'ask about the browser', basis: 'declared' },
        omissions: ['the CSS'],
        blocked: { question: 'which browser?', options: ['firefox', 'chrome'], impact: 'the tests to run' },
        attribution,
      });
      const prepared_digest = prepared.body.digest as string;
      await run('/v1/work/handoffs/commit', { scope_id, prepared: prepared_digest, expected_head: 0 });
      await run('/v1/work/handoffs/continue', { scope_id, selection: { prepared: prepared_digest } });
      await run('/v1/work/handoffs/acknowledge', {
        scope_id,
        source_id: 'receipt-1',
        target: { exact: 1 },
        status: 'needs_clarification',
        receiver_checks: {
          live_workspace: 'confirmed',
          capability: 'confirmed',
          authorization: 'not_confirmed',
        },
        reason: 'who may deploy?',
        receiver: 'bob',
      });
      const receipt = await h.call('POST', '/v1/work/handoffs/acknowledge', {
        body: {
          scope_id,
          source_id: 'receipt-2',
          target: { exact: 1 },
          status: 'accepted',
          receiver_checks: {
            live_workspace: 'confirmed',
            capability: 'confirmed',
            authorization: 'confirmed',
          },
        },
      });
      const outcome = await run('/v1/work/outcomes/record', {
        scope_id,
        source_id: 'outcome-1',
        objective: 'Fix the login form',
        status: 'partial',
        summary: 'the form posts once now',
        handoff_receipt_ref: receipt.body.receipt.source_ref as Json,
        observations: [{ text: 'the tests pass locally', basis: 'declared' }],
        checks: [{ name: 'unit tests', status: 'passed', basis: 'verified', evidence: [ref] }],
        produced_artifacts: [ref],
        remaining_work: ['deploy'],
        attribution,
      });
      await run('/v1/work/experience/review', {
        scope_id,
        candidate: outcome.body.receipt.source_ref as Json,
        decision: 'approved',
        note: 'a good lesson',
        reviewer: 'ada',
      });
      await run('/v1/work/context/prepare', { scope_id });

      // A child holds no more than its parent: p0 holds what s1 asks for.
      const capabilities = { write: true, tools: ['lint'], flows: ['deploy'], capabilities: ['net'] };
      await h.call('POST', '/v1/sessions', { body: { session_id: 'p0', capabilities } });
      // And the contract and item the child's lineage names.
      await h.call('POST', '/v1/sessions/p0/work/contracts', { body: contractBody });
      await run('/v1/sessions', {
        session_id: 's1',
        parent_session_id: 'p0',
        contract_id: 'c1',
        work_item_id: 'code',
        work_mode: 'managed',
        workspace,
        capabilities,
      });
      const s = '/v1/sessions/s1/work';
      // The work surface's own criteria: a shell one and an optional semantic one.
      const criteria = contractBody.criteria as Json;
      const items: Json = [
        {
          item_id: 'code',
          title: 'Change the form',
          instructions: 'keep it small',
          criterion_ids: ['tests', 'style'],
          path_claims: ['src'],
          capabilities: ['net'],
        },
        { item_id: 'docs', title: 'Document the change', required: false, dependencies: ['code'] },
      ];
      await run(`${s}/contracts`, {
        contract_id: 'c1',
        objective: 'Fix the login form',
        constraints: [{ constraint_id: 'no-db', text: 'no schema change' }],
        assumptions: [{ assumption_id: 'db', text: 'staging database', requires_confirmation: true }],
        criteria,
        items,
        source_entry_id: 'entry-1',
      });
      await run(`${s}/confirm`, {
        contract_id: 'c1',
        revision: 1,
        resolutions: [{ assumption_id: 'db', resolution: 'staging' }],
      });
      await run(`${s}/revise`, {
        contract_id: 'c1',
        previous_revision: 1,
        objective: 'Fix the login form and its message',
        criteria,
        items,
        source_entry_id: 'entry-2',
        reason: 'the message is part of it',
      });
      await run(`${s}/items/docs/transition`, {
        contract_id: 'c1',
        revision: 2,
        to: 'skipped',
        reason: 'starting',
        operation_id: 'op-1',
      });
      await run(`${s}/items/code/evidence`, {
        contract_id: 'c1',
        revision: 2,
        evidence: { type: 'ledger_entry', session_id: 's1', entry_id: 'e-1' },
        operation_id: 'op-2',
      });
      await run(`${s}/items/code/reassign`, {
        contract_id: 'c1',
        owner: { type: 'human' },
        child_session_id: 'p0',
      });
      await run(`${s}/reconcile`, {});
      await run(`${s}/items/code/cancel`, { contract_id: 'c1', reason: 'not needed' });
      await run(`${s}/items/code/retry`, { contract_id: 'c1', reason: 'needed after all' });
      await run(`${s}/items/cancel`, { contract_id: 'c1', item_ids: ['code'], reason: 'not needed again' });
      await run('/v1/sessions/work/query', { session_ids: ['s1'] });
      await run('/v1/sessions/p0/end', { status: 'aborted', reason: 'the run was stopped' });
      return probes;
    }

    it("states the server's [work] limits: a contract's items, and the revision a revise follows", () => {
      const body = (path: string) =>
        ((document.paths as Record<string, Record<string, Schema>>)[path]!.post!.requestBody as Schema)
          .content as Record<string, { schema: { properties: Record<string, Schema> } }>;
      const create = body('/v1/sessions/{session_id}/work/contracts')['application/json']!.schema.properties;
      const revise = body('/v1/sessions/{session_id}/work/revise')['application/json']!.schema.properties;
      expect(create.items!.maxItems).toBe(work.max_items);
      expect(revise.items!.maxItems).toBe(work.max_items);
      // Revision max_revisions is the last one: the revision before it is the last a revise follows.
      expect(revise.previous_revision!.maximum).toBe(work.max_revisions - 1);
    });

    it('every operation with a JSON body has a valid body here, and both sides take it', () => {
      const withBodies = Object.values(document.paths as Record<string, Record<string, Schema>>).flatMap(
        (methods) =>
          Object.values(methods).flatMap((operation) =>
            (operation.requestBody as Schema | undefined)?.content ? [operation.operationId as string] : [],
          ),
      );
      expect(new Set(probes.map((probe) => probe.operation))).toEqual(new Set(withBodies));
      for (const probe of probes) {
        const validate = ajv.compile(requestSchema(probe.path).schema);
        expect(validate(probe.body), `${probe.operation}: ${JSON.stringify(validate.errors)}`).toBe(true);
        expect(probe.reply.status, `${probe.operation}: ${probe.reply.text}`).toBe(200);
      }
    });

    it('a string the server refuses as invalid_input is invalid by the document, and the other way round', async () => {
      const disagreements: Verdict[] = [];
      for (const probe of probes) {
        const { schema } = requestSchema(probe.path);
        const validate = ajv.compile(schema);
        for (const path of stringLeaves(probe.body)) {
          const rules = stringRules(schema, path);
          const field = path.join('.');
          for (const trial of trialsFor(leafAt(probe.body, path), rules)) {
            const body = withLeaf(probe.body, path, trial.value);
            const documented = validate(body) ? 'valid' : 'invalid';
            const reply = await h.call('POST', probe.path, { body });
            const refusal = refusalOf(reply, field, trial);
            // Refused as invalid_input for any reason agrees with "invalid"; "valid" lets only a
            // relation refuse, and the server never fail (a 500 is no answer to the input).
            const agree =
              documented === 'invalid'
                ? refusal.invalidInput
                : reply.status < 500 && (!refusal.invalidInput || refusal.relational);
            if (!agree) {
              const { value } = trial;
              disagreements.push({
                operation: probe.operation,
                field,
                value: value.length > 40 ? `${value.slice(0, 12)}… (${value.length} characters)` : value,
                server: refusal.verdict,
                document: documented,
              });
            }
          }
        }
      }
      expect(disagreements).toEqual([]);
    }, 120_000);

    /** The operations of the document with an operationId that a token calls: method, path and all. */
    function documentedOperations(): DocumentedOperation[] {
      return Object.entries(document.paths as Record<string, Record<string, Schema>>).flatMap(
        ([template, methods]) =>
          Object.entries(methods).flatMap(([method, operation]) =>
            operation['x-baton-access'] === undefined
              ? []
              : [
                  {
                    operationId: operation.operationId as string,
                    method: method.toUpperCase(),
                    template,
                    parameters: (operation.parameters ?? []) as Parameter[],
                    dependentRequired: (operation['x-baton-dependent-required'] ?? {}) as Record<
                      string,
                      string[]
                    >,
                    body: probes.find((probe) => probe.operation === operation.operationId)?.body,
                  },
                ],
          ),
      );
    }

    /** One request, read whole; an event stream is read no further than its status. */
    async function send(
      method: string,
      url: string,
      headers: Record<string, string>,
      body: Json | undefined,
    ): Promise<Reply> {
      const controller = new AbortController();
      const response = await fetch(`${h.url}${url}`, {
        method,
        headers: {
          authorization: `Bearer ${h.tokens.writer}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...headers,
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: controller.signal,
      });
      if (response.headers.get('content-type')?.startsWith('text/event-stream')) {
        controller.abort();
        return { status: response.status, headers: response.headers, text: '', body: undefined };
      }
      return parseReply(response);
    }

    it('a parameter the server refuses as invalid_input is invalid by the document, and the other way round', async () => {
      const disagreements: ParameterVerdict[] = [];
      const compiled = new Map<string, Validate>();
      const validatorOf = (schema: Schema): Validate => {
        const key = JSON.stringify(schema);
        if (!compiled.has(key)) compiled.set(key, ajv.compile(schema));
        return compiled.get(key)!;
      };
      for (const operation of documentedOperations()) {
        const base = baseValues(operation);
        const check = async (varied: string, values: readonly string[], documented: 'valid' | 'invalid') => {
          const { url, headers } = requestOf(operation, { ...base, [varied]: values });
          let reply: Reply;
          try {
            reply = await send(operation.method, url, headers, operation.body);
          } catch (error) {
            // fetch sends no header value with a control character: nothing reaches the server.
            if (operation.parameters.find((parameter) => parameter.name === varied)?.in === 'header') return;
            throw error;
          }
          const server = parameterRefusal(reply);
          // A failure of the server (500, 503) is no answer to the input: never agreement.
          if ((documented === 'invalid') !== server.refused || reply.status >= 500) {
            disagreements.push({
              operation: operation.operationId,
              parameter: varied,
              values: values.map((value) =>
                value.length > 40 ? `${value.slice(0, 12)}… (${value.length} characters)` : value,
              ),
              server: server.verdict,
              document: documented,
            });
          }
        };
        await check('', [], 'valid');
        for (const parameter of operation.parameters) {
          const validate = validatorOf(parameter.schema);
          for (const values of parameterTrials(parameter, base[parameter.name] ?? [])) {
            const needed =
              values.length === 0 &&
              (parameter.required ||
                Object.entries(operation.dependentRequired).some(
                  ([name, needs]) => needs.includes(parameter.name) && (base[name] ?? []).length > 0,
                ));
            // A header's surrounding whitespace is not part of its value (RFC 9110), and fetch drops it.
            const sent = parameter.in === 'header' ? values.map((value) => value.trim()) : values;
            const documented = needed
              ? 'invalid'
              : sent.length === 0 || parameterValid(validate, sent)
                ? 'valid'
                : 'invalid';
            await check(parameter.name, values, documented);
          }
        }
        // The document lists every parameter an operation takes; the server refuses any other.
        await check(unlistedParameter, ['1'], 'invalid');
      }
      expect(
        disagreements.map(
          (verdict) =>
            `${verdict.operation} ${verdict.parameter}=${JSON.stringify(verdict.values)}: document ${verdict.document}, server ${verdict.server}`,
        ),
      ).toEqual([]);
    }, 120_000);

    it('a number, boolean, array, object or null the server refuses as invalid_input is invalid by the document, and the other way round', async () => {
      const disagreements: string[] = [];
      for (const probe of probes) {
        const { schema } = requestSchema(probe.path);
        const validate = ajv.compile(schema);
        for (const { path, value } of nodesOf(probe.body)) {
          for (const trial of shapeTrials(probe.body, path, value, schemasAt(schema, path))) {
            const documented = validate(trial.body) ? 'valid' : 'invalid';
            const reply = await h.call('POST', probe.path, { body: trial.body });
            const refusal = refusalOf(reply, trial.field, { value: '', atLimit: false });
            // Refused as invalid_input for any reason agrees with "invalid"; "valid" lets only a
            // relation refuse, and the server never fail (a 500 is no answer to the input).
            const agree =
              documented === 'invalid'
                ? refusal.invalidInput
                : reply.status < 500 && (!refusal.invalidInput || refusal.relational);
            if (!agree)
              disagreements.push(
                `${probe.operation} ${trial.field || '(body)'} = ${trial.change.slice(0, 60)}: document ${documented}, server ${refusal.verdict}`,
              );
          }
        }
      }
      expect(disagreements).toEqual([]);
    }, 120_000);
  },
);
