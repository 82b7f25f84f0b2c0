/**
 * The authorization matrix over every route the server registers, found by listening to the
 * routes Fastify registers rather than by a hand list: each route is public, bearer-only (/mcp,
 * the web login) or a read or write of the operation registry or the work table; a route the
 * matrix cannot classify fails it. Without a credential or with a bad one every guarded route is
 * 401; a read-only token is 403 on every write and reads; a session cookie without its CSRF token
 * opens nothing; another project's token never reaches this project's managed work. Nothing of
 * this project is written by any of it. A foreign Host or Origin is 403 on every route. Every
 * route a client calls is in /v1/openapi.json.
 */
/* eslint-disable @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-member-access -- reply bodies are parsed JSON, read only in assertions */
import type * as FastifyModule from 'fastify';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createToken } from '../src/app/auth.ts';
import { listSessions } from '../src/app/work-list.ts';
import { canonicalJson } from '../src/core/canonical.ts';
import { operations, type Access } from '../src/app/operations.ts';
import { workEndpoints } from '../src/http/work-api.ts';
import { eventsPath } from '../src/http/work-routes.ts';
import {
  parseReply,
  project_id,
  rawRequest,
  rival_project_id,
  snapshotHeads,
  startHarness,
  type HttpHarness,
  type Reply,
} from './helpers/http.ts';
import { backends } from './helpers/stores.ts';
import { contractBody, openSse, revisedBody } from './helpers/work-surface.ts';

interface Registered {
  readonly method: string;
  readonly url: string;
}

/** Every route any app built in this file registered, as `METHOD url`. */
const registered = vi.hoisted(() => new Set<string>());

vi.mock('fastify', async (importOriginal) => {
  const actual = await importOriginal<typeof FastifyModule>();
  const fastify = ((options?: Parameters<typeof actual.default>[0]) => {
    const app = actual.default(options);
    app.addHook('onRoute', (route) => {
      for (const method of [route.method].flat()) registered.add(`${method} ${route.url}`);
    });
    return app;
  }) as typeof actual.default;
  return { ...actual, default: fastify };
});

function registeredRoutes(): Registered[] {
  return [...registered].map((key) => {
    const [method = '', url = ''] = key.split(' ');
    return { method, url };
  });
}

/** Routes that need no credential (docs/http-api.md, "Authentication"; the web page's files). */
const publicRoutes = new Set([
  'GET /healthz',
  'GET /v1/openapi.json',
  'DELETE /v1/session',
  'GET /',
  'GET /favicon.svg',
  'GET /assets/:name',
]);
/** Routes that take a bearer token and nothing else. */
const bearerOnly = new Set(['POST /v1/session', 'GET /mcp', 'POST /mcp', 'DELETE /mcp']);

type Guarded = Registered & { readonly access: Access | 'token' };

/** What a route needs: undefined when it is public; throws when the matrix cannot tell. */
function accessOf({ method, url }: Registered): Access | 'token' | undefined {
  const asGet = method === 'HEAD' ? 'GET' : method;
  const key = `${asGet} ${url}`;
  if (publicRoutes.has(key)) return undefined;
  if (bearerOnly.has(key)) return 'token';
  if (key === `GET ${eventsPath}`) return 'read';
  const entry = [...operations, ...workEndpoints].find(
    (candidate) => candidate.method === asGet && candidate.path === url,
  );
  if (entry === undefined) throw new Error(`the authorization matrix does not know the route ${key}`);
  return entry.access;
}

const session_id = 's1';
const item_id = 'code';

function concretePath(url: string): string {
  return url.replace(':session_id', session_id).replace(':item_id', item_id).replace(':name', 'x.js');
}

/** A valid body for each managed-work write of this project's session s1 (fresh ids). */
const workBodies: Record<string, unknown> = {
  start_session: { session_id: 'probe-session' },
  create_work: { ...contractBody, contract_id: 'c9', branch: true },
  confirm_work: { revision: 1 },
  revise_work: { previous_revision: 1, ...revisedBody },
  reconcile_work: {},
  transition_work_item: { revision: 1, to: 'skipped' },
  retry_work_item: {},
  cancel_work_item: {},
  reassign_work_item: { owner: { type: 'human' } },
  attach_work_evidence: { revision: 1, evidence: { type: 'child_session', session_id: 'x' } },
  query_work: { session_ids: [session_id] },
  cancel_work_items: { item_ids: ['code', 'docs'] },
  end_work_session: { status: 'aborted' },
};

/**
 * One call of a route. A body is sent with every method but GET, HEAD and DELETE; an event
 * stream is opened and closed at once.
 */
async function send(
  h: HttpHarness,
  route: Registered,
  headers: Record<string, string>,
  body: unknown = {},
): Promise<Reply> {
  const path = concretePath(route.url);
  if (route.method === 'GET' && route.url === eventsPath) {
    // Through node:http, whose socket closes with the stream.
    const events = await openSse(h.url, path, headers);
    events.close();
    const text = events.body;
    return {
      status: events.status,
      headers: new Headers(),
      text,
      body: text === '' ? undefined : JSON.parse(text),
    };
  }
  const withBody = !['GET', 'HEAD', 'DELETE'].includes(route.method);
  const response = await fetch(`${h.url}${path}`, {
    method: route.method,
    headers: {
      ...headers,
      ...(withBody ? { 'content-type': 'application/json' } : {}),
      ...(route.url === '/mcp' ? { accept: 'application/json, text/event-stream' } : {}),
    },
    ...(withBody ? { body: JSON.stringify(body) } : {}),
  });
  return parseReply(response);
}

function bodyFor(route: Registered): unknown {
  const endpoint = workEndpoints.find(
    (candidate) => candidate.method === route.method && candidate.path === route.url,
  );
  return endpoint === undefined ? {} : workBodies[endpoint.operationId];
}

for (const backend of backends) {
  describe(`authorization matrix over every registered route on ${backend.name}`, () => {
    let h: HttpHarness;
    let before: Record<string, number>;
    const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

    beforeEach(async () => {
      h = await startHarness(backend);
      const post = async (path: string, body: unknown) => {
        const reply = await h.call('POST', path, { body });
        expect([path, reply.status], reply.text).toEqual([path, 200]);
      };
      await post('/v1/sessions', { session_id });
      await post(`/v1/sessions/${session_id}/work/contracts`, contractBody);
      before = await snapshotHeads(h.deps.store, project_id);
    });
    afterEach(() => h.dispose());

    function guarded(): Guarded[] {
      return registeredRoutes().flatMap((route) => {
        const access = accessOf(route);
        return access === undefined ? [] : [{ ...route, access }];
      });
    }

    it('knows every route the server registers, and each one a client calls is in /v1/openapi.json', async () => {
      const routes = registeredRoutes();
      // The registry's operations, the work table, the event stream, the web session, /mcp, the page.
      expect(routes.length).toBeGreaterThanOrEqual(operations.length + workEndpoints.length + 9);
      for (const route of routes) accessOf(route);
      const document = (await h.call('GET', '/v1/openapi.json', { token: null })).body as {
        paths: Record<string, Record<string, unknown>>;
      };
      const page = new Set(['GET /', 'GET /favicon.svg', 'GET /assets/:name']);
      const missing = routes
        .filter((route) => route.method !== 'HEAD' && route.url !== '/mcp')
        .filter((route) => !page.has(`${route.method} ${route.url}`))
        .filter((route) => {
          const path = route.url.replace(/:(\w+)/g, '{$1}');
          return document.paths[path]?.[route.method.toLowerCase()] === undefined;
        })
        .map((route) => `${route.method} ${route.url}`);
      expect(missing).toEqual([]);
    });

    it('refuses a foreign Host or Origin on every route, public ones and /mcp included, before authentication', async () => {
      const refusals: string[] = [];
      for (const route of registeredRoutes()) {
        for (const headers of [
          { host: `evil.example:${h.port}` },
          { host: `127.0.0.1:${h.port}`, origin: 'http://evil.example' },
          { host: `127.0.0.1:${h.port}`, origin: 'null' },
        ] as Record<string, string>[]) {
          const reply = await rawRequest({
            port: h.port,
            method: route.method,
            path: concretePath(route.url),
            headers: { ...headers, authorization: `Bearer ${h.tokens.writer}` },
          });
          const code = route.method === 'HEAD' ? 'forbidden' : JSON.parse(reply.text).error?.code;
          expect([route.method, route.url, headers, reply.status, code]).toEqual([
            route.method,
            route.url,
            headers,
            403,
            'forbidden',
          ]);
          refusals.push(route.url);
        }
      }
      expect(refusals.length).toBe(registeredRoutes().length * 3);
      // The document says so for each route it lists, the public ones included.
      const document = (await h.call('GET', '/v1/openapi.json', { token: null })).body as {
        paths: Record<string, Record<string, { responses: Record<string, unknown> }>>;
      };
      const undeclared = Object.entries(document.paths).flatMap(([path, methods]) =>
        Object.entries(methods)
          .filter(([, operation]) => operation.responses['403'] === undefined)
          .map(([method]) => `${method} ${path}`),
      );
      expect(undeclared).toEqual([]);
      expect(await snapshotHeads(h.deps.store, project_id)).toEqual(before);
    });

    it('refuses every guarded route without a credential or with a bad one: 401, nothing written', async () => {
      const revoked = await createToken(h.deps, { project_id, label: 'revoked' });
      await h.deps.store.revokeToken(project_id, revoked.token_id);
      const credentials: Record<string, string>[] = [
        {},
        bearer('baton_not-a-real-token'),
        bearer(revoked.token),
        { authorization: `Basic ${Buffer.from('a:b').toString('base64')}` },
        { authorization: `Bearer ${h.tokens.writer} extra` },
        { cookie: 'baton_session=forged' },
        { cookie: `baton_session_${h.port}=forged`, 'x-csrf-token': 'forged' },
      ];
      const refused: string[] = [];
      const routes = guarded();
      for (const route of routes) {
        for (const headers of credentials) {
          const reply = await send(h, route, headers, bodyFor(route));
          if (reply.status !== 401 || (route.method !== 'HEAD' && reply.body?.error?.code !== 'unauthorized'))
            throw new Error(
              `${route.method} ${route.url} ${JSON.stringify(headers)}: ${reply.status} ${reply.text}`,
            );
          refused.push(route.url);
        }
      }
      expect(refused.length).toBe(routes.length * credentials.length);
      expect(await snapshotHeads(h.deps.store, project_id)).toEqual(before);
    });

    it('forbids every write to a read-only token (403) and lets it read every read', async () => {
      const routes = guarded().filter((route) => route.access === 'write' || route.access === 'read');
      const writes = routes.filter((route) => route.access === 'write');
      expect(writes.length).toBe(
        [...operations, ...workEndpoints].filter((entry) => entry.access === 'write').length,
      );
      for (const route of routes) {
        const reply = await send(h, route, bearer(h.tokens.reader), bodyFor(route));
        const what = `${route.method} ${route.url}: ${reply.status} ${reply.text}`;
        if (route.access === 'write') {
          expect(
            [reply.status, route.method === 'HEAD' ? 'forbidden' : reply.body?.error?.code],
            what,
          ).toEqual([403, 'forbidden']);
        } else {
          // Past authorization: an answer, or a refusal of the probe's input (a registry read
          // wants its scope), never 401 or 403.
          expect([200, 404, 422], what).toContain(reply.status);
        }
      }
      expect(await snapshotHeads(h.deps.store, project_id)).toEqual(before);
    });

    it('opens no guarded route to the session cookie without its CSRF token', async () => {
      const login = await h.call('POST', '/v1/session');
      const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
      const routes = guarded().filter((route) => route.access !== 'token');
      for (const route of routes) {
        for (const headers of [{ cookie }, { cookie, 'x-csrf-token': 'wrong' }] as Record<string, string>[]) {
          const reply = await send(h, route, headers, bodyFor(route));
          const code = route.method === 'HEAD' ? 'forbidden' : reply.body?.error?.code;
          expect([route.method, route.url, reply.status, code], reply.text).toEqual([
            route.method,
            route.url,
            403,
            'forbidden',
          ]);
        }
      }
      // /mcp and the login take a bearer token only: the cookie, even with its CSRF token, is none.
      for (const route of guarded().filter((candidate) => candidate.access === 'token')) {
        const reply = await send(h, route, { cookie, 'x-csrf-token': login.body.csrf as string });
        expect([route.method, route.url, reply.status]).toEqual([route.method, route.url, 401]);
      }
      expect(await snapshotHeads(h.deps.store, project_id)).toEqual(before);
    });

    it("never shows or changes another project's managed work: 404, an error entry, or its own session", async () => {
      const outcomes: Record<string, string> = {};
      const routes = guarded().filter(
        (route) => route.url.startsWith('/v1/sessions') && route.method !== 'HEAD',
      );
      // start_session last: the rival's own s1 must not exist while the others probe.
      routes.sort((a, b) => Number(a.url === '/v1/sessions') - Number(b.url === '/v1/sessions'));
      const rivalStart = { ...workBodies.start_session!, session_id } as unknown;
      for (const route of routes) {
        const body = route.url === '/v1/sessions' ? rivalStart : bodyFor(route);
        const reply = await send(h, route, bearer(h.tokens.rival), body);
        expect(reply.text, route.url).not.toContain('acme-private');
        const key = `${route.method} ${route.url}`;
        if (key === 'GET /v1/sessions' && reply.status === 200 && Array.isArray(reply.body?.sessions))
          outcomes[key] =
            canonicalJson(reply.body) === canonicalJson(await listSessions(h.deps, rival_project_id))
              ? 'own_list'
              : 'another_list';
        else if (reply.status === 404 && reply.body?.error?.code === 'not_found') outcomes[key] = 'not_found';
        else if (reply.status === 200 && reply.body?.sessions?.[0]?.error?.code === 'not_found')
          outcomes[key] = 'error_entry';
        else if (reply.status === 200 && reply.body?.session_id === session_id) outcomes[key] = 'isolated';
        else throw new Error(`${key}: the rival got ${reply.status} ${reply.text}`);
      }
      const expected = Object.fromEntries(
        routes.map((route) => [
          `${route.method} ${route.url}`,
          route.method === 'GET' && route.url === '/v1/sessions'
            ? 'own_list'
            : route.url === '/v1/sessions'
              ? 'isolated'
              : route.url === '/v1/sessions/work/query'
                ? 'error_entry'
                : 'not_found',
        ]),
      );
      expect(outcomes).toEqual(expected);
      expect(Object.keys(outcomes).length).toBe(workEndpoints.length + 1);
      expect(await snapshotHeads(h.deps.store, project_id)).toEqual(before);
      expect(Object.keys(await snapshotHeads(h.deps.store, rival_project_id))).toEqual([
        `stream ${JSON.stringify({ project_id: rival_project_id, kind: 'session', session_id })}`,
      ]);
    });
  });
}
