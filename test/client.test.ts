/**
 * The typed client against a real Baton server (src/http/server.ts on a free port, SQLite in a
 * temporary folder): one method per registry operation, GET as query parameters, POST as JSON,
 * bearer auth, and every failure as a BatonError with the server's code and data.
 */
import { createServer as createHttpServer } from 'node:http';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createToken } from '../src/app/auth.ts';
import type { AppDeps } from '../src/app/deps.ts';
import { operations } from '../src/app/operations.ts';
import { createClient, methodName, type BatonClient, type OperationId } from '../src/client/index.ts';
import { systemClock } from '../src/core/clock.ts';
import { defaultWorkConfig } from '../src/core/work/config.ts';
import { openApiDocument } from '../src/http/openapi.ts';
import { workEndpoints } from '../src/http/work-api.ts';
import { startServer } from '../src/http/server.ts';
import { rejection } from './helpers/errors.ts';
import { tempSqliteStore } from './helpers/sqlite.ts';

/** Every operation the client types, as a value: the compiler checks it lists them all. */
const typed: Record<OperationId, true> = {
  capture_source: true,
  retract_source: true,
  create_work_contract: true,
  handoff_current_work: true,
  commit_handoff: true,
  continue_handoff: true,
  acknowledge_handoff: true,
  record_task_outcome: true,
  get_report: true,
  get_work_continuity: true,
  list_experience_candidates: true,
  review_experience: true,
  prepare_context: true,
  get_metrics: true,
};

let opened: Awaited<ReturnType<typeof tempSqliteStore>>;
let server: { url: string; close(): Promise<void> };
let token: string;
let readOnly: string;
let client: BatonClient;
const requests: { method: string; url: URL; headers: Headers; body: string | undefined }[] = [];

const recordingFetch: typeof fetch = async (input, init) => {
  requests.push({
    method: init?.method ?? 'GET',
    url: new URL(input instanceof Request ? input.url : input),
    headers: new Headers(init?.headers),
    body: typeof init?.body === 'string' ? init.body : undefined,
  });
  return fetch(input, init);
};

beforeAll(async () => {
  opened = await tempSqliteStore();
  const deps: AppDeps = { store: opened.store, clock: systemClock };
  await opened.store.createProject('alpha');
  await opened.store.createProject('beta');
  token = (await createToken(deps, { project_id: 'alpha' })).token;
  readOnly = (await createToken(deps, { project_id: 'alpha', read_only: true })).token;
  server = await startServer({ deps, port: 0, logger: false });
  client = createClient({ baseUrl: server.url, token, fetch: recordingFetch });
});

afterAll(async () => {
  await server?.close();
  await opened?.dispose();
});

/** An answer as a Baton server sends it: JSON with the baton-api header. */
function batonAnswer(status: number, body: string): Response {
  return new Response(body, { status, headers: { 'content-type': 'application/json', 'baton-api': 'v1' } });
}

/** A client whose server answers every request 200 with body, as Baton does. */
function answering(body: unknown) {
  return createClient({
    baseUrl: 'http://baton.test',
    token,
    fetch: async () => batonAnswer(200, JSON.stringify(body)),
  });
}

describe('typed client', () => {
  it('has one method per registry operation, named in camelCase', () => {
    expect(Object.keys(typed).sort()).toEqual(operations.map((operation) => operation.operationId).sort());
    for (const { operationId } of operations) {
      expect(
        typeof (client as unknown as Record<string, unknown>)[methodName(operationId)],
        operationId,
      ).toBe('function');
    }
    expect(methodName('list_experience_candidates')).toBe('listExperienceCandidates');
  });

  it('has a method for every operation of /v1/openapi.json a token calls', () => {
    // The web login and logout are the page's (a cookie is no client credential); health and
    // the document itself are not Baton operations.
    const notForClients = new Set(['create_session', 'end_session', 'health', 'openapi']);
    const document = openApiDocument(4680, defaultWorkConfig) as {
      paths: Record<string, Record<string, { operationId: string }>>;
    };
    const ids = Object.values(document.paths)
      .flatMap((methods) => Object.values(methods).map((operation) => operation.operationId))
      .filter((operationId) => !notForClients.has(operationId));
    // An operationId names one operation: OpenAPI requires it, and the client's methods are named by it.
    const all = Object.values(document.paths).flatMap((methods) =>
      Object.values(methods).map((operation) => operation.operationId),
    );
    expect(all.filter((id, at) => all.indexOf(id) !== at)).toEqual([]);
    expect(ids.length).toBe(operations.length + workEndpoints.length + 1);
    for (const operationId of ids) {
      expect(
        typeof (client as unknown as Record<string, unknown>)[methodName(operationId)],
        operationId,
      ).toBe('function');
    }
  });

  it('runs the whole relay: contract, handoff, commit, continue, ack, outcome, report', async () => {
    const scope_id = 'billing';
    const contract = await client.createWorkContract({
      scope_id,
      source_id: 'contract-1',
      objective: 'Export invoices as CSV',
      completion_criteria: ['CSV totals match'],
    });
    expect(contract.trust).toBe('untrusted_input');
    expect(contract.receipt.position).toBe(1);

    const log = await client.captureSource({ scope_id, source_id: 'log-1', content: 'tests green' });
    const prepared = await client.handoffCurrentWork({
      scope_id,
      source_id: 'boundary-1',
      objective: 'Export invoices as CSV',
      disposition: 'continue',
      current_state: [{ text: 'tests pass', basis: 'verified', evidence: [log.source_ref] }],
      next_action: { text: 'Compare totals on real data', basis: 'declared' },
    });
    expect(prepared.prepared_handoff.base_revision).toBe(0);
    const revision = await client.commitHandoff({ scope_id, prepared: prepared.digest, expected_head: 0 });
    expect(revision.revision).toBe(1);

    const resolution = await client.continueHandoff({ scope_id, selection: 'latest' });
    expect(resolution.selection).toEqual({ kind: 'exact', revision: 1, digest: revision.prepared_digest });
    expect(resolution.evidence).toBe('available');

    const ack = await client.acknowledgeHandoff({
      scope_id,
      source_id: 'receipt-1',
      target: { exact: 1 },
      status: 'accepted',
      receiver_checks: { live_workspace: 'confirmed', capability: 'confirmed', authorization: 'confirmed' },
    });
    expect(ack.record.status).toBe('accepted');

    const outcome = await client.recordTaskOutcome({
      scope_id,
      source_id: 'outcome-1',
      objective: 'Export invoices as CSV',
      status: 'succeeded',
      summary: 'Totals match',
      handoff_receipt_ref: ack.receipt.source_ref,
      checks: [{ name: 'unit', status: 'passed', basis: 'verified', evidence: [log.source_ref] }],
    });
    expect(outcome.record.handoff_receipt_ref).toEqual(ack.receipt.source_ref);

    const continuity = await client.getWorkContinuity({ scope_id });
    expect(continuity.transfer_state).toBe('accepted');
    expect(continuity.outcome_state).toBe('covered');

    const workstream = await client.getReport({ scope_id });
    expect(workstream.revision_count).toBe(1);
    const project = await client.getReport();
    expect(project.project_id).toBe('alpha');
    expect(project.workstreams.map((w) => w.scope_id)).toEqual([scope_id]);
    const markdown = await client.getReport({ scope_id, format: 'markdown' });
    expect(markdown.markdown).toContain('Compare totals on real data');

    const [candidate] = await client.listExperienceCandidates({ scope_id });
    expect(candidate?.status).toBe('pending');
    const reviewed = await client.reviewExperience({
      scope_id,
      candidate: candidate!.candidate,
      decision: 'approved',
      note: 'holds',
    });
    expect(reviewed.candidate.status).toBe('approved');
    const context = await client.prepareContext({ scope_id });
    expect(context.handoff?.revision).toBe(1);
    expect(context.experience).toHaveLength(1);
    const metrics = await client.getMetrics();
    expect(metrics.handoff_result_coverage_rate.rate).toBe(1);

    const retracted = await client.retractSource({ scope_id, source_id: 'log-1', reason: 'test' });
    expect(retracted.retracted).not.toBeNull();
    const after = await client.invoke('continue_handoff', { scope_id, selection: { exact: 1 } });
    expect(after.evidence).toBe('unavailable');
  });

  it('sends GET input as query parameters and POST input as JSON, with the bearer token', async () => {
    requests.length = 0;
    await client.getWorkContinuity({ scope_id: 'billing', through: 1 });
    await client.captureSource({ scope_id: 'notes', source_id: 'n', content: { a: 1 } });
    const [get, post] = requests;
    expect(get?.method).toBe('GET');
    expect(get?.url.pathname).toBe('/v1/work/continuity');
    expect(Object.fromEntries(get!.url.searchParams)).toEqual({ scope_id: 'billing', through: '1' });
    expect(get?.body).toBeUndefined();
    expect(get?.headers.get('authorization')).toBe(`Bearer ${token}`);
    expect(post?.method).toBe('POST');
    expect(post?.url.pathname).toBe('/v1/work/sources/capture');
    expect(post?.headers.get('content-type')).toBe('application/json');
    expect(JSON.parse(post!.body!)).toEqual({ scope_id: 'notes', source_id: 'n', content: { a: 1 } });
  });

  it("surfaces the server's error as a BatonError with its code, message and data", async () => {
    const conflict = await rejection(client.captureSource({ scope_id: 'notes', source_id: 'n', content: 2 }));
    expect(conflict.code).toBe('conflict');
    expect(conflict.data.source_id).toBe('n');
    expect(conflict.data.existing_digest).toMatch(/^sha256:/);

    const invalid = await rejection(
      client.createWorkContract({ scope_id: 'x', source_id: 'c', objective: 'o', completion_criteria: [] }),
    );
    expect(invalid.code).toBe('invalid_input');
    expect(invalid.data.issues).toEqual([expect.objectContaining({ path: 'completion_criteria' })]);

    const missing = await rejection(
      client.continueHandoff({ scope_id: 'nothing-here', selection: 'latest' }),
    );
    expect(missing.code).toBe('not_found');

    const stale = await rejection(
      client.commitHandoff({ scope_id: 'billing', prepared: `sha256:${'0'.repeat(64)}`, expected_head: 0 }),
    );
    expect(stale.code).toBe('not_found');

    const unknown = createClient({ baseUrl: server.url, token: 'baton_not-a-real-token' });
    expect((await rejection(unknown.getMetrics())).code).toBe('unauthorized');

    const reader = createClient({ baseUrl: server.url, token: readOnly });
    expect((await reader.getMetrics()).project_id).toBe('alpha');
    const forbidden = await rejection(
      reader.captureSource({ scope_id: 'notes', source_id: 'r', content: 1 }),
    );
    expect(forbidden.code).toBe('forbidden');
  });

  it('reaches every session it can start: "." and "..", which no URL path can name, are refused as ids', async () => {
    for (const session_id of ['.', '..']) {
      const refused = await rejection(client.startSession({ session_id }));
      expect(refused.code).toBe('invalid_input');
      expect(refused.message).toContain('"." or ".."');
    }
    for (const session_id of ['a.b', '...', '.hidden', 'with space']) {
      await client.startSession({ session_id });
      expect((await client.getWork({ session_id })).session_id).toBe(session_id);
    }
  });

  it('reports a body over the limit as payload_too_large every time, never as an unreachable server', async () => {
    for (const size of [2.2, 3, 10]) {
      const content = 'x'.repeat(Math.round(size * 1024 * 1024));
      const error = await rejection(
        client.captureSource({ scope_id: 'big', source_id: `big-${size}`, content }),
      );
      expect({ size, code: error.code }).toEqual({ size, code: 'payload_too_large' });
      expect(error.data).toMatchObject({ limit: 2 * 1024 * 1024 });
    }
    await expect(client.getWorkContinuity({ scope_id: 'big' })).resolves.toMatchObject({ counts: {} });
  });

  it('turns a network failure into BatonError unavailable', async () => {
    const closed = await startServer({
      deps: { store: opened.store, clock: systemClock },
      port: 0,
      logger: false,
    });
    await closed.close();
    const offline = createClient({ baseUrl: closed.url, token });
    const error = await rejection(offline.getMetrics());
    expect(error.code).toBe('unavailable');
    expect(error.message).toContain(closed.url);
  });

  it('gives up on a server that accepts and never answers, as unavailable, after its timeout', async () => {
    const sockets: Socket[] = [];
    const silent = createServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as AddressInfo;
    try {
      const client = createClient({ baseUrl: `http://127.0.0.1:${port}`, token, timeoutMs: 300 });
      const error = await rejection(client.getMetrics());
      expect(error.code).toBe('unavailable');
      expect(error.message).toBe(`the Baton server at http://127.0.0.1:${port} did not answer within 300 ms`);
      expect(sockets.length).toBe(1);
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });

  it('refuses a successful answer from a server that is not Baton, instead of reading it', async () => {
    const other = createHttpServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
    const { port } = other.address() as AddressInfo;
    try {
      const client = createClient({ baseUrl: `http://127.0.0.1:${port}`, token });
      const error = await rejection(client.getMetrics());
      expect(error.code).toBe('unavailable');
      expect(error.message).toContain('but not as a Baton server (no baton-api: v1 header)');
    } finally {
      await new Promise((resolve) => other.close(resolve));
    }
  });

  it('refuses a Baton answer whose body is no result (null, a string, a number) as unavailable', async () => {
    for (const body of ['null', '"text"', '42', 'true']) {
      const client = createClient({
        baseUrl: 'http://baton.test',
        token,
        fetch: async () => batonAnswer(200, body),
      });
      const error = await rejection(client.getMetrics());
      expect(error.code, body).toBe('unavailable');
      expect(error.message, body).toMatch(
        /^the server at http:\/\/baton\.test answered get_metrics with .+, not a result: check --server/,
      );
    }
  });

  it("refuses an answer that does not fit the operation's published result, naming the field", async () => {
    const metrics = {
      project_id: 'acme',
      clarification_rate: { rate: null, numerator: 0, denominator: 0 },
      evidence_availability_rate: { rate: null, numerator: 0, denominator: 0 },
      handoff_result_coverage_rate: { rate: null, numerator: 0, denominator: 0 },
      counts: {
        receipts: 0,
        accepted_receipts: 0,
        outcomes: 0,
        verified_passed_checks: 0,
        declared_passed_checks: 0,
      },
    };
    for (const [body, field] of [
      [{}, 'project_id'],
      [[], 'the answer'],
      [{ ...metrics, counts: { ...metrics.counts, receipts: 'many' } }, 'counts.receipts'],
      [{ ...metrics, clarification_rate: null }, 'clarification_rate'],
    ] as const) {
      const error = await rejection(answering(body).getMetrics());
      expect(error.code, JSON.stringify(body)).toBe('unavailable');
      expect(error.message).toContain(`answered get_metrics in a form this client cannot read (${field}: `);
    }
    // A later server may add fields: they pass, and reach the caller.
    expect(await answering({ ...metrics, added_later: true }).getMetrics()).toEqual({
      ...metrics,
      added_later: true,
    });
  });

  it('refuses a managed-work answer that does not fit its published result, naming the field', async () => {
    const snapshot = {
      session_id: 's1',
      position: 1,
      projection: null,
      terminal: null,
      contract: null,
      warnings: [],
      control_block: null,
    };
    for (const [body, field] of [
      [{}, 'session_id'],
      [{ ...snapshot, position: 'one' }, 'position'],
      [{ ...snapshot, warnings: [{ code: 'x' }] }, 'warnings.0.message'],
    ] as const) {
      const error = await rejection(answering(body).getWork({ session_id: 's1' }));
      expect(error.code, JSON.stringify(body)).toBe('unavailable');
      expect(error.message).toContain(`answered get_work in a form this client cannot read (${field}: `);
    }
    const queried = await rejection(
      answering({ sessions: [{ session_id: 's1' }] }).queryWork({ session_ids: ['s1'] }),
    );
    expect(queried.message).toContain('answered query_work in a form this client cannot read (sessions.0');
    expect(await answering({ ...snapshot, added_later: 1 }).getWork({ session_id: 's1' })).toEqual({
      ...snapshot,
      added_later: 1,
    });
  });

  it('refuses a token no header can carry as invalid_input, not as an unreachable server', () => {
    for (const bad of ['baton_\u0001x', 'baton_ x', 'baton_é', '']) {
      expect(() => createClient({ baseUrl: server.url, token: bad })).toThrow(/check --token or BATON_TOKEN/);
      expect(() => createClient({ baseUrl: server.url, token: bad })).toThrow(
        expect.objectContaining({ code: 'invalid_input' }) as Error,
      );
    }
  });

  it('refuses a base URL that is not http(s) as invalid_input', () => {
    for (const baseUrl of ['127.0.0.1:4680', 'not a url', 'ftp://example.com/']) {
      expect(() => createClient({ baseUrl, token })).toThrow(
        expect.objectContaining({ code: 'invalid_input' }) as Error,
      );
    }
  });

  it('refuses a base URL with a user name or password as invalid_input, repeating neither', () => {
    for (const baseUrl of [
      'http://ann:hunter2@127.0.0.1:9',
      'https://hunter2@baton.test/',
      'ann:hunter2@127.0.0.1',
    ]) {
      let thrown: unknown;
      try {
        createClient({ baseUrl, token });
      } catch (error) {
        thrown = error;
      }
      expect(thrown, baseUrl).toMatchObject({ code: 'invalid_input' });
      expect(JSON.stringify(thrown) + String(thrown), baseUrl).not.toContain('hunter2');
    }
  });

  it('keeps a path prefix of the base URL and maps a bare error status to a code', async () => {
    const seen: string[] = [];
    const answer =
      (status: number, body: string): typeof fetch =>
      async (input) => {
        seen.push(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);
        return batonAnswer(status, body);
      };
    const prefixed = createClient({ baseUrl: 'http://baton.test/api', token, fetch: answer(200, '{}') });
    expect((await rejection(prefixed.getMetrics())).code).toBe('unavailable');
    expect(seen).toEqual(['http://baton.test/api/v1/work/metrics']);
    const gateway = createClient({ baseUrl: 'http://baton.test', token, fetch: answer(502, 'Bad gateway') });
    const error = await rejection(gateway.getMetrics());
    expect(error.code).toBe('unavailable');
    expect(error.data).toEqual({ status: 502 });
  });
});
