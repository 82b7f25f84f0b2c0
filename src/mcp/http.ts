/**
 * MCP Streamable HTTP at /mcp on a Fastify app (POST, GET for SSE, DELETE). Every request is
 * authenticated; an initialize request opens a session with a random id, served by its own
 * McpServer bound to the principal that opened it, and only that same token may use it again.
 * A session ends on DELETE or when the app closes.
 */
import { randomUUID } from 'node:crypto';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Principal } from '../app/auth.ts';
import type { AppDeps } from '../app/deps.ts';
import { isBatonError } from '../core/errors.ts';
import { createMcpServer } from './server.ts';

export const mcpPath = '/mcp';

export interface McpRoutesOptions {
  readonly deps: AppDeps;
  /** The caller's principal; rejects with BatonError unauthorized (or forbidden) otherwise. */
  readonly authenticate: (request: FastifyRequest) => Promise<Principal>;
}

interface Session {
  readonly transport: StreamableHTTPServerTransport;
  readonly server: McpServer;
  readonly principal: Principal;
}

/** A JSON-RPC error without an id, as the SDK's transport answers transport faults. */
function rpcError(reply: FastifyReply, status: number, code: number, message: string): FastifyReply {
  return reply
    .code(status)
    .type('application/json')
    .send({ jsonrpc: '2.0', error: { code, message }, id: null });
}

/** `host[:port]` as a URL spells it (lower case, default port dropped), or undefined when malformed. */
function hostOf(value: string | undefined): string | undefined {
  if (!value) return undefined;
  try {
    return new URL(`http://${value}`).host;
  } catch {
    return undefined;
  }
}

/**
 * DNS-rebinding protection, second line. The server's onRequest hook refuses a foreign Host
 * (it alone knows the configured public names) and a foreign Origin; here, an Origin that is
 * present must also be http(s) at the very Host the request was sent to, so no page elsewhere
 * reaches a session even when /mcp is mounted on an app without that hook.
 */
function foreignOrigin(request: FastifyRequest): string | undefined {
  const origin = request.headers.origin;
  if (origin === undefined) return undefined;
  let url: URL | undefined;
  try {
    url = new URL(origin);
  } catch {
    url = undefined;
  }
  const host = hostOf(request.headers.host);
  const same = url && (url.protocol === 'http:' || url.protocol === 'https:') && url.host === host;
  return same ? undefined : `requests from Origin ${origin} are refused (DNS-rebinding protection)`;
}

function sessionIdOf(request: FastifyRequest): string | undefined | null {
  const value = request.headers['mcp-session-id'];
  if (value === undefined) return undefined;
  return typeof value === 'string' && value !== '' ? value : null;
}

function sameCaller(a: Principal, b: Principal): boolean {
  return a.token_id === b.token_id && a.project_id === b.project_id;
}

export function registerMcpRoutes(app: FastifyInstance, options: McpRoutesOptions): void {
  const sessions = new Map<string, Session>();
  const onError = (error: unknown, tool: string): void =>
    app.log.error({ err: error, tool }, 'MCP tool failed');

  async function serve(
    request: FastifyRequest,
    reply: FastifyReply,
    transport: StreamableHTTPServerTransport,
  ): Promise<void> {
    reply.hijack();
    try {
      await transport.handleRequest(request.raw, reply.raw, request.body);
    } catch (error) {
      app.log.error({ err: error }, 'MCP transport failed');
      if (!reply.raw.headersSent) {
        reply.raw.writeHead(500, { 'content-type': 'application/json' });
        reply.raw.end(
          JSON.stringify({ jsonrpc: '2.0', error: { code: -32603, message: 'Internal error' }, id: null }),
        );
      } else {
        reply.raw.end();
      }
    }
  }

  async function open(request: FastifyRequest, reply: FastifyReply, principal: Principal): Promise<void> {
    const server = createMcpServer({ deps: options.deps, principal, onError });
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        sessions.set(id, { transport, server, principal });
      },
    });
    // Set before connect: the server keeps this handler and calls it after its own.
    transport.onclose = () => {
      if (transport.sessionId !== undefined) sessions.delete(transport.sessionId);
    };
    await server.connect(transport);
    await serve(request, reply, transport);
    // An initialize the transport refused (bad headers, say) leaves no session behind.
    if (transport.sessionId === undefined) await server.close();
  }

  async function handle(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | void> {
    const foreign = foreignOrigin(request);
    if (foreign) return rpcError(reply, 403, -32000, `Forbidden: ${foreign}`);
    let principal: Principal;
    try {
      principal = await options.authenticate(request);
    } catch (error) {
      if (isBatonError(error, 'unauthorized') || isBatonError(error, 'forbidden')) {
        const status = error.code === 'unauthorized' ? 401 : 403;
        if (status === 401) void reply.header('www-authenticate', 'Bearer');
        return reply
          .code(status)
          .send({ error: { code: error.code, message: error.message, details: error.data } });
      }
      app.log.error({ err: error }, 'MCP authentication failed');
      return reply
        .code(500)
        .send({ error: { code: 'internal', message: 'authentication failed unexpectedly', details: {} } });
    }
    const sessionId = sessionIdOf(request);
    if (sessionId === null) return rpcError(reply, 400, -32000, 'Bad Request: malformed Mcp-Session-Id');
    if (sessionId !== undefined) {
      const session = sessions.get(sessionId);
      // Another token's session is answered exactly like one that does not exist.
      if (!session || !sameCaller(session.principal, principal)) {
        return rpcError(reply, 404, -32001, 'Session not found');
      }
      return serve(request, reply, session.transport);
    }
    if (request.method === 'POST' && isInitializeRequest(request.body))
      return open(request, reply, principal);
    return rpcError(
      reply,
      400,
      -32000,
      'Bad Request: no Mcp-Session-Id; start a session with an initialize request',
    );
  }

  app.route({ method: ['GET', 'POST', 'DELETE'], url: mcpPath, handler: handle });

  // preClose, not onClose: an open SSE stream would keep the HTTP server from closing.
  app.addHook('preClose', async () => {
    const open = [...sessions.values()];
    sessions.clear();
    await Promise.allSettled(open.map((session) => session.server.close()));
  });
}
