/**
 * The HTTP API's contract, on every backend over a real socket: the happy path through every
 * route, then each route's refusals with their status, envelope and code; the error mapping of
 * Fastify's own failures and of unexpected errors; the OpenAPI document.
 */
/* eslint-disable @typescript-eslint/no-unsafe-argument, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-member-access -- reply bodies are parsed JSON, read only in assertions */
import { readFileSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { operations } from '../src/app/operations.ts';
import { BatonError } from '../src/core/errors.ts';
import { buildApp, startServer } from '../src/http/server.ts';
import {
  callServer,
  confirmed,
  inputs,
  project_id,
  scope_id,
  seedTokens,
  seedWorkstream,
  startHarness,
  type HttpHarness,
  type Reply,
  type Workstream,
} from './helpers/http.ts';
import { backends, withOverrides } from './helpers/stores.ts';

function expectError(reply: Reply, status: number, code: string): Record<string, unknown> {
  expect({ status: reply.status, code: reply.body?.error?.code }, reply.text).toEqual({ status, code });
  expect(reply.headers.get('content-type')).toMatch(/^application\/json/);
  expect(Object.keys(reply.body as object)).toEqual(['error']);
  expect(typeof reply.body.error.message).toBe('string');
  expect(reply.body.error.details).toBeTypeOf('object');
  return reply.body.error.details as Record<string, unknown>;
}

for (const backend of backends) {
  describe(`HTTP contract on ${backend.name}`, () => {
    let h: HttpHarness;
    /** Every answer of the test, to hold each against its operation's published result schema. */
    let answers: { method: string; path: string; reply: Reply }[] = [];
    const kept = (method: string, path: string) => (reply: Reply) => {
      answers.push({ method, path, reply });
      return reply;
    };
    const post = (path: string, body: unknown) => h.call('POST', path, { body }).then(kept('POST', path));
    const get = (path: string, query: Record<string, string> = {}, headers: Record<string, string> = {}) =>
      h.call('GET', path, { query, headers }).then(kept('GET', path));

    beforeEach(async () => {
      answers = [];
      h = await startHarness(backend);
    });
    afterEach(() => h.dispose());

    it('answers every operation in the shape its published result schema describes', async () => {
      await seedWorkstream((method, path, options) => h.call(method, path, options));
      // The relay below again, for its answers: each 200 JSON answer must fit, and all 14 answer.
      const log = (await post('/v1/work/sources/capture', inputs.capture('log-2'))).body.source_ref;
      await post('/v1/work/sources/capture', inputs.capture('to-retract'));
      await post('/v1/work/sources/retract', { scope_id, source_id: 'to-retract', reason: 'not needed' });
      await post('/v1/work/contracts/create', inputs.contract('contract-2', log));
      const prepared = (await post('/v1/work/handoffs/prepare-current', inputs.boundary('boundary-2', log)))
        .body;
      await post('/v1/work/handoffs/commit', { scope_id, prepared: prepared.digest, expected_head: 1 });
      await post('/v1/work/handoffs/continue', { scope_id, selection: 'latest' });
      const receipt = (await post('/v1/work/handoffs/acknowledge', inputs.accept('receipt-2', 2))).body
        .receipt.source_ref;
      const outcome = (await post('/v1/work/outcomes/record', inputs.outcome('outcome-2', receipt, log)))
        .body;
      for (const query of [{ scope_id }, {}, { scope_id, format: 'markdown' }] as Record<string, string>[])
        await get('/v1/work/report', query);
      await get('/v1/work/continuity', { scope_id });
      await get('/v1/work/experience/candidates', { scope_id });
      await post('/v1/work/experience/review', {
        scope_id,
        candidate: outcome.receipt.source_ref,
        decision: 'approved',
        note: 'a lesson worth keeping',
      });
      await post('/v1/work/context/prepare', { scope_id });
      await get('/v1/work/metrics');

      const answered = new Set<string>();
      for (const { method, path, reply } of answers) {
        const operation = operations.find((entry) => entry.method === method && entry.path === path)!;
        expect([operation.operationId, reply.status, reply.body?.error]).toEqual([
          operation.operationId,
          200,
          undefined,
        ]);
        const checked = operation.output.safeParse(reply.body);
        expect(checked.error?.issues ?? [], operation.operationId).toEqual([]);
        answered.add(operation.operationId);
      }
      expect([...answered].sort()).toEqual(operations.map((operation) => operation.operationId).sort());
      // A wrong shape does not fit: the schemas can fail.
      expect(operations[0]!.output.safeParse({}).success).toBe(false);
    });

    it('runs the whole relay: the four continuity operations, commit, continue, report, continuity, experience, context, metrics', async () => {
      const health = await h.call('GET', '/healthz', { token: null });
      expect([health.status, health.body]).toEqual([200, { status: 'ok' }]);

      const capture = await post('/v1/work/sources/capture', inputs.capture('ci-log'));
      expect(capture.status).toBe(200);
      expect(capture.body).toMatchObject({ source_ref: { scope_id, source_id: 'ci-log' }, position: 1 });
      const log = capture.body.source_ref;
      const again = await post('/v1/work/sources/capture', inputs.capture('ci-log'));
      expect(again.body).toEqual(capture.body);

      const contract = await post('/v1/work/contracts/create', inputs.contract('contract-1', log));
      expect(contract.status).toBe(200);
      expect(contract.body).toMatchObject({
        trust: 'untrusted_input',
        record: { schema: 'baton.work-contract/v1', completion_criteria: ['relevant tests pass'] },
        receipt: { position: 2 },
      });

      const prepared = await post('/v1/work/handoffs/prepare-current', inputs.boundary('boundary-1', log));
      expect(prepared.status).toBe(200);
      expect(prepared.body).toMatchObject({
        digest: expect.stringMatching(/^sha256:/),
        prepared_handoff: { scope_id, base_revision: 0 },
        boundary_receipt: { position: 3 },
        trust: 'untrusted_input',
      });
      // Preparing does not commit.
      expect((await post('/v1/work/handoffs/continue', { scope_id, selection: 'latest' })).status).toBe(404);

      const committed = await post('/v1/work/handoffs/commit', {
        scope_id,
        prepared: prepared.body.digest,
        expected_head: 0,
      });
      expect(committed.status).toBe(200);
      expect(committed.body).toMatchObject({ scope_id, revision: 1, prepared_digest: prepared.body.digest });

      const resumed = await post('/v1/work/handoffs/continue', { scope_id, selection: 'latest' });
      expect(resumed.status).toBe(200);
      expect(resumed.body).toMatchObject({
        selection: { kind: 'exact', revision: 1, digest: prepared.body.digest },
        evidence: 'available',
        trust: 'untrusted_history',
      });

      const ack = await post('/v1/work/handoffs/acknowledge', inputs.accept('receipt-1', 1));
      expect(ack.status).toBe(200);
      expect(ack.body).toMatchObject({
        record: { status: 'accepted', target: { kind: 'exact', revision: 1 }, evidence: 'available' },
        trust: 'untrusted_observation',
      });
      const receipt = ack.body.receipt.source_ref;

      const outcome = await post('/v1/work/outcomes/record', inputs.outcome('outcome-1', receipt, log));
      expect(outcome.status).toBe(200);
      expect(outcome.body).toMatchObject({ record: { status: 'partial' }, trust: 'untrusted_observation' });

      const report = await get('/v1/work/report', { scope_id });
      expect(report.status).toBe(200);
      expect(report.body).toMatchObject({ scope_id, revision_count: 1, current: { revision: 1 } });
      const projectReport = await get('/v1/work/report');
      expect(projectReport.body).toMatchObject({ schema: 'baton.handoff-report/v1', project_id });
      const markdownJson = await get('/v1/work/report', { scope_id, format: 'markdown' });
      expect(markdownJson.headers.get('content-type')).toMatch(/^application\/json/);
      expect(markdownJson.body.markdown).toContain('relay');
      const markdown = await get(
        '/v1/work/report',
        { scope_id, format: 'markdown' },
        { accept: 'text/markdown' },
      );
      expect(markdown.status).toBe(200);
      expect(markdown.headers.get('content-type')).toBe('text/markdown; charset=utf-8');
      expect(markdown.text).toBe(markdownJson.body.markdown);
      const frozen = await get('/v1/work/report', { scope_id, through: '1', position: '3' });
      expect(frozen.body).toMatchObject({ selection: { revision: 1, position: 3 } });

      const continuity = await get('/v1/work/continuity', { scope_id });
      expect(continuity.status).toBe(200);
      expect(continuity.body).toMatchObject({
        scope_id,
        current: { revision: 1 },
        transfer_state: 'accepted',
        outcome_state: 'covered',
        counts: { 'work-contract': 1, 'handoff-boundary': 1, 'handoff-receipt': 1, 'task-outcome': 1 },
      });

      const candidates = await get('/v1/work/experience/candidates', { scope_id });
      expect(candidates.status).toBe(200);
      expect(candidates.body).toHaveLength(1);
      expect(candidates.body[0]).toMatchObject({
        status: 'pending',
        candidate: outcome.body.receipt.source_ref,
      });
      const review = await post('/v1/work/experience/review', {
        scope_id,
        candidate: candidates.body[0].candidate,
        decision: 'approved',
        note: 'A useful lesson',
      });
      expect(review.status).toBe(200);
      expect(review.body.candidate).toMatchObject({ status: 'approved' });

      const context = await post('/v1/work/context/prepare', { scope_id });
      expect(context.status).toBe(200);
      expect(context.body).toMatchObject({
        schema: 'baton.prepared-context/v1',
        project_id,
        handoff: { revision: 1, trust: 'untrusted_history' },
        work_contract: { source_ref: contract.body.receipt.source_ref, trust: 'untrusted_input' },
        experience: [{ status: 'approved' }],
      });

      const metrics = await get('/v1/work/metrics');
      expect(metrics.status).toBe(200);
      expect(metrics.body).toMatchObject({
        project_id,
        counts: { receipts: 1, accepted_receipts: 1, outcomes: 1 },
        handoff_result_coverage_rate: { numerator: 1, denominator: 1 },
      });

      const other = await post(
        '/v1/work/sources/capture',
        inputs.capture('to-forget', 'a secret pasted by mistake'),
      );
      const retracted = await post('/v1/work/sources/retract', {
        scope_id,
        source_id: 'to-forget',
        reason: 'contained a secret',
      });
      expect(retracted.status).toBe(200);
      expect(retracted.body).toMatchObject({
        source_id: 'to-forget',
        digest: other.body.digest,
        content: null,
        retracted: { reason: 'contained a secret' },
      });
    });

    describe('refusals', () => {
      let w: Workstream;
      beforeEach(async () => {
        w = await seedWorkstream(h.call);
      });

      it('capture_source: 422 naming the field, 409 for other content, 413 over the entry limit', async () => {
        const missing = expectError(
          await post('/v1/work/sources/capture', { scope_id, source_id: 'x' }),
          422,
          'invalid_input',
        );
        expect(missing.issues).toContainEqual(expect.objectContaining({ path: 'content' }));
        const unknown = expectError(
          await post('/v1/work/sources/capture', { ...inputs.capture('x'), project_id: 'rival' }),
          422,
          'invalid_input',
        );
        expect(JSON.stringify(unknown)).toContain('project_id');
        const conflict = expectError(
          await post('/v1/work/sources/capture', inputs.capture('ci-log', 'other content')),
          409,
          'conflict',
        );
        expect(conflict.existing_digest).toBe(w.log.digest);
        const large = expectError(
          await post('/v1/work/sources/capture', inputs.capture('big', 'x'.repeat(1_500_000))),
          413,
          'payload_too_large',
        );
        expect(large.limit).toBe(1024 * 1024);
        const reserved = expectError(
          await post('/v1/work/sources/capture', { ...inputs.capture('r'), kind: 'handoff-receipt' }),
          422,
          'invalid_input',
        );
        expect(reserved.issues).toEqual([{ path: 'kind', message: 'reserved kind handoff-receipt' }]);
      });

      it('retract_source: 404 for an unknown source, 422 without a reason', async () => {
        expectError(
          await post('/v1/work/sources/retract', { scope_id, source_id: 'nope', reason: 'r' }),
          404,
          'not_found',
        );
        expectError(
          await post('/v1/work/sources/retract', { scope_id, source_id: 'ci-log' }),
          422,
          'invalid_input',
        );
      });

      it('create_work_contract: 422 without criteria, and for evidence in another scope', async () => {
        const details = expectError(
          await post('/v1/work/contracts/create', {
            ...inputs.contract('c2', w.log),
            completion_criteria: [],
          }),
          422,
          'invalid_input',
        );
        expect((details.issues as { path: string }[])[0]!.path).toBe('completion_criteria');
        const foreign = expectError(
          await post('/v1/work/contracts/create', inputs.contract('c2', { ...w.log, scope_id: 'elsewhere' })),
          422,
          'invalid_input',
        );
        expect(foreign.issues).toEqual([
          { path: 'facts.0.evidence.0', message: 'citation into another scope' },
        ]);
      });

      it('handoff_current_work: 422 for an unknown disposition', async () => {
        const details = expectError(
          await post('/v1/work/handoffs/prepare-current', {
            ...inputs.boundary('b2', w.log),
            disposition: 'maybe',
          }),
          422,
          'invalid_input',
        );
        expect((details.issues as { path: string }[])[0]!.path).toBe('disposition');
      });

      it('commit_handoff: 409 revision_conflict with the actual head, 412 for the wrong base, 404 for an unknown digest', async () => {
        const a = await post('/v1/work/handoffs/prepare-current', inputs.boundary('b-a', w.log));
        const b = await post('/v1/work/handoffs/prepare-current', {
          ...inputs.boundary('b-b', w.log),
          omissions: ['b'],
        });
        expect(
          (await post('/v1/work/handoffs/commit', { scope_id, prepared: a.body.digest, expected_head: 1 }))
            .status,
        ).toBe(200);
        const conflict = expectError(
          await post('/v1/work/handoffs/commit', { scope_id, prepared: b.body.digest, expected_head: 1 }),
          409,
          'revision_conflict',
        );
        expect(conflict).toEqual({ scope_id, expected_head: 1, actual_head: 2 });
        expectError(
          await post('/v1/work/handoffs/commit', { scope_id, prepared: b.body.digest, expected_head: 0 }),
          412,
          'precondition_failed',
        );
        expectError(
          await post('/v1/work/handoffs/commit', {
            scope_id,
            prepared: `sha256:${'0'.repeat(64)}`,
            expected_head: 2,
          }),
          404,
          'not_found',
        );
        expectError(
          await post('/v1/work/handoffs/commit', { scope_id, prepared: a.body.digest, expected_head: -1 }),
          422,
          'invalid_input',
        );
      });

      it('continue_handoff: 404 for a scope without revisions, 422 for a bad selection', async () => {
        expectError(
          await post('/v1/work/handoffs/continue', { scope_id: 'empty', selection: 'latest' }),
          404,
          'not_found',
        );
        expectError(
          await post('/v1/work/handoffs/continue', { scope_id, selection: { exact: 0 } }),
          422,
          'invalid_input',
        );
        expectError(
          await post('/v1/work/handoffs/continue', { scope_id, selection: { exact: 9 } }),
          404,
          'not_found',
        );
      });

      it('acknowledge_handoff: 422 for latest or a missing reason, 412 when cited evidence is gone', async () => {
        const latest = await post('/v1/work/handoffs/acknowledge', {
          ...inputs.accept('r2', 1),
          target: 'latest',
        });
        expect(expectError(latest, 422, 'invalid_input').issues).toEqual([
          { path: 'target', message: expect.any(String) as string },
        ]);
        expect(latest.body.error.message).toContain('call continue_handoff first');
        expectError(
          await post('/v1/work/handoffs/acknowledge', { ...inputs.accept('r2', 1), status: 'declined' }),
          422,
          'invalid_input',
        );
        await post('/v1/work/sources/retract', { scope_id, source_id: 'ci-log', reason: 'leaked' });
        const details = expectError(
          await post('/v1/work/handoffs/acknowledge', inputs.accept('r2', 1)),
          412,
          'precondition_failed',
        );
        expect(details.unavailable_citations).toEqual([
          expect.objectContaining({ citation: w.log, reason: 'retracted' }),
        ]);
        const clarification = await post('/v1/work/handoffs/acknowledge', {
          ...inputs.accept('r3', 1),
          status: 'needs_clarification',
          reason: 'the CI log was retracted',
          receiver_checks: { ...confirmed, capability: 'not_confirmed' },
        });
        expect(clarification.status).toBe(200);
        expect(clarification.body.record).toMatchObject({
          status: 'needs_clarification',
          evidence: 'unavailable',
        });
      });

      it('record_task_outcome: 422 without a summary, and for a receipt ref that is not a receipt', async () => {
        const noSummary: Record<string, unknown> = { ...inputs.outcome('o2', w.receipt, w.log) };
        delete noSummary.summary;
        expectError(await post('/v1/work/outcomes/record', noSummary), 422, 'invalid_input');
        const details = expectError(
          await post('/v1/work/outcomes/record', inputs.outcome('o2', w.log, w.log)),
          422,
          'invalid_input',
        );
        expect((details.issues as { path: string }[])[0]!.path).toBe('handoff_receipt_ref');
      });

      it('get_report, get_work_continuity, list_experience_candidates, get_metrics: 422 for bad or unknown query parameters', async () => {
        expectError(await get('/v1/work/report', { scope_id, through: 'abc' }), 422, 'invalid_input');
        expectError(await get('/v1/work/report', { format: 'pdf' }), 422, 'invalid_input');
        expectError(await get('/v1/work/continuity'), 422, 'invalid_input');
        expectError(await get('/v1/work/continuity', { scope_id, position: '-1' }), 422, 'invalid_input');
        expectError(
          await get('/v1/work/experience/candidates', { project_id: 'rival' }),
          422,
          'invalid_input',
        );
        expectError(await get('/v1/work/metrics', { project_id: 'rival' }), 422, 'invalid_input');
        expectError(
          await h.call('GET', `/v1/work/continuity?scope_id=${scope_id}&scope_id=x`),
          422,
          'invalid_input',
        );
      });

      it('review_experience: 404 for an unknown candidate, 409 for a second, different review', async () => {
        const review = { scope_id, candidate: w.outcome, decision: 'approved', note: 'good' };
        expectError(
          await post('/v1/work/experience/review', {
            ...review,
            candidate: { ...w.outcome, source_id: 'nope' },
          }),
          404,
          'not_found',
        );
        expect((await post('/v1/work/experience/review', review)).status).toBe(200);
        expect((await post('/v1/work/experience/review', review)).status).toBe(200);
        expectError(
          await post('/v1/work/experience/review', { ...review, decision: 'rejected' }),
          409,
          'conflict',
        );
      });

      it('prepare_context: 422 for an unknown field', async () => {
        expectError(
          await post('/v1/work/context/prepare', { scope_id, project_id: 'rival' }),
          422,
          'invalid_input',
        );
      });

      it('answers an unreadable body with 400 invalid_input, and a too large one with 413', async () => {
        const path = '/v1/work/sources/capture';
        expectError(await post(path, '{"scope_id": '), 400, 'invalid_input');
        expectError(await post(path, ''), 400, 'invalid_input');
        expectError(await post(path, '   '), 400, 'invalid_input');
        expectError(
          await h.call('POST', path, { body: 'scope_id=x', headers: { 'content-type': 'text/plain' } }),
          400,
          'invalid_input',
        );
        expectError(
          await h.call('POST', path, {
            body: 'a=1',
            headers: { 'content-type': 'application/x-www-form-urlencoded' },
          }),
          400,
          'invalid_input',
        );
        const deep = expectError(
          await post(path, `${'['.repeat(100_000)}${']'.repeat(100_000)}`),
          400,
          'invalid_input',
        );
        expect(deep).toEqual({ max_depth: 64 });
        expectError(
          await post(path, JSON.stringify(inputs.capture('huge', 'x'.repeat(3 * 1024 * 1024)))),
          413,
          'payload_too_large',
        );
        expectError(await post(path, '[1, 2]'), 422, 'invalid_input');
        expectError(await post(path, 'null'), 422, 'invalid_input');
        // No body at all is an empty body (it was 422, as a missing object).
        expectError(await h.call('POST', path), 400, 'invalid_input');
        expectError(await h.call('GET', '/v1/work/nothing'), 404, 'not_found');
        expectError(await h.call('DELETE', '/v1/work/sources/capture'), 404, 'not_found');
      });

      it('keeps a "__proto__" key of captured content, as the ledger does', async () => {
        const reply = await post(
          '/v1/work/sources/capture',
          '{"scope_id":"relay","source_id":"odd","content":{"__proto__":{"polluted":true},"b":2}}',
        );
        expect(reply.status).toBe(200);
        expect(({} as Record<string, unknown>).polluted).toBeUndefined();
        const entry = await h.deps.store.readSource(project_id, reply.body.source_ref);
        expect(Object.keys(entry.content as object)).toEqual(['__proto__', 'b']);
      });
    });
  });
}

describe('HTTP error mapping of unexpected failures', () => {
  const sqlite = backends[0]!;
  let disposeStore: () => Promise<void>;
  let url: string;
  let close: () => Promise<void>;
  let token: string;

  beforeAll(async () => {
    const opened = await sqlite.open();
    disposeStore = () => opened.dispose();
    const seeded = await seedTokens(opened.store);
    token = seeded.tokens.writer;
    const store = withOverrides(opened.store, {
      listStreams: () => Promise.reject(new Error('disk on fire at /var/secret/path')),
      revisionHead: () => Promise.reject(new BatonError('unavailable', 'PostgreSQL is not answering')),
    });
    const server = await startServer({ deps: { ...seeded.deps, store }, port: 0, logger: false });
    url = server.url;
    close = () => server.close();
  });
  afterAll(async () => {
    await close();
    await disposeStore();
  });

  it('answers any non-BatonError with 500 internal and a generic message naming the request id', async () => {
    const reply = await callServer(url, token, 'GET', '/v1/work/metrics');
    expectError(reply, 500, 'internal');
    expect(reply.body.error.message).not.toContain('disk');
    expect(reply.body.error.details).toEqual({ request_id: expect.any(String) });
  });

  it('answers unavailable with 503', async () => {
    const reply = await callServer(url, token, 'POST', '/v1/work/handoffs/continue', {
      body: { scope_id, selection: 'latest' },
    });
    expectError(reply, 503, 'unavailable');
  });
});

describe('routes and the OpenAPI document', () => {
  const sqlite = backends[0]!;

  it('lists every registry operation in docs/http-api.md with its method, path and access', () => {
    const page = readFileSync(new URL('../docs/http-api.md', import.meta.url), 'utf8');
    for (const operation of operations) {
      const row = new RegExp(
        `^\\| ${operation.method} +\\| \`${operation.path}\` +\\| ${operation.operationId} +\\| ${operation.access} +\\|$`,
        'm',
      );
      expect(page, operation.operationId).toMatch(row);
    }
  });

  it('registers every registry operation at its method and path, and documents it', async () => {
    const opened = await sqlite.open();
    const { deps } = await seedTokens(opened.store);
    const app = await buildApp({ deps, logger: false });
    try {
      const routes: { method: string; url: string; operationId?: unknown }[] = [];
      for (const operation of operations) {
        expect(app.hasRoute({ method: operation.method, url: operation.path }), operation.operationId).toBe(
          true,
        );
        routes.push({ method: operation.method, url: operation.path, operationId: operation.operationId });
      }
      expect(new Set(routes.map((route) => `${route.method} ${route.url}`)).size).toBe(operations.length);

      const reply = await app.inject({
        method: 'GET',
        url: '/v1/openapi.json',
        headers: { host: '127.0.0.1:4680' },
      });
      expect(reply.statusCode).toBe(200);
      const doc = reply.json<{
        openapi: string;
        paths: Record<string, Record<string, Record<string, unknown>>>;
        components: { schemas: Record<string, unknown>; securitySchemes: Record<string, unknown> };
      }>();
      expect(doc.openapi).toBe('3.1.0');
      expect(Object.keys(doc.components.securitySchemes).sort()).toEqual(['bearer', 'csrf', 'session']);
      // The session cookie is named for the port the document was fetched from.
      expect(doc.components.securitySchemes.session).toMatchObject({
        in: 'cookie',
        name: 'baton_session_4680',
      });
      expect(doc.components.securitySchemes.csrf).toMatchObject({ in: 'header', name: 'x-csrf-token' });
      expect(doc.components.schemas.Error).toMatchObject({
        type: 'object',
        required: ['error'],
        properties: { error: { required: ['code', 'message', 'details'] } },
      });
      for (const operation of operations) {
        const documented = doc.paths[operation.path]?.[operation.method.toLowerCase()];
        expect(documented, operation.operationId).toMatchObject({
          operationId: operation.operationId,
          summary: operation.summary,
          security: [{ bearer: [] }, { session: [], csrf: [] }],
          responses: {
            '200': expect.any(Object),
            '401': expect.any(Object),
            // Node's parser answers these before any route: a request too slow, headers too large.
            '408': expect.any(Object),
            '431': expect.any(Object),
            '422': { content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } },
          },
        });
        if (operation.method === 'POST') {
          expect(documented!.requestBody).toMatchObject({
            content: { 'application/json': { schema: { type: 'object', additionalProperties: false } } },
          });
        } else {
          expect(Array.isArray(documented!.parameters)).toBe(true);
        }
      }
      const capture = doc.paths['/v1/work/sources/capture']!.post!.requestBody as {
        content: { 'application/json': { schema: { required: string[] } } };
      };
      expect(capture.content['application/json'].schema.required).toEqual([
        'scope_id',
        'source_id',
        'content',
      ]);
      // acknowledge_handoff takes an exact target: the published schema offers no latest.
      const acknowledge = doc.paths['/v1/work/handoffs/acknowledge']!.post!.requestBody as {
        content: { 'application/json': { schema: { properties: { target: unknown } } } };
      };
      expect(JSON.stringify(acknowledge.content['application/json'].schema.properties.target)).not.toContain(
        'latest',
      );
      // Each 200 answer is typed with the operation's published result schema.
      const answer = (path: string, method: string) =>
        (
          doc.paths[path]![method]!.responses as Record<
            string,
            { content: Record<string, { schema: unknown }> }
          >
        )['200']!.content['application/json']!.schema;
      expect(answer('/v1/work/sources/capture', 'post')).toMatchObject({
        type: 'object',
        required: ['source_ref', 'position', 'digest'],
        properties: { source_ref: { type: 'object', required: ['scope_id', 'source_id', 'digest'] } },
      });
      expect(answer('/v1/work/continuity', 'get')).toMatchObject({
        properties: {
          transfer_state: { enum: expect.arrayContaining(['awaiting_receipt', 'accepted']) as unknown },
        },
      });
      expect(answer('/v1/work/report', 'get')).toMatchObject({ anyOf: expect.any(Array) as unknown });
      for (const operation of operations) {
        const schema = answer(operation.path, operation.method.toLowerCase()) as Record<string, unknown>;
        expect(schema.additionalProperties, operation.operationId).toBeUndefined();
      }
      const report = doc.paths['/v1/work/report']!.get!.parameters as { name: string; required: boolean }[];
      expect(report.map((parameter) => parameter.name)).toEqual([
        'scope_id',
        'through',
        'position',
        'format',
      ]);
      expect(report.every((parameter) => !parameter.required)).toBe(true);
    } finally {
      await app.close();
      await opened.dispose();
    }
  });
});
