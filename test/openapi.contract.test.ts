/**
 * The OpenAPI document promises no more than the server keeps, and no less: for every operation
 * with a JSON request body, a valid body (one per operation, below) is valid by the document
 * and not refused as invalid_input; then each string in it is replaced with values around the
 * rules (empty, blank, padded, a control character, its documented maxLength and one more,
 * 10,001 characters, each other value its enum allows) and the server's verdict must be the document's. The document is checked
 * with a real JSON Schema 2020-12 validator (Ajv), never with the zod schemas it came from.
 */
/* eslint-disable @typescript-eslint/no-unsafe-member-access -- the document and reply bodies are parsed JSON */
import { mkdtempSync, rmSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type HttpHarness, type Reply } from './helpers/http.ts';
import { backends } from './helpers/stores.ts';
import { contractBody } from './helpers/work-surface.ts';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Schema = Record<string, unknown>;
type Validate = ((data: unknown) => boolean) & { errors?: unknown };

/** A JSON Schema 2020-12 validator (Ajv 8), formats not checked: the document's shape is the point. */
function jsonSchemaValidator(): { compile(schema: Schema): Validate } {
  return new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
}

const backend = backends.find((candidate) => candidate.name === 'sqlite')!;

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
    const child =
      typeof key === 'number'
        ? (schema.items as Schema | undefined)
        : ((schema.properties as Record<string, Schema> | undefined)?.[key] ??
          (typeof schema.additionalProperties === 'object'
            ? (schema.additionalProperties as Schema)
            : undefined));
    own = stringRules(child, rest);
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
 * Refusals of a contract's relations, to itself (an unknown criterion or dependency) or to its
 * session (a capability it lacks, a path outside its workspace): no request schema can state them.
 */
const relationalRules = new Set([
  'unknown_criterion',
  'unknown_dependency',
  'capability_escalation',
  'path_outside_workspace',
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
    invalidInput: error.code === 'invalid_input',
    relational: relationalRules.has(error.details.rule ?? '') || (trial.atLimit && !namesField),
  };
}

describe('the OpenAPI document states what the server enforces', () => {
  let h: HttpHarness;
  let workspace: string;
  let document: Schema;
  let probes: Probe[];
  const ajv = jsonSchemaValidator();

  beforeAll(async () => {
    workspace = mkdtempSync(join(tmpdir(), 'baton-contract-'));
    h = await startHarness(backend, { workspaceRoots: [workspace] });
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
        ? path.replace(/^\/v1\/sessions\/(?!work\/)[^/]+\/work/, '/v1/sessions/{session_id}/work')
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
    await h.call('POST', '/v1/work/sources/capture', { body: { scope_id, source_id: 'gone', content: 'x' } });
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
        receiver_checks: { live_workspace: 'confirmed', capability: 'confirmed', authorization: 'confirmed' },
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

    await h.call('POST', '/v1/sessions', { body: { session_id: 'p0' } });
    await run('/v1/sessions', {
      session_id: 's1',
      parent_session_id: 'p0',
      contract_id: 'c1',
      work_item_id: 'code',
      work_mode: 'managed',
      workspace,
      capabilities: { write: true, tools: ['lint'], flows: ['deploy'], capabilities: ['net'] },
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
    await run(`${s}/items/code/cancel`, { contract_id: 'c1', reason: 'not needed' });
    await run(`${s}/items/code/retry`, { contract_id: 'c1', reason: 'needed after all' });
    await run(`${s}/items/cancel`, { contract_id: 'c1', item_ids: ['code'], reason: 'not needed again' });
    await run('/v1/sessions/work/query', { session_ids: ['s1'] });
    return probes;
  }

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
          const agree =
            documented === 'invalid'
              ? reply.status >= 400 && reply.status < 500
              : !refusal.invalidInput || refusal.relational;
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
});
