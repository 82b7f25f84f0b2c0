/**
 * The authorization matrix over every route of the registry, on every backend: without a
 * credential every route is 401; a read-only token is 403 on every write; a token of another
 * project never reaches this project's objects (404, a refused citation, or an empty view) and
 * changes nothing here; a session cookie writes only with its CSRF token.
 */
/* eslint-disable @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-member-access -- reply bodies are parsed JSON, read only in assertions */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createToken } from '../src/app/auth.ts';
import { operations, type Operation } from '../src/app/operations.ts';
import { buildApp, startServer } from '../src/http/server.ts';
import {
  callServer,
  inputs,
  project_id,
  rival_project_id,
  scope_id,
  seedTokens,
  seedWorkstream,
  snapshotHeads,
  startHarness,
  type HttpHarness,
  type Reply,
  type Workstream,
} from './helpers/http.ts';
import { backends } from './helpers/stores.ts';

/** A valid call of each operation that names this project's objects (fresh ids for writes). */
function probes(w: Workstream): Record<string, { input: Record<string, unknown> }> {
  return {
    capture_source: { input: inputs.capture('ci-log', 'content the rival never saw') },
    retract_source: { input: { scope_id, source_id: 'ci-log', reason: 'remove it' } },
    create_work_contract: { input: inputs.contract('contract-probe', w.log) },
    handoff_current_work: { input: inputs.boundary('boundary-probe', w.log) },
    commit_handoff: { input: { scope_id, prepared: w.prepared_digest, expected_head: 0 } },
    continue_handoff: { input: { scope_id, selection: { exact: w.revision } } },
    acknowledge_handoff: { input: inputs.accept('receipt-probe', w.revision) },
    record_task_outcome: { input: inputs.outcome('outcome-probe', w.receipt, w.log) },
    get_report: { input: { scope_id } },
    get_work_continuity: { input: { scope_id } },
    list_experience_candidates: { input: { scope_id } },
    review_experience: { input: { scope_id, candidate: w.outcome, decision: 'approved', note: 'ok' } },
    prepare_context: { input: { scope_id } },
    get_metrics: { input: {} },
  };
}

function send(
  h: HttpHarness,
  operation: Operation,
  input: Record<string, unknown>,
  options: { token?: string | null; headers?: Record<string, string> },
): Promise<Reply> {
  return operation.method === 'GET'
    ? h.call('GET', operation.path, { ...options, query: input as Record<string, string> })
    : h.call('POST', operation.path, { ...options, body: input });
}

/** What a rival's call may answer: refused as not found, or a view with nothing of this project in it. */
function rivalOutcome(
  operation: Operation,
  reply: Reply,
): 'not_found' | 'refused_citation' | 'empty' | 'isolated' {
  if (reply.status === 404 && reply.body?.error?.code === 'not_found') return 'not_found';
  if (reply.status === 422 && /citation unavailable: missing|is missing/.test(reply.text))
    return 'refused_citation';
  if (reply.status === 200 && operation.operationId === 'capture_source' && reply.body.position === 1) {
    return 'isolated';
  }
  const body = reply.body as Record<string, unknown> | unknown[];
  const empty =
    reply.status === 200 &&
    (Array.isArray(body)
      ? body.length === 0
      : operation.operationId === 'get_metrics'
        ? (body as { counts: { receipts: number; outcomes: number } }).counts.receipts === 0 &&
          (body as { counts: { outcomes: number } }).counts.outcomes === 0
        : operation.operationId === 'prepare_context'
          ? body.handoff === null &&
            body.work_contract === null &&
            (body.experience as unknown[]).length === 0
          : body.revision_count === 0 ||
            (body.current === null && (body.timeline as unknown[] | undefined)?.length === 0));
  if (empty) return 'empty';
  throw new Error(`${operation.operationId}: the rival got ${reply.status} ${reply.text}`);
}

const writes = operations.filter((operation) => operation.access === 'write');
const reads = operations.filter((operation) => operation.access === 'read');

for (const backend of backends) {
  describe(`authorization matrix on ${backend.name}`, () => {
    let h: HttpHarness;
    let w: Workstream;
    let before: Record<string, number>;

    beforeEach(async () => {
      h = await startHarness(backend);
      w = await seedWorkstream(h.call);
      before = await snapshotHeads(h.deps.store, project_id);
    });
    afterEach(() => h.dispose());

    it('covers every operation of the registry', () => {
      expect(Object.keys(probes(w)).sort()).toEqual(
        operations.map((operation) => operation.operationId).sort(),
      );
    });

    it('refuses every route without a credential or with a bad one: 401, nothing written', async () => {
      const revoked = await createToken(h.deps, { project_id, label: 'revoked' });
      await h.deps.store.revokeToken(project_id, revoked.token_id);
      const credentials: { token?: string | null; headers?: Record<string, string> }[] = [
        { token: null },
        { token: 'baton_not-a-real-token' },
        { token: revoked.token },
        { token: null, headers: { authorization: `Basic ${Buffer.from('a:b').toString('base64')}` } },
        { token: null, headers: { authorization: `Bearer ${h.tokens.writer} extra` } },
        { token: null, headers: { cookie: 'baton_session=forged' } },
      ];
      let denied = 0;
      let total = 0;
      for (const operation of operations) {
        for (const credential of credentials) {
          const reply = await send(h, operation, probes(w)[operation.operationId]!.input, credential);
          total += 1;
          if (reply.status === 401 && reply.body?.error?.code === 'unauthorized') denied += 1;
          else
            throw new Error(
              `${operation.operationId} ${JSON.stringify(credential)}: ${reply.status} ${reply.text}`,
            );
        }
      }
      expect(denied).toBe(total);
      expect(total).toBe(operations.length * credentials.length);
      expect(await snapshotHeads(h.deps.store, project_id)).toEqual(before);
    });

    it('forbids every write to a read-only token (403) and lets it read', async () => {
      let denied = 0;
      for (const operation of writes) {
        const reply = await send(h, operation, probes(w)[operation.operationId]!.input, {
          token: h.tokens.reader,
        });
        expect([operation.operationId, reply.status, reply.body?.error?.code]).toEqual([
          operation.operationId,
          403,
          'forbidden',
        ]);
        denied += 1;
      }
      expect(denied).toBe(writes.length);
      for (const operation of reads) {
        const reply = await send(h, operation, probes(w)[operation.operationId]!.input, {
          token: h.tokens.reader,
        });
        expect([operation.operationId, reply.status]).toEqual([operation.operationId, 200]);
      }
      expect(await snapshotHeads(h.deps.store, project_id)).toEqual(before);
    });

    it("never shows or changes another project's objects: 404, a refused citation, or an empty view", async () => {
      const outcomes: Record<string, string> = {};
      // capture_source last: the rival's own ci-log must not exist while the others probe.
      const ordered = [...operations].sort(
        (a, b) => Number(a.operationId === 'capture_source') - Number(b.operationId === 'capture_source'),
      );
      for (const operation of ordered) {
        const input = probes(w)[operation.operationId]!.input;
        const reply = await send(h, operation, input, { token: h.tokens.rival });
        outcomes[operation.operationId] = rivalOutcome(operation, reply);
        // Nothing of this project reaches the rival beyond what it sent: no digest, no text.
        const secrets = ['acme-private', w.log.digest, w.prepared_digest, w.receipt.digest, w.outcome.digest];
        for (const secret of secrets.filter((value) => !JSON.stringify(input).includes(value))) {
          expect(reply.text, operation.operationId).not.toContain(secret);
        }
      }
      expect(outcomes).toEqual({
        capture_source: 'isolated',
        retract_source: 'not_found',
        create_work_contract: 'refused_citation',
        handoff_current_work: 'refused_citation',
        commit_handoff: 'not_found',
        continue_handoff: 'not_found',
        acknowledge_handoff: 'not_found',
        record_task_outcome: 'refused_citation',
        get_report: 'empty',
        get_work_continuity: 'empty',
        list_experience_candidates: 'empty',
        review_experience: 'not_found',
        prepare_context: 'empty',
        get_metrics: 'empty',
      });
      // The rival's capture landed in its own project, under the same names.
      expect(await rivalContent(h, 'ci-log')).toBe('content the rival never saw');
      expect(await snapshotHeads(h.deps.store, project_id)).toEqual(before);
      expect((await h.deps.store.readSource(project_id, w.log)).content).toContain('FAIL');
    });

    it('needs the CSRF token with every cookie request; cookie requests carrying it pass', async () => {
      const login = await h.call('POST', '/v1/session');
      expect(login.status).toBe(200);
      expect(login.body).toEqual({
        csrf: expect.any(String),
        expires_at: expect.any(String),
        project_id,
        read_only: false,
      });
      const cookie = login.headers.get('set-cookie')!;
      expect(cookie).toMatch(new RegExp(`^baton_session_${h.port}=[A-Za-z0-9_-]{43};`));
      expect(cookie).toContain('HttpOnly');
      expect(cookie).toContain('SameSite=Strict');
      expect(cookie).toContain('Path=/');
      expect(cookie).not.toContain('Secure');
      const session = { cookie: cookie.split(';')[0]! };

      // Cookies are not kept apart by port: any other service on this host receives this one.
      // The cookie alone, or with a wrong CSRF token, must neither write nor read.
      let denied = 0;
      for (const operation of [...writes, ...reads]) {
        for (const headers of [session, { ...session, 'x-csrf-token': 'wrong' }]) {
          const reply = await send(h, operation, probes(w)[operation.operationId]!.input, {
            token: null,
            headers,
          });
          expect([operation.operationId, reply.status, reply.body?.error?.code]).toEqual([
            operation.operationId,
            403,
            'forbidden',
          ]);
          denied += 1;
        }
      }
      expect(denied).toBe((writes.length + reads.length) * 2);
      expect(await snapshotHeads(h.deps.store, project_id)).toEqual(before);

      for (const operation of reads) {
        const reply = await send(h, operation, probes(w)[operation.operationId]!.input, {
          token: null,
          headers: { ...session, 'x-csrf-token': login.body.csrf },
        });
        expect([operation.operationId, reply.status]).toEqual([operation.operationId, 200]);
      }
      const write = await h.call('POST', '/v1/work/sources/capture', {
        token: null,
        headers: { ...session, 'x-csrf-token': login.body.csrf },
        body: inputs.capture('from-the-page'),
      });
      expect(write.status).toBe(200);

      const logout = await h.call('DELETE', '/v1/session', { token: null, headers: session });
      expect(logout.status).toBe(204);
      expect(logout.headers.get('set-cookie')).toMatch(new RegExp(`^baton_session_${h.port}=;`));
      const after = await h.call('GET', '/v1/work/metrics', {
        token: null,
        headers: { ...session, 'x-csrf-token': login.body.csrf },
      });
      expect([after.status, after.body.error.code]).toEqual([401, 'unauthorized']);
    });

    it('logs in only with a valid token in the Authorization header', async () => {
      for (const token of [null, 'baton_unknown']) {
        const reply = await h.call('POST', '/v1/session', { token });
        expect([reply.status, reply.body.error.code]).toEqual([401, 'unauthorized']);
        expect(reply.headers.get('set-cookie')).toBeNull();
      }
      // The token belongs in the header: a body (a token in it, say) is refused, not ignored.
      for (const body of [{ token: h.tokens.writer }, { project_id: 'acme' }, [], '"x"', 'null']) {
        const reply = await h.call('POST', '/v1/session', { body });
        expect([reply.status, reply.body.error.code], JSON.stringify(body)).toEqual([422, 'invalid_input']);
        expect(reply.body.error.message).toContain('Authorization');
        expect(reply.headers.get('set-cookie')).toBeNull();
      }
      expect((await h.call('POST', '/v1/session', { body: {} })).status).toBe(200);
    });

    it('says whether a session is read-only, and still refuses its writes', async () => {
      const login = await h.call('POST', '/v1/session', { token: h.tokens.reader });
      expect([login.status, login.body.read_only]).toEqual([200, true]);
      const session = {
        cookie: login.headers.get('set-cookie')!.split(';')[0]!,
        'x-csrf-token': login.body.csrf as string,
      };
      const write = await h.call('POST', '/v1/work/sources/capture', {
        token: null,
        headers: session,
        body: { scope_id, source_id: 'by-reader', kind: 'log', content: 'x' },
      });
      expect([write.status, write.body.error.code]).toEqual([403, 'forbidden']);
      const read = await h.call('GET', '/v1/work/metrics', { token: null, headers: session });
      expect(read.status).toBe(200);
    });
  });
}

async function rivalContent(h: HttpHarness, source_id: string): Promise<unknown> {
  for await (const entry of h.deps.store.readStream({
    project_id: rival_project_id,
    kind: 'scope',
    scope_id,
  })) {
    if (entry.source_id === source_id) return entry.content;
  }
  throw new Error(`the rival has no source ${source_id}`);
}

describe('session cookie over a non-loopback name', () => {
  it('is Secure when the page is not plain http on loopback', async () => {
    const opened = await backends[0]!.open();
    const { deps, tokens } = await seedTokens(opened.store);
    const app = await buildApp({ deps, logger: false, allowedHosts: ['baton.example.test'] });
    try {
      const reply = await app.inject({
        method: 'POST',
        url: '/v1/session',
        headers: { host: 'baton.example.test:4680', authorization: `Bearer ${tokens.writer}` },
      });
      expect(reply.statusCode).toBe(200);
      expect(String(reply.headers['set-cookie'])).toMatch(/^baton_session_4680=.*; Secure/);
    } finally {
      await app.close();
      await opened.dispose();
    }
  });
});

describe('session cookies of two servers on one host', () => {
  it('are named by port, so neither overwrites the other nor is read by the other', async () => {
    const opened = await backends[0]!.open();
    const { deps, tokens } = await seedTokens(opened.store);
    const servers = [
      await startServer({ deps, logger: false, port: 0 }),
      await startServer({ deps, logger: false, port: 0 }),
    ];
    try {
      const [a, b] = servers.map((server) => ({ url: server.url, port: Number(new URL(server.url).port) }));
      const logins = [];
      for (const server of [a!, b!]) {
        const login = await callServer(server.url, tokens.writer, 'POST', '/v1/session');
        const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
        expect(cookie.split('=')[0]).toBe(`baton_session_${server.port}`);
        logins.push({ cookie, csrf: login.body.csrf as string });
      }
      // The browser sends both cookies to both servers (cookies ignore the port): each reads its own.
      const jar = logins.map((login) => login.cookie).join('; ');
      for (const [index, server] of [a!, b!].entries()) {
        const reply = await callServer(server.url, null, 'GET', '/v1/work/metrics', {
          token: null,
          headers: { cookie: jar, 'x-csrf-token': logins[index]!.csrf },
        });
        expect(reply.status).toBe(200);
      }
      // B never reads the cookie A set, even with A's CSRF secret.
      const foreign = await callServer(b!.url, null, 'GET', '/v1/work/metrics', {
        token: null,
        headers: { cookie: logins[0]!.cookie, 'x-csrf-token': logins[0]!.csrf },
      });
      expect([foreign.status, foreign.body.error.code]).toEqual([401, 'unauthorized']);
    } finally {
      for (const server of servers) await server.close();
      await opened.dispose();
    }
  });
});
