/**
 * The managed-work HTTP surface on every backend over a real socket: every endpoint end to end,
 * bad input refused with a stable code and nothing written, the projector's refusals as 409
 * with data.rule, stale revisions as revision_conflict, the project boundary on single and bulk
 * endpoints (two projects, two tokens), read-only tokens, cookie sessions, the typed client,
 * and the OpenAPI document.
 */
/* eslint-disable @typescript-eslint/no-unsafe-argument, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-member-access -- reply bodies are parsed JSON, read only in assertions */
import { readFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { authenticateToken } from '../src/app/auth.ts';
import { readWork, type WorkSnapshot } from '../src/app/work.ts';
import { createClient } from '../src/client/index.ts';
import { BatonError } from '../src/core/errors.ts';
import { buildApp } from '../src/http/server.ts';
import { workEndpoints } from '../src/http/work-api.ts';
import {
  project_id,
  rival_project_id,
  seedTokens,
  snapshotHeads,
  startHarness,
  type HttpHarness,
  type Reply,
} from './helpers/http.ts';
import { backends } from './helpers/stores.ts';
import { contractBody, openSse, revisedBody } from './helpers/work-surface.ts';

function expectError(reply: Reply, status: number, code: string): Record<string, unknown> {
  expect({ status: reply.status, code: reply.body?.error?.code }, reply.text).toEqual({ status, code });
  expect(Object.keys(reply.body as object)).toEqual(['error']);
  expect(typeof reply.body.error.message).toBe('string');
  return reply.body.error.details as Record<string, unknown>;
}

function expectOk(reply: Reply): WorkSnapshot {
  expect(reply.status, reply.text).toBe(200);
  return reply.body as WorkSnapshot;
}

/**
 * A snapshot without its item times: a change answers with the times of its own clock reading,
 * the ledger keeps the store's recorded_at, and the two can differ by a millisecond.
 */
function untimed(snapshot: WorkSnapshot): unknown {
  return JSON.parse(JSON.stringify(snapshot), (key, value: unknown) =>
    key === 'started_at' || key === 'finished_at' ? value !== null : value,
  );
}

function item(snapshot: WorkSnapshot, item_id: string) {
  return snapshot.contract!.items.find((candidate) => candidate.item_id === item_id)!;
}

const s = '/v1/sessions/s1/work';

for (const backend of backends) {
  describe(`managed work over HTTP on ${backend.name}`, () => {
    let h: HttpHarness;
    /** Every answer of a test, to hold each 200 against its endpoint's published result schema. */
    let answers: { method: string; path: string; reply: Reply }[] = [];
    const call = async (
      method: 'GET' | 'POST',
      path: string,
      options: Parameters<HttpHarness['call']>[2],
    ) => {
      const reply = await h.call(method, path, options);
      answers.push({ method, path, reply });
      return reply;
    };
    const post = (path: string, body?: unknown, token?: string | null) =>
      call('POST', path, {
        ...(body === undefined ? {} : { body }),
        ...(token === undefined ? {} : { token }),
      });
    const get = (path: string) => call('GET', path, {});
    const heads = () => snapshotHeads(h.deps.store, project_id);

    /** Session s1 with contract c1 confirmed: code ready, docs proposed. */
    async function activeSession(): Promise<WorkSnapshot> {
      expect((await post('/v1/sessions', { session_id: 's1' })).status).toBe(200);
      expectOk(await post(`${s}/contracts`, contractBody));
      expectOk(
        await post(`${s}/confirm`, {
          revision: 1,
          resolutions: [{ assumption_id: 'db', resolution: 'staging' }],
        }),
      );
      return expectOk(await h.call('GET', s));
    }

    beforeEach(async () => {
      answers = [];
      h = await startHarness(backend);
    });
    afterEach(() => h.dispose());

    it('echoes an unknown key of 500 KB cut to about 100 characters, in the message and the issues', async () => {
      expect((await post('/v1/sessions', { session_id: 's1' })).status).toBe(200);
      const key = 'k'.repeat(500_000);
      const reply = await post(`${s}/contracts`, { ...contractBody, [key]: 1 });
      const details = expectError(reply, 422, 'invalid_input');
      expect(reply.text.length).toBeLessThan(2_000);
      expect(reply.body.error.message).toContain(`"${'k'.repeat(100)}…"`);
      expect(details.issues).toEqual([{ path: '', message: `Unrecognized key: "${'k'.repeat(100)}…"` }]);
      // A mismatched path parameter's body value is cut the same way.
      const mismatch = await post(`${s}/contracts`, { ...contractBody, session_id: 'x'.repeat(500_000) });
      expectError(mismatch, 422, 'invalid_input');
      expect(mismatch.text.length).toBeLessThan(2_000);
    });

    it('binds a session to a workstream, and refuses a receipt it could never cover, writing nothing', async () => {
      const before = await heads();
      const ref = { scope_id: 'login-work', source_id: 'receipt-1', digest: `sha256:${'0'.repeat(64)}` };
      const unscoped = expectError(
        await post('/v1/sessions', { session_id: 's1', handoff_receipt_ref: ref }),
        422,
        'invalid_input',
      );
      expect(unscoped.issues).toEqual([
        { path: 'handoff_receipt_ref', message: expect.stringContaining('scope_id') as string },
      ]);
      expect(
        (await post('/v1/sessions', { session_id: 's1', scope_id: 'login-work', handoff_receipt_ref: ref }))
          .status,
      ).toBeGreaterThanOrEqual(400);
      expectError(await post('/v1/sessions', { session_id: 's1', scope_id: '' }), 422, 'invalid_input');
      expect(await heads()).toEqual(before);
      const bound = await post('/v1/sessions', { session_id: 's1', scope_id: 'login-work' });
      expect(bound.status, bound.text).toBe(200);
      expect(bound.body).toMatchObject({ session_id: 's1', scope_id: 'login-work' });
      expect(bound.body).not.toHaveProperty('handoff_receipt_ref');
    });

    it('answers an identical evidence attach again with the same snapshot and writes nothing', async () => {
      await activeSession();
      const body = { revision: 1, evidence: { type: 'ledger_entry', session_id: 's1', entry_id: '1' } };
      const first = await post(`${s}/items/code/evidence`, body);
      const attached = expectOk(first);
      expect(item(attached, 'code')).toMatchObject({ evidence_count: 1 });
      const before = await heads();
      // A client that lost the answer sends the same request again.
      const again = await post(`${s}/items/code/evidence`, body);
      expect({ status: again.status, body: again.body }).toEqual({ status: 200, body: first.body });
      expect(await heads()).toEqual(before);
    });

    it('runs every work endpoint end to end, each answering the projected snapshot', async () => {
      const started = await post('/v1/sessions', { session_id: 's1', capabilities: { tools: ['eslint'] } });
      expect(started.status, started.text).toBe(200);
      expect(started.body).toMatchObject({
        schema: 'baton.session-header/v1',
        session_id: 's1',
        work_mode: 'direct',
        capabilities: { tools: ['eslint'], write: true },
      });
      // The same header again is a no-op; another one is a conflict.
      expect(
        (await post('/v1/sessions', { session_id: 's1', capabilities: { tools: ['eslint'] } })).body,
      ).toEqual(started.body);
      expectError(await post('/v1/sessions', { session_id: 's1', work_mode: 'managed' }), 409, 'conflict');

      const empty = expectOk(await get(s));
      expect(empty).toEqual({
        session_id: 's1',
        position: 1,
        projection: null,
        terminal: null,
        contract: null,
        warnings: [],
        control_block: null,
      });
      // The transcript of a session without a conversation; of no session, 404.
      const transcript = await get('/v1/sessions/s1/transcript');
      expect([transcript.status, transcript.body]).toEqual([
        200,
        { session_id: 's1', goal: null, entries: [], total: 0, trust: 'untrusted_history' },
      ]);
      expectError(await get('/v1/sessions/nobody/transcript'), 404, 'not_found');
      const listed = await get('/v1/sessions');
      expect(listed.status, listed.text).toBe(200);
      expect(listed.body).toMatchObject({
        sessions: [{ session_id: 's1', position: 1, work_mode: 'direct', contract: null, error: null }],
        total: 1,
      });

      // A body may repeat the path's session id.
      const created = expectOk(await post(`${s}/contracts`, { ...contractBody, session_id: 's1' }));
      expect(created.contract).toMatchObject({ contract_id: 'c1', revision: 1, status: 'awaiting_input' });
      expect(created.control_block).toContain('Awaiting input on: db');

      const confirmed = expectOk(
        await post(`${s}/confirm`, {
          revision: 1,
          resolutions: [{ assumption_id: 'db', resolution: 'staging' }],
        }),
      );
      expect(confirmed.contract!.status).toBe('active');
      expect(item(confirmed, 'code')).toMatchObject({ status: 'ready', attempt: 1 });
      expect(item(confirmed, 'docs').status).toBe('proposed');

      const revised = expectOk(await post(`${s}/revise`, { previous_revision: 1, ...revisedBody }));
      expect(revised.contract).toMatchObject({ revision: 2, status: 'active' });
      expect(revised.contract!.items.map((state) => state.item_id)).toEqual(['code', 'docs', 'copy']);

      const skipped = expectOk(
        await post(`${s}/items/copy/transition`, { revision: 2, to: 'skipped', reason: 'not needed' }),
      );
      expect(item(skipped, 'copy').status).toBe('skipped');

      // Each reference is resolved in the ledger as it is attached: s1's header is at position 1;
      // 'e-1' names no position. The unresolved one is kept, marked unavailable with the reason.
      const evidence = { type: 'ledger_entry', session_id: 's1', entry_id: 'e-1' };
      const header = { type: 'ledger_entry', session_id: 's1', entry_id: '1' };
      expectOk(await post(`${s}/items/code/evidence`, { revision: 2, evidence }));
      const attached = expectOk(await post(`${s}/items/code/evidence`, { revision: 2, evidence: header }));
      expect(item(attached, 'code')).toMatchObject({
        evidence_count: 2,
        evidence: [evidence, header],
        evidence_availability: [{ status: 'unavailable', reason: 'missing_entry' }, { status: 'available' }],
      });

      const toTool = expectOk(
        await post(`${s}/items/code/reassign`, { owner: { type: 'tool', name: 'eslint' } }),
      );
      expect(item(toTool, 'code').owner).toEqual({ type: 'tool', name: 'eslint' });
      const toWorker = expectOk(
        await post(`${s}/items/code/reassign`, { owner: { type: 'worker' }, child_session_id: 's1-child' }),
      );
      expect(item(toWorker, 'code')).toMatchObject({
        owner: { type: 'worker' },
        child_session_id: 's1-child',
      });

      // Nothing runs: reconciling appends nothing.
      const reconciled = expectOk(await post(`${s}/reconcile`));
      expect(reconciled.position).toBe(toWorker.position);

      const cancelled = expectOk(await post(`${s}/items/code/cancel`, { reason: 'wrong approach' }));
      expect(item(cancelled, 'code').status).toBe('cancelled');
      // No body at all is an empty input.
      const retried = expectOk(await post(`${s}/items/code/retry`));
      expect(item(retried, 'code')).toMatchObject({ status: 'ready', attempt: 2 });

      const bulk = await post(`${s}/items/cancel`, { item_ids: ['code', 'nope', 'docs'], reason: 'stop' });
      expect(bulk.status, bulk.text).toBe(200);
      expect(bulk.body.items).toEqual([
        { item_id: 'code', status: 'cancelled', position: expect.any(Number) },
        {
          item_id: 'nope',
          error: {
            code: 'not_found',
            message: expect.any(String),
            details: expect.objectContaining({ item_id: 'nope' }),
          },
        },
        { item_id: 'docs', status: 'cancelled', position: bulk.body.work.position },
      ]);
      expect(bulk.body.items[0].position).toBeLessThan(bulk.body.work.position);

      const query = await post('/v1/sessions/work/query', { session_ids: ['s1', 'missing'] });
      expect(query.status, query.text).toBe(200);
      expect(query.body.sessions[0].session_id).toBe('s1');
      expect(untimed(query.body.sessions[0].work)).toEqual(untimed(bulk.body.work));
      expect(query.body.sessions[1]).toMatchObject({ session_id: 'missing', error: { code: 'not_found' } });

      // Every answer was the projection: the same as reading the ledger again.
      const final = expectOk(await get(s));
      expect(untimed(final)).toEqual(untimed(bulk.body.work));
      expect(final).toEqual(query.body.sessions[0].work);
      expect(final).toEqual(
        JSON.parse(JSON.stringify(await readWork(h.deps, project_id, { session_id: 's1' }))),
      );
      // All work mutations appear in audit history: every change is in the ledger, each with the
      // writer token's id as the human actor, the runtime's follow-ups after them.
      const { token_id } = await authenticateToken(h.deps, h.tokens.writer);
      const audit: [string, string, string][] = [];
      for await (const entry of h.deps.store.readStream(
        { project_id, kind: 'session', session_id: 's1' },
        { kinds: ['work_event'] },
      )) {
        const { actor, kind } = entry.content as {
          actor: { type: string; id: string };
          kind: { type: string; item_id?: string };
        };
        audit.push([actor.type, actor.id, `${kind.type} ${kind.item_id ?? ''}`.trim()]);
      }
      const person = (change: string): [string, string, string] => ['human', token_id, change];
      const follow = (change: string): [string, string, string] => ['runtime', 'baton', change];
      expect(audit).toEqual([
        person('contract_created'),
        follow('contract_status_changed'),
        person('assumption_resolved'),
        person('contract_status_changed'),
        follow('item_status_changed code'),
        person('contract_revised'),
        follow('item_status_changed copy'),
        person('item_status_changed copy'),
        person('evidence_attached code'),
        person('evidence_attached code'),
        person('item_assigned code'),
        person('item_assigned code'),
        person('item_status_changed code'),
        person('item_status_changed code'),
        person('item_status_changed code'),
        person('item_status_changed docs'),
      ]);

      // The session ends once: completed is refused over open work, aborted is written, the same
      // end again writes nothing, and another end is refused.
      expectError(await post('/v1/sessions/s1/end', { status: 'completed' }), 409, 'conflict');
      const ended = expectOk(await post('/v1/sessions/s1/end', { status: 'aborted', reason: 'stopped' }));
      expect(ended.projection?.terminal).toEqual({ status: 'aborted', position: ended.position });
      expect(expectOk(await post('/v1/sessions/s1/end', { status: 'aborted' })).position).toBe(
        ended.position,
      );
      const again = expectError(await post('/v1/sessions/s1/end', { status: 'failed' }), 409, 'conflict');
      expect(again).toMatchObject({ rule: 'session_ended', status: 'aborted' });
      expectError(await post('/v1/sessions/s1/end', { status: 'done' }), 422, 'invalid_input');

      // Each 200 answer fits its endpoint's published result schema, and every endpoint answered.
      const answered = new Set<string>();
      for (const { method, path, reply } of answers.filter((answer) => answer.reply.status === 200)) {
        const endpoint = workEndpoints.find(
          (candidate) =>
            candidate.method === method &&
            new RegExp(`^${candidate.path.replace(/:\w+/g, '[^/]+')}$`).test(path),
        )!;
        const checked = endpoint.output.safeParse(reply.body);
        expect(checked.error?.issues ?? [], endpoint.operationId).toEqual([]);
        answered.add(endpoint.operationId);
      }
      expect([...answered].sort()).toEqual(workEndpoints.map((endpoint) => endpoint.operationId).sort());
      // A wrong shape does not fit: the schemas can fail.
      const getWork = workEndpoints.find((endpoint) => endpoint.operationId === 'get_work')!;
      expect(getWork.output.safeParse({ ...final, position: '7' }).success).toBe(false);
    });

    it('reaches a session by any id it accepts, up to 200 characters that each need escaping', async () => {
      for (const session_id of ['l'.repeat(200), `${'w'.repeat(100)}${'%/?#'.repeat(25)}`]) {
        expect((await post('/v1/sessions', { session_id })).status).toBe(200);
        const path = `/v1/sessions/${encodeURIComponent(session_id)}/work`;
        const work = await h.call('GET', path);
        expect({ length: session_id.length, status: work.status }).toEqual({ length: 200, status: 200 });
        expect(work.body).toMatchObject({ session_id });
        expect((await post(`${path}/contracts`, contractBody)).status).toBe(200);
      }
    });

    it('refuses bad input with a stable code and writes nothing', async () => {
      await activeSession();
      const before = await heads();
      const refusals: [string, unknown, number, string, Record<string, unknown>?][] = [
        [`${s}/confirm`, { session_id: 'other', revision: 1 }, 422, 'invalid_input', { field: 'session_id' }],
        [
          `${s}/confirm`,
          {
            revision: 1,
            resolutions: [
              { assumption_id: 'db', resolution: 'staging' },
              { assumption_id: 'db', resolution: 'production' },
            ],
          },
          422,
          'invalid_input',
        ],
        [`${s}/items/code/cancel`, { item_id: 'docs' }, 422, 'invalid_input', { field: 'item_id' }],
        [`${s}/items/code/retry`, { surprise: true }, 422, 'invalid_input'],
        [`${s}/items/code/transition`, { revision: 1, to: 'finished' }, 422, 'invalid_input'],
        [`${s}/items/code/transition`, { to: 'skipped' }, 422, 'invalid_input'],
        [`${s}/items/code/cancel`, null, 422, 'invalid_input'],
        [`${s}/items/code/cancel`, [1, 2], 422, 'invalid_input'],
        [`${s}/items/code/reassign`, { owner: { type: 'robot' } }, 422, 'invalid_input'],
        [`${s}/items/code/evidence`, { revision: 1, evidence: { type: 'rumour' } }, 422, 'invalid_input'],
        [
          `${s}/contracts`,
          { ...contractBody, contract_id: 'c2', objective: ' ', branch: true },
          422,
          'invalid_input',
          { issues: [{ path: 'objective', message: 'the objective is empty' }] },
        ],
        [
          `${s}/contracts`,
          {
            ...contractBody,
            contract_id: 'c2',
            branch: true,
            items: [
              { item_id: 'a', title: 'A', dependencies: ['b'], criterion_ids: ['tests'] },
              { item_id: 'b', title: 'B', dependencies: ['a'], criterion_ids: ['tests'] },
            ],
          },
          422,
          'invalid_input',
          { rule: 'dependency_cycle' },
        ],
        [
          `${s}/items/code/reassign`,
          { owner: { type: 'tool', name: 'curl' } },
          422,
          'invalid_input',
          { rule: 'unsupported_tool', id: 'code' },
        ],
        ['/v1/sessions/work/query', { session_ids: [] }, 422, 'invalid_input'],
        [
          '/v1/sessions/work/query',
          { session_ids: Array.from({ length: 101 }, (_, i) => `s${i}`) },
          422,
          'invalid_input',
        ],
        [`${s}/items/cancel`, { item_ids: [] }, 422, 'invalid_input'],
        ['/v1/sessions', { session_id: 's2', workspace: 'relative/dir' }, 422, 'invalid_input'],
        [`${s}/confirm`, '{"revision": 1', 400, 'invalid_input'],
        // The projector's refusals: 409 with the rule.
        [
          `${s}/items/code/transition`,
          { revision: 1, to: 'succeeded' },
          409,
          'conflict',
          { rule: 'invalid_transition', actor: 'human' },
        ],
        [`${s}/items/code/retry`, {}, 409, 'conflict', { rule: 'invalid_transition', from: 'ready' }],
        [`${s}/confirm`, { revision: 1 }, 409, 'conflict', { rule: 'nothing_to_confirm' }],
        [
          `${s}/contracts`,
          { ...contractBody, contract_id: 'c2' },
          409,
          'conflict',
          { rule: 'second_active_contract' },
        ],
        [`${s}/items/nope/cancel`, {}, 404, 'not_found', { item_id: 'nope' }],
        ['/v1/sessions/nobody/work/items/code/cancel', {}, 404, 'not_found'],
      ];
      for (const [path, body, status, code, data] of refusals) {
        const details = expectError(await post(path, body), status, code);
        if (data) expect(details, path).toMatchObject(data);
      }
      expectError(await h.call('GET', '/v1/sessions/nobody/work'), 404, 'not_found');
      expect(await heads()).toEqual(before);

      // A stale revision: revise to 2, then act on 1.
      expectOk(await post(`${s}/revise`, { previous_revision: 1, ...revisedBody }));
      const moved = await heads();
      for (const [path, body] of [
        [`${s}/items/copy/transition`, { revision: 1, to: 'skipped' }],
        [`${s}/items/code/evidence`, { revision: 1, evidence: { type: 'child_session', session_id: 'x' } }],
        [`${s}/revise`, { previous_revision: 1, ...revisedBody }],
      ] as const) {
        const details = expectError(await post(path, body), 409, 'revision_conflict');
        expect(details, path).toMatchObject({
          rule: 'stale_revision',
          contract_id: 'c1',
          expected: 2,
          actual: 1,
        });
      }
      expect(await heads()).toEqual(moved);
    });

    it('keeps the project boundary on single and bulk endpoints, and read-only tokens read only', async () => {
      const work = await activeSession();
      const before = await heads();
      const rival = h.tokens.rival;

      // Another project's session is not there: 404 on every single endpoint, nothing written.
      expectError(await h.call('GET', s, { token: rival }), 404, 'not_found');
      expectError(await h.call('GET', '/v1/sessions/s1/transcript', { token: rival }), 404, 'not_found');
      const refusedPaths = [s, '/v1/sessions/s1/transcript'];
      for (const [path, body] of [
        [`${s}/confirm`, { revision: 1 }],
        [`${s}/revise`, { previous_revision: 1, ...revisedBody }],
        [`${s}/contracts`, { ...contractBody, contract_id: 'c9', branch: true }],
        [`${s}/items/code/transition`, { revision: 1, to: 'skipped' }],
        [`${s}/items/code/retry`, {}],
        [`${s}/items/code/cancel`, {}],
        [`${s}/items/code/reassign`, { owner: { type: 'human' } }],
        [`${s}/items/code/evidence`, { revision: 1, evidence: { type: 'child_session', session_id: 'x' } }],
        [`${s}/items/cancel`, { item_ids: ['code', 'docs'] }],
        [`${s}/reconcile`, {}],
        ['/v1/sessions/s1/end', { status: 'aborted' }],
      ] as const) {
        expectError(await post(path, body, rival), 404, 'not_found');
        refusedPaths.push(path);
      }
      // Every endpoint of one session was tried.
      expect(refusedPaths.sort()).toEqual(
        workEndpoints
          .filter((endpoint) => endpoint.params.includes('session_id'))
          .map((endpoint) => endpoint.path.replace(':session_id', 's1').replace(':item_id', 'code'))
          .sort(),
      );
      const events = await openSse(h.url, '/v1/sessions/s1/events', { authorization: `Bearer ${rival}` });
      expect(events.status).toBe(404);
      expect(JSON.parse(events.body)).toMatchObject({ error: { code: 'not_found' } });
      // Bulk: the foreign session is an error entry; the rival's own s1 is its own.
      const foreign = await post('/v1/sessions/work/query', { session_ids: ['s1'] }, rival);
      expect(foreign.status).toBe(200);
      expect(foreign.body.sessions).toEqual([
        {
          session_id: 's1',
          error: { code: 'not_found', message: expect.any(String), details: expect.any(Object) },
        },
      ]);
      expect((await post('/v1/sessions', { session_id: 's1' }, rival)).status).toBe(200);
      const own = await post('/v1/sessions/work/query', { session_ids: ['s1'] }, rival);
      expect(own.body.sessions[0].work).toMatchObject({ session_id: 's1', position: 1, contract: null });
      expect(await heads()).toEqual(before);
      expect(await snapshotHeads(h.deps.store, rival_project_id)).toEqual({
        [`stream ${JSON.stringify({ project_id: rival_project_id, kind: 'session', session_id: 's1' })}`]: 1,
      });

      // Read-only: reads pass, every write is 403 before anything happens.
      const reader = h.tokens.reader;
      expect(expectOk(await h.call('GET', s, { token: reader }))).toEqual(work);
      expect(
        (await post('/v1/sessions/work/query', { session_ids: ['s1'] }, reader)).body.sessions[0].work,
      ).toEqual(work);
      const writes = workEndpoints.filter((endpoint) => endpoint.access === 'write');
      expect(writes.length).toBe(12);
      for (const endpoint of writes) {
        const path = endpoint.path.replace(':session_id', 's1').replace(':item_id', 'code');
        const details = expectError(await post(path, {}, reader), 403, 'forbidden');
        expect(details).toHaveProperty('token_id');
      }
      expectError(await h.call('GET', s, { token: null }), 401, 'unauthorized');
      expectError(await post(`${s}/items/code/cancel`, {}, null), 401, 'unauthorized');
      expect(await heads()).toEqual(before);

      // A web session needs its CSRF token with the cookie, to read as to write.
      const login = await h.call('POST', '/v1/session');
      const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
      expectError(await h.call('GET', s, { token: null, headers: { cookie } }), 403, 'forbidden');
      expect(
        expectOk(
          await h.call('GET', s, { token: null, headers: { cookie, 'x-csrf-token': login.body.csrf } }),
        ),
      ).toEqual(work);
      expectError(
        await h.call('POST', `${s}/items/code/cancel`, { token: null, headers: { cookie }, body: {} }),
        403,
        'forbidden',
      );
      expect(await heads()).toEqual(before);
      const withCsrf = await h.call('POST', `${s}/items/docs/cancel`, {
        token: null,
        headers: { cookie, 'x-csrf-token': login.body.csrf },
        body: {},
      });
      expect(item(expectOk(withCsrf), 'docs').status).toBe('cancelled');
    });

    it('offers every endpoint through the typed client, with errors as BatonErrors', async () => {
      const client = createClient({ baseUrl: h.url, token: h.tokens.writer });
      const header = await client.startSession({ session_id: 'c/1 x' });
      expect(header.session_id).toBe('c/1 x');
      const session_id = 'c/1 x';
      expect((await client.getWork({ session_id })).position).toBe(1);
      const created = await client.createWork({ session_id, ...contractBody });
      expect(created.contract!.status).toBe('awaiting_input');
      await client.confirmWork({
        session_id,
        revision: 1,
        resolutions: [{ assumption_id: 'db', resolution: 'yes' }],
      });
      const revised = await client.reviseWork({ session_id, previous_revision: 1, ...revisedBody });
      expect(revised.contract!.revision).toBe(2);
      await client.transitionWorkItem({ session_id, item_id: 'copy', revision: 2, to: 'skipped' });
      await client.attachWorkEvidence({
        session_id,
        item_id: 'code',
        revision: 2,
        evidence: { type: 'child_session', session_id: 'kid' },
      });
      await client.reassignWorkItem({ session_id, item_id: 'code', owner: { type: 'human' } });
      await client.cancelWorkItem({ session_id, item_id: 'code' });
      const retried = await client.retryWorkItem({ session_id, item_id: 'code', reason: 'again' });
      expect(item(retried, 'code')).toMatchObject({
        status: 'ready',
        attempt: 2,
        owner: { type: 'human' },
        evidence_count: 1,
      });
      // Nothing runs: reconciling changes nothing and answers the work as it is.
      const reconciled = await client.reconcileWork({ session_id });
      expect(reconciled.position).toBe(retried.position);
      const bulk = await client.cancelWorkItems({ session_id, item_ids: ['docs'] });
      expect(bulk.items).toEqual([{ item_id: 'docs', status: 'cancelled', position: bulk.work.position }]);
      const query = await client.queryWork({ session_ids: [session_id] });
      expect(query.sessions.map((entry) => entry.session_id)).toEqual([session_id]);
      expect(untimed((query.sessions[0] as { work: WorkSnapshot }).work)).toEqual(untimed(bulk.work));

      const stale = await client
        .transitionWorkItem({ session_id, item_id: 'code', revision: 1, to: 'skipped' })
        .catch((error: unknown) => error);
      expect(stale).toBeInstanceOf(BatonError);
      expect(stale).toMatchObject({
        code: 'revision_conflict',
        data: { rule: 'stale_revision', expected: 2, actual: 1 },
      });
      const refused = await client
        .transitionWorkItem({ session_id, item_id: 'code', revision: 2, to: 'succeeded' })
        .catch((error: unknown) => error);
      expect(refused).toMatchObject({ code: 'conflict', data: { rule: 'invalid_transition' } });
      const missing = await client.getWork({ session_id: 'nobody' }).catch((error: unknown) => error);
      expect(missing).toMatchObject({ code: 'not_found' });
      const reader = createClient({ baseUrl: h.url, token: h.tokens.reader });
      await expect(reader.cancelWorkItem({ session_id, item_id: 'code' })).rejects.toMatchObject({
        code: 'forbidden',
      });
    });
  });
}

describe('the work routes in the OpenAPI document', () => {
  it('lists every work endpoint in docs/http-api.md with its method, path and access', () => {
    const page = readFileSync(new URL('../docs/http-api.md', import.meta.url), 'utf8');
    for (const endpoint of workEndpoints) {
      const path = endpoint.path.replace(/:(\w+)/g, '{$1}').replace(/[{}]/g, '\\$&');
      const row = new RegExp(
        `^\\| ${endpoint.method} +\\| \`${path}\` +\\| ${endpoint.operationId} +\\| ${endpoint.access} +\\|$`,
        'm',
      );
      expect(page, endpoint.operationId).toMatch(row);
    }
  });

  it('lists every work path with its operationId, parameters and access, and the event stream', async () => {
    const opened = await backends[0]!.open();
    const { deps } = await seedTokens(opened.store);
    const app = await buildApp({ deps, logger: false });
    try {
      const reply = await app.inject({
        method: 'GET',
        url: '/v1/openapi.json',
        headers: { host: '127.0.0.1:4680' },
      });
      const doc = reply.json<{ paths: Record<string, Record<string, Record<string, any>>> }>(); // eslint-disable-line @typescript-eslint/no-explicit-any
      const expected: Record<string, [string, string, string[]]> = {
        '/v1/sessions': ['post', 'start_session', []],
        '/v1/sessions/{session_id}/end': ['post', 'end_work_session', ['session_id']],
        '/v1/sessions/{session_id}/work': ['get', 'get_work', ['session_id']],
        '/v1/sessions/{session_id}/transcript': ['get', 'get_transcript', ['session_id']],
        '/v1/sessions/{session_id}/work/contracts': ['post', 'create_work', ['session_id']],
        '/v1/sessions/{session_id}/work/confirm': ['post', 'confirm_work', ['session_id']],
        '/v1/sessions/{session_id}/work/revise': ['post', 'revise_work', ['session_id']],
        '/v1/sessions/{session_id}/work/reconcile': ['post', 'reconcile_work', ['session_id']],
        '/v1/sessions/{session_id}/work/items/{item_id}/transition': [
          'post',
          'transition_work_item',
          ['session_id', 'item_id'],
        ],
        '/v1/sessions/{session_id}/work/items/{item_id}/retry': [
          'post',
          'retry_work_item',
          ['session_id', 'item_id'],
        ],
        '/v1/sessions/{session_id}/work/items/{item_id}/cancel': [
          'post',
          'cancel_work_item',
          ['session_id', 'item_id'],
        ],
        '/v1/sessions/{session_id}/work/items/{item_id}/reassign': [
          'post',
          'reassign_work_item',
          ['session_id', 'item_id'],
        ],
        '/v1/sessions/{session_id}/work/items/{item_id}/evidence': [
          'post',
          'attach_work_evidence',
          ['session_id', 'item_id'],
        ],
        '/v1/sessions/work/query': ['post', 'query_work', []],
        '/v1/sessions/{session_id}/work/items/cancel': ['post', 'cancel_work_items', ['session_id']],
        '/v1/sessions/{session_id}/events': ['get', 'work_events', ['session_id']],
      };
      for (const [path, [method, operationId, params]] of Object.entries(expected)) {
        const operation = doc.paths[path]?.[method];
        expect(operation, path).toMatchObject({ operationId, security: [{ bearer: [] }, { session: [] }] });
        expect(
          (operation!.parameters as { name: string; in: string }[])
            .filter((p) => p.in === 'path')
            .map((p) => p.name),
          path,
        ).toEqual(params);
        // The routes are really there.
        const route = path.replace(/\{(\w+)\}/g, ':$1');
        expect(app.hasRoute({ method: method.toUpperCase(), url: route }), path).toBe(true);
      }
      // Each 200 answer is typed with the endpoint's published result schema.
      const answer = (path: string, method: string): unknown =>
        doc.paths[path]![method]!.responses['200'].content['application/json'].schema;
      expect(answer('/v1/sessions/{session_id}/work', 'get')).toMatchObject({
        type: 'object',
        required: [
          'session_id',
          'position',
          'projection',
          'terminal',
          'contract',
          'warnings',
          'control_block',
        ],
      });
      expect(answer('/v1/sessions', 'post')).toMatchObject({
        properties: { schema: { const: 'baton.session-header/v1' } },
      });
      expect(answer('/v1/sessions/work/query', 'post')).toMatchObject({ required: ['sessions'] });
      expect(answer('/v1/sessions/{session_id}/work/items/cancel', 'post')).toMatchObject({
        required: ['session_id', 'items', 'work'],
      });
      const transition = doc.paths['/v1/sessions/{session_id}/work/items/{item_id}/transition']!.post!;
      const schema = transition.requestBody.content['application/json'].schema;
      expect(schema).toMatchObject({ type: 'object', additionalProperties: false });
      expect(schema.required).toEqual(['revision', 'to']);
      expect(schema.properties.to.enum).toContain('ready_for_verification');
      expect(transition['x-baton-access']).toBe('write');
      const events = doc.paths['/v1/sessions/{session_id}/events']!.get!;
      expect(events.responses['200'].content).toHaveProperty('text/event-stream');
      expect(events['x-baton-events']).toEqual(
        expect.arrayContaining([
          'WorkContractCreated',
          'WorkItemChanged',
          'WorkNeedsInput',
          'WorkVerificationFinished',
        ]),
      );
    } finally {
      await app.close();
      await opened.dispose();
    }
  });
});
