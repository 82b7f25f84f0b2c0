/**
 * Fuzz over the write routes, the registry's and the managed-work ones: at least 1,000 malformed bodies (unreadable text, JSON that is not
 * an object, valid bodies with a required field dropped, a field of the wrong type, or a field
 * that does not exist) must all answer 4xx with the error envelope, never 5xx, and write nothing.
 */
/* eslint-disable @typescript-eslint/no-unsafe-member-access -- reply bodies are parsed JSON, read only in assertions */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operations } from '../src/app/operations.ts';
import { workEndpoints } from '../src/http/work-api.ts';
import {
  inputs,
  project_id,
  scope_id,
  seedWorkstream,
  snapshotHeads,
  startHarness,
  type HttpHarness,
  type Workstream,
} from './helpers/http.ts';
import { backends } from './helpers/stores.ts';
import { contractBody, revisedBody } from './helpers/work-surface.ts';

/** What a field must be; a value of any other shape is wrong for it. */
type Shape = 'string' | 'integer' | 'object' | 'array' | 'object-or-string';

interface Target {
  readonly path: string;
  /** A valid body with fresh ids: it would write if it got through. */
  readonly valid: Record<string, unknown>;
  /** Fields whose wrong shape alone makes the body invalid, with the shape they need. */
  readonly fields: Readonly<Record<string, Shape>>;
  readonly required: readonly string[];
}

const where = { scope_id: 'string', source_id: 'string' } as const;

/** w, plus a handoff prepared on its head so that a valid commit would publish revision 2. */
type Seeded = Workstream & { readonly next_digest: string };

function targets(w: Seeded): Target[] {
  return [
    {
      path: '/v1/work/sources/capture',
      valid: { ...inputs.capture('fuzz-capture'), metadata: { note: 'x' } },
      fields: { ...where, kind: 'string', metadata: 'object' },
      required: ['scope_id', 'source_id', 'content'],
    },
    {
      path: '/v1/work/sources/retract',
      valid: { scope_id, source_id: 'ci-log', reason: 'fuzz' },
      fields: { ...where, reason: 'string' },
      required: ['scope_id', 'source_id', 'reason'],
    },
    {
      path: '/v1/work/contracts/create',
      valid: inputs.contract('fuzz-contract', w.log),
      fields: {
        ...where,
        objective: 'string',
        facts: 'array',
        in_scope: 'array',
        completion_criteria: 'array',
        authorization_notes: 'array',
      },
      required: ['scope_id', 'source_id', 'objective', 'completion_criteria'],
    },
    {
      path: '/v1/work/handoffs/prepare-current',
      valid: inputs.boundary('fuzz-boundary', w.log),
      fields: {
        ...where,
        objective: 'string',
        current_state: 'array',
        disposition: 'string',
        next_action: 'object',
        attribution: 'object',
      },
      required: ['scope_id', 'source_id', 'objective', 'disposition', 'next_action'],
    },
    {
      path: '/v1/work/handoffs/commit',
      valid: { scope_id, prepared: w.next_digest, expected_head: w.revision },
      fields: { scope_id: 'string', prepared: 'object-or-string', expected_head: 'integer' },
      required: ['scope_id', 'prepared', 'expected_head'],
    },
    {
      path: '/v1/work/handoffs/acknowledge',
      valid: inputs.accept('fuzz-receipt', w.revision),
      fields: {
        ...where,
        target: 'object-or-string',
        status: 'string',
        receiver_checks: 'object',
        receiver: 'string',
      },
      required: ['scope_id', 'source_id', 'target', 'status', 'receiver_checks'],
    },
    {
      path: '/v1/work/outcomes/record',
      valid: inputs.outcome('fuzz-outcome', w.receipt, w.log),
      fields: {
        ...where,
        objective: 'string',
        status: 'string',
        summary: 'string',
        handoff_receipt_ref: 'object',
        checks: 'array',
        remaining_work: 'array',
      },
      required: ['scope_id', 'source_id', 'objective', 'status', 'summary'],
    },
    {
      path: '/v1/work/experience/review',
      valid: { scope_id, candidate: w.outcome, decision: 'approved', note: 'fuzz' },
      fields: {
        scope_id: 'string',
        candidate: 'object',
        decision: 'string',
        note: 'string',
        reviewer: 'string',
      },
      required: ['scope_id', 'candidate', 'decision', 'note'],
    },
  ];
}

/** Session s1 has contract c1, confirmed (revision 1, item code ready); s2 has no contract yet. */
const s1 = '/v1/sessions/s1/work';
const item = (action: string) => `${s1}/items/code/${action}`;
/** A body's session_id or item_id, when it names one, must be the path's: another shape is refused. */
const inPath = { session_id: 'string' } as const;

/** The managed-work write routes, by their path with the parameters filled in. */
function workTargets(): Target[] {
  return [
    {
      path: '/v1/sessions',
      valid: { session_id: 'fuzz-session', work_mode: 'managed' },
      fields: {
        session_id: 'string',
        parent_session_id: 'string',
        contract_id: 'string',
        work_item_id: 'string',
        work_mode: 'string',
        workspace: 'string',
      },
      required: ['session_id'],
    },
    {
      path: '/v1/sessions/s2/work/contracts',
      valid: { ...contractBody },
      fields: {
        ...inPath,
        contract_id: 'string',
        objective: 'string',
        constraints: 'array',
        assumptions: 'array',
        criteria: 'array',
        items: 'array',
      },
      required: ['objective', 'items'],
    },
    {
      path: `${s1}/confirm`,
      valid: { revision: 1 },
      fields: { ...inPath, contract_id: 'string', revision: 'integer', resolutions: 'array' },
      required: ['revision'],
    },
    {
      path: `${s1}/revise`,
      valid: { previous_revision: 1, ...revisedBody },
      fields: {
        ...inPath,
        contract_id: 'string',
        previous_revision: 'integer',
        objective: 'string',
        criteria: 'array',
        assumptions: 'array',
        items: 'array',
        reason: 'string',
      },
      required: ['previous_revision', 'objective', 'items'],
    },
    { path: `${s1}/reconcile`, valid: {}, fields: inPath, required: [] },
    {
      path: item('transition'),
      valid: { revision: 1, to: 'skipped', reason: 'fuzz' },
      fields: { ...inPath, item_id: 'string', revision: 'integer', to: 'string', reason: 'string' },
      required: ['revision', 'to'],
    },
    {
      path: item('retry'),
      valid: { reason: 'fuzz' },
      fields: { ...inPath, item_id: 'string', contract_id: 'string', reason: 'string' },
      required: [],
    },
    {
      path: item('cancel'),
      valid: { reason: 'fuzz' },
      fields: { ...inPath, item_id: 'string', contract_id: 'string', reason: 'string' },
      required: [],
    },
    {
      path: item('reassign'),
      valid: { owner: { type: 'human' } },
      fields: { ...inPath, item_id: 'string', owner: 'object', child_session_id: 'string' },
      required: ['owner'],
    },
    {
      path: item('evidence'),
      valid: { revision: 1, evidence: { type: 'child_session', session_id: 'fuzz-child' } },
      fields: {
        ...inPath,
        item_id: 'string',
        revision: 'integer',
        evidence: 'object',
        operation_id: 'string',
      },
      required: ['revision', 'evidence'],
    },
    {
      path: `${s1}/items/cancel`,
      valid: { item_ids: ['code', 'docs'], reason: 'fuzz' },
      fields: { ...inPath, contract_id: 'string', item_ids: 'array', reason: 'string' },
      required: ['item_ids'],
    },
    {
      path: '/v1/sessions/s1/end',
      valid: { status: 'aborted', reason: 'fuzz' },
      fields: { ...inPath, status: 'string', reason: 'string' },
      required: ['status'],
    },
  ];
}

/** A JSON value of a shape other than `shape`. */
function wrongValue(shape: Shape): fc.Arbitrary<unknown> {
  const scalars: fc.Arbitrary<unknown>[] = [
    fc.constant(null),
    fc.boolean(),
    fc.double({ noNaN: true, noDefaultInfinity: true }).filter((value) => !Number.isInteger(value)),
  ];
  const integer = fc.oneof(fc.integer(), fc.constant(-1), fc.constant(2 ** 53));
  const string = fc.string({ maxLength: 40 });
  const array = fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 4 });
  const object = fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 });
  switch (shape) {
    case 'string':
      return fc.oneof(...scalars, integer, array, object);
    case 'integer':
      return fc.oneof(...scalars, string, array, object, fc.constant(-1));
    case 'object':
      return fc.oneof(...scalars, integer, string, array);
    case 'array':
      return fc.oneof(...scalars, integer, string, object);
    case 'object-or-string':
      return fc.oneof(...scalars, integer, array);
  }
}

type Malformed =
  | { readonly kind: 'text'; readonly text: string; readonly contentType: string }
  | { readonly kind: 'json'; readonly value: unknown };

function malformed(target: Target): fc.Arbitrary<Malformed> {
  const names = Object.keys(target.fields);
  const known = new Set(Object.keys(target.valid));
  return fc.oneof(
    // Unreadable: broken JSON text, or a valid body sent as another content type.
    fc.tuple(fc.string({ maxLength: 60 }), fc.nat()).map(([noise, cut]): Malformed => {
      const text = JSON.stringify(target.valid);
      return {
        kind: 'text',
        text: `${text.slice(0, cut % text.length)}${noise}\u0000`,
        contentType: 'application/json',
      };
    }),
    fc
      .constantFrom(
        'text/plain',
        'application/x-www-form-urlencoded',
        'multipart/form-data; boundary=x',
        'application/xml',
      )
      .map((contentType): Malformed => ({ kind: 'text', text: JSON.stringify(target.valid), contentType })),
    // JSON that is not an object.
    fc
      .oneof(
        fc.constant(null),
        fc.boolean(),
        fc.integer(),
        fc.string(),
        fc.array(fc.jsonValue({ maxDepth: 2 })),
      )
      .map((value): Malformed => ({ kind: 'json', value })),
    // A required field dropped (a route may have none: then a body that is not an object).
    target.required.length === 0
      ? fc.constant<Malformed>({ kind: 'json', value: [target.valid] })
      : fc.constantFrom(...target.required).map((field): Malformed => {
          const rest = Object.fromEntries(Object.entries(target.valid).filter(([key]) => key !== field));
          return { kind: 'json', value: rest };
        }),
    // One field of the wrong shape.
    fc
      .constantFrom(...names)
      .chain((field) => wrongValue(target.fields[field]!).map((value) => ({ field, value })))
      .map(({ field, value }): Malformed => ({ kind: 'json', value: { ...target.valid, [field]: value } })),
    // A field the operation does not have (project_id included: the project is never the caller's to name).
    fc
      .tuple(
        fc
          .oneof(
            fc.constantFrom('project_id', '__proto__', 'constructor'),
            fc.string({ minLength: 1, maxLength: 12 }),
          )
          .filter((key) => !known.has(key)),
        fc.jsonValue({ maxDepth: 2 }),
      )
      .map(([key, value]): Malformed => {
        const body: Record<string, unknown> = { ...target.valid };
        Object.defineProperty(body, key, { value, enumerable: true, configurable: true, writable: true });
        return { kind: 'json', value: body };
      }),
  );
}

const sqlite = backends[0]!;

describe('fuzz: malformed bodies on every write route', () => {
  let h: HttpHarness;
  let w: Seeded;

  beforeAll(async () => {
    h = await startHarness(sqlite);
    const seeded = await seedWorkstream(h.call);
    const next = await h.call('POST', '/v1/work/handoffs/prepare-current', {
      body: inputs.boundary('boundary-next', seeded.log),
    });
    w = { ...seeded, next_digest: next.body.digest as string };
    for (const [path, body] of [
      ['/v1/sessions', { session_id: 's1' }],
      ['/v1/sessions', { session_id: 's2' }],
      [`${s1}/contracts`, contractBody],
    ] as const) {
      expect((await h.call('POST', path, { body })).status).toBe(200);
    }
  });
  afterAll(() => h.dispose());

  it('covers every write operation of the registry and every managed-work write', () => {
    const fuzzed = new Set(targets(w).map((target) => target.path));
    const writes = operations
      .filter((operation) => operation.access === 'write')
      .map((operation) => operation.path);
    expect([...fuzzed].sort()).toEqual([...writes].sort());
    const route = (path: string) =>
      path.replace(/\/s[12]\//, '/:session_id/').replace('/code/', '/:item_id/');
    const work = workEndpoints
      .filter((endpoint) => endpoint.access === 'write')
      .map((endpoint) => endpoint.path);
    expect(
      workTargets()
        .map((target) => route(target.path))
        .sort(),
    ).toEqual([...work].sort());
  });

  it('answers 2,000 malformed bodies with 4xx and the error envelope, never 5xx, and writes nothing', async () => {
    const before = await snapshotHeads(h.deps.store, project_id);
    const statuses = new Map<number, number>();
    let calls = 0;
    const all = [...targets(w), ...workTargets()];
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...all).chain((target) => malformed(target).map((body) => ({ target, body }))),
        async ({ target, body }) => {
          const reply =
            body.kind === 'text'
              ? await h.call('POST', target.path, {
                  body: body.text,
                  headers: { 'content-type': body.contentType },
                })
              : await h.call('POST', target.path, { body: JSON.stringify(body.value) });
          calls += 1;
          statuses.set(reply.status, (statuses.get(reply.status) ?? 0) + 1);
          const ok =
            reply.status >= 400 &&
            reply.status < 500 &&
            reply.body?.error?.code === 'invalid_input' &&
            typeof reply.body.error.message === 'string' &&
            typeof reply.body.error.details === 'object';
          if (!ok)
            throw new Error(
              `${target.path} ${JSON.stringify(body).slice(0, 400)} -> ${reply.status} ${reply.text}`,
            );
        },
      ),
      { numRuns: 2000, seed: Number(process.env.FUZZ_SEED ?? 20261202) },
    );
    expect(calls).toBe(2000);
    expect([...statuses.keys()].every((status) => status === 400 || status === 422)).toBe(true);
    expect(statuses.get(400)).toBeGreaterThan(100);
    expect(statuses.get(422)).toBeGreaterThan(500);
    expect(await snapshotHeads(h.deps.store, project_id)).toEqual(before);
    expect(await h.deps.store.listStreams('rival')).toEqual([]);

    // The bodies the fuzz broke were writable as they were: each valid one answers 200
    // (retraction last, as it makes the cited log unreadable).
    const ordered = targets(w).sort(
      (a, b) => Number(a.path.endsWith('retract')) - Number(b.path.endsWith('retract')),
    );
    for (const target of ordered) {
      const reply = await h.call('POST', target.path, { body: target.valid });
      expect([target.path, reply.status], reply.text).toEqual([target.path, 200]);
    }
    // Each managed-work body the fuzz broke passes the route's schema: whatever it answers is
    // about the work's state (200, 404, 409, 412), never its input.
    for (const target of workTargets()) {
      const reply = await h.call('POST', target.path, { body: target.valid });
      expect([200, 404, 409, 412], `${target.path}: ${reply.status} ${reply.text}`).toContain(reply.status);
    }
    expect(await snapshotHeads(h.deps.store, project_id)).not.toEqual(before);
  });
});
