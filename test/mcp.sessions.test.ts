/**
 * The lifetime of MCP Streamable HTTP sessions at /mcp: the idle timeout, the per-token limit
 * (least recently used first out), and closing the sessions of a credential that no longer
 * authenticates. Small option values keep it fast; closures are observed over HTTP (404, an SSE
 * stream that ends) and in the server log.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { authenticateToken, createToken } from '../src/app/auth.ts';
import type { AppDeps } from '../src/app/deps.ts';
import { systemClock } from '../src/core/clock.ts';
import type { Store } from '../src/store/store.ts';
import { defaultMaxSessionsPerToken, registerMcpRoutes, type McpRoutesOptions } from '../src/mcp/http.ts';
import { ok, rawInitialize } from './helpers/mcp.ts';
import { tempSqliteStore } from './helpers/sqlite.ts';
import { withOverrides } from './helpers/stores.ts';

type Limits = Pick<McpRoutesOptions, 'idleTimeoutMs' | 'maxSessionsPerToken'>;

interface Created {
  token: string;
  token_id: string;
}

const initialize = rawInitialize;

function bearer(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  return header?.startsWith('Bearer ') ? header.slice('Bearer '.length) : undefined;
}

describe('MCP Streamable HTTP session lifetime', () => {
  let harness: Awaited<ReturnType<typeof tempSqliteStore>>;
  let deps: AppDeps;
  let app: FastifyInstance | undefined;
  let url: URL;
  let writer: Created;
  let reader: Created;
  let logs: { msg?: string; reason?: string; token_id?: string }[];
  const clients: Client[] = [];

  beforeEach(async () => {
    harness = await tempSqliteStore();
    deps = { store: harness.store, clock: systemClock };
    await deps.store.createProject('acme');
    writer = await createToken(deps, { project_id: 'acme' });
    reader = await createToken(deps, { project_id: 'acme', read_only: true });
    logs = [];
  });
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((client) => client.close()));
    await app?.close();
    app = undefined;
    await harness.dispose();
  });

  async function start(limits: Limits, store: Store = deps.store): Promise<void> {
    const served = { ...deps, store };
    app = Fastify({
      logger: {
        level: 'info',
        stream: { write: (line: string) => void logs.push(JSON.parse(line) as (typeof logs)[number]) },
      },
    });
    registerMcpRoutes(app, {
      deps: served,
      authenticate: (request) => authenticateToken(served, bearer(request)),
      ...limits,
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const address = app.server.address();
    if (address === null || typeof address === 'string') throw new Error('no TCP address');
    url = new URL(`http://127.0.0.1:${address.port}/mcp`);
  }

  /** The reasons sessions were closed for, in order, from the server log. */
  function closures(): string[] {
    return logs.filter((line) => line.msg === 'MCP session closed').map((line) => line.reason ?? '');
  }

  function request(
    method: 'GET' | 'POST' | 'DELETE',
    token: string,
    sessionId?: string,
    body?: unknown,
  ): Promise<Response> {
    return fetch(url, {
      method,
      headers: {
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        accept: method === 'GET' ? 'text/event-stream' : 'application/json, text/event-stream',
        'mcp-protocol-version': LATEST_PROTOCOL_VERSION,
        authorization: `Bearer ${token}`,
        ...(sessionId === undefined ? {} : { 'mcp-session-id': sessionId }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  }

  /** Open a session with a raw initialize; its id. */
  async function open(token: string): Promise<string> {
    const response = await request('POST', token, undefined, initialize);
    expect(response.status).toBe(200);
    await response.text();
    const sessionId = response.headers.get('mcp-session-id');
    if (!sessionId) throw new Error('no session id');
    return sessionId;
  }

  /** The status of a ping in the session (200 while it is open, 404 once it is closed). */
  async function ping(token: string, sessionId: string): Promise<number> {
    const response = await request('POST', token, sessionId, { jsonrpc: '2.0', id: 1, method: 'ping' });
    await response.text();
    return response.status;
  }

  async function connect(token: string): Promise<{ client: Client; sessionId: string }> {
    const transport = new StreamableHTTPClientTransport(url, {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    });
    const client = new Client({ name: 'baton-test', version: '0.0.0' });
    // The client reports its SSE stream failing to reconnect to a closed session; expected here.
    client.onerror = () => undefined;
    await client.connect(transport);
    clients.push(client);
    return { client, sessionId: transport.sessionId! };
  }

  it('refuses limits that are not positive integers (or beyond what a timer can wait)', () => {
    const bad: Limits[] = [
      { idleTimeoutMs: 0 },
      { idleTimeoutMs: 1.5 },
      { idleTimeoutMs: 2 ** 31 },
      { idleTimeoutMs: Number.POSITIVE_INFINITY },
      { maxSessionsPerToken: 0 },
      { maxSessionsPerToken: Number.NaN },
    ];
    for (const limits of bad) {
      expect(() =>
        registerMcpRoutes(Fastify(), {
          deps,
          authenticate: () => Promise.reject(new Error('no')),
          ...limits,
        }),
      ).toThrow(RangeError);
    }
  });

  it('closes a session idle for the timeout, even with its SSE stream open; use keeps it alive', async () => {
    await start({ idleTimeoutMs: 400 });
    const { client, sessionId } = await connect(writer.token);
    await ok(client, 'get_report', {});
    // Requests more often than the timeout keep it open well past the timeout.
    for (let i = 0; i < 6; i += 1) {
      await sleep(150);
      await client.ping();
    }
    expect(await ping(writer.token, sessionId)).toBe(200);

    await sleep(900);
    expect(await ping(writer.token, sessionId)).toBe(404);
    await expect(client.ping()).rejects.toThrow();
    expect(closures()).toEqual(['idle']);
  });

  it('does not cut off a call that outlasts the timeout, and times out after it', async () => {
    const store = withOverrides(harness.store, {
      revisionHead: async (...args: Parameters<Store['revisionHead']>) => {
        await sleep(700);
        return harness.store.revisionHead(...args);
      },
    });
    await start({ idleTimeoutMs: 250 }, store);
    const { client, sessionId } = await connect(writer.token);
    // A call cut off would never be answered: fail fast rather than at the SDK's 60 s.
    const result = await client.callTool(
      { name: 'prepare_context', arguments: { scope_id: 'slow' } },
      undefined,
      {
        timeout: 5000,
      },
    );
    expect(result).toMatchObject({ structuredContent: { trust: 'untrusted_history' } });
    expect(result.isError).toBeFalsy();
    expect(await ping(writer.token, sessionId)).toBe(200);
    await sleep(700);
    expect(await ping(writer.token, sessionId)).toBe(404);
    expect(closures()).toEqual(['idle']);
  });

  it(`closes a token's oldest session when it opens session ${defaultMaxSessionsPerToken + 1}`, async () => {
    await start({});
    const readerSession = await open(reader.token);
    const opened: string[] = [];
    for (let i = 0; i < defaultMaxSessionsPerToken; i += 1) opened.push(await open(writer.token));
    for (const sessionId of opened) expect(await ping(writer.token, sessionId)).toBe(200);
    expect(closures()).toEqual([]);

    opened.push(await open(writer.token));
    expect(await ping(writer.token, opened[0]!)).toBe(404);
    for (const sessionId of opened.slice(1)) expect(await ping(writer.token, sessionId)).toBe(200);
    // Another token's session counts against its own limit only.
    expect(await ping(reader.token, readerSession)).toBe(200);
    expect(closures()).toEqual(['evicted']);
  });

  it('opens no session for an initialize sent as a notification (no id), and evicts none', async () => {
    await start({});
    const real = await open(writer.token);
    const { id: _id, ...notification } = initialize;
    for (let i = 0; i <= defaultMaxSessionsPerToken; i += 1) {
      const response = await request('POST', writer.token, undefined, notification);
      expect(response.status).toBe(400);
      expect(response.headers.get('mcp-session-id')).toBeNull();
      expect(await response.json()).toMatchObject({
        jsonrpc: '2.0',
        id: null,
        error: { code: -32600, message: expect.stringMatching(/initialize .*request with an id/) as unknown },
      });
    }
    // A well-formed initialize inside a batch is refused for being in a batch, as MCP asks.
    const batched = await request('POST', writer.token, undefined, [initialize]);
    expect(batched.status).toBe(400);
    expect(batched.headers.get('mcp-session-id')).toBeNull();
    expect(await batched.json()).toMatchObject({
      error: { code: -32600, message: 'Invalid Request: initialize must be sent alone, not in a batch' },
    });
    expect(await ping(writer.token, real)).toBe(200);
    expect(closures()).toEqual([]);
  });

  it('evicts the least recently used session, not the oldest one used since', async () => {
    await start({ maxSessionsPerToken: 2 });
    const first = await open(writer.token);
    const second = await open(writer.token);
    expect(await ping(writer.token, first)).toBe(200);
    const third = await open(writer.token);
    expect(await ping(writer.token, second)).toBe(404);
    expect(await ping(writer.token, first)).toBe(200);
    expect(await ping(writer.token, third)).toBe(200);
  });

  it("closes every session of a revoked token on its next request, and only that token's", async () => {
    await start({});
    const { sessionId: clientSession } = await connect(writer.token);
    const rawSession = await open(writer.token);
    const readerSession = await open(reader.token);
    const stream = await request('GET', writer.token, rawSession);
    expect(stream.status).toBe(200);
    expect(stream.headers.get('content-type')).toContain('text/event-stream');
    const events = stream.body!.getReader();

    // A credential that fails, but is not the one that opened the session, closes nothing.
    for (const token of ['baton_nonsense', reader.token.replace(/.$/, '_')]) {
      expect(
        (await request('POST', token, rawSession, { jsonrpc: '2.0', id: 1, method: 'ping' })).status,
      ).toBe(401);
    }
    expect(await ping(writer.token, rawSession)).toBe(200);
    expect(closures()).toEqual([]);

    await deps.store.revokeToken('acme', writer.token_id);
    expect(await ping(writer.token, rawSession)).toBe(401);
    // The session's open SSE stream ends: the session is gone, not merely refused.
    const ended = await Promise.race([events.read(), sleep(5000, 'still open' as const)]);
    expect(ended).toMatchObject({ done: true });
    expect(closures()).toEqual(['unauthenticated', 'unauthenticated']);
    expect(logs.filter((line) => line.msg === 'MCP session closed').map((line) => line.token_id)).toEqual([
      writer.token_id,
      writer.token_id,
    ]);
    expect(await ping(writer.token, clientSession)).toBe(401);
    expect(await ping(reader.token, readerSession)).toBe(200);
  });

  it('closes the sessions a DELETE did not end when the app closes', async () => {
    await start({});
    const kept = await open(writer.token);
    const deleted = await open(writer.token);
    const response = await request('DELETE', writer.token, deleted);
    expect(response.status).toBe(200);
    expect(await ping(writer.token, deleted)).toBe(404);
    expect(await ping(writer.token, kept)).toBe(200);
    await app!.close();
    app = undefined;
    expect(closures()).toEqual(['app_closing']);
  });
});
