/**
 * MCP Streamable HTTP at /mcp on a Fastify app (POST, GET for SSE, DELETE). Every request is
 * authenticated; an initialize request opens a session with a random id, served by its own
 * McpServer bound to the principal that opened it, and only that same token may use it again.
 * A session ends on DELETE, after an idle timeout, when its token opens one session too many
 * (the least recently used goes), when its credential no longer authenticates, or when the app
 * closes.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  ErrorCode,
  isInitializeRequest,
  isJSONRPCRequest,
  type JSONRPCMessage,
} from '@modelcontextprotocol/sdk/types.js';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Principal } from '../app/auth.ts';
import type { AppDeps } from '../app/deps.ts';
import { isBatonError } from '../core/errors.ts';
import { UnreadableBody } from '../http/body.ts';
import { encodeError, sendError } from '../http/errors.ts';
import { hijackWithHeaders } from '../http/hijack.ts';
import { invalidMessage, rpcError } from './guard.ts';
import { connectMcp, createMcpServer } from './server.ts';

export const mcpPath = '/mcp';

/** A session no request has reached for this long is closed: 30 minutes. */
export const defaultIdleTimeoutMs = 30 * 60 * 1000;
/** The open sessions one token may hold; opening one more closes its least recently used. */
export const defaultMaxSessionsPerToken = 16;
/** The longest delay setTimeout honours; beyond it Node fires after 1 ms. */
const maxTimerMs = 2 ** 31 - 1;

export interface McpRoutesOptions {
  readonly deps: AppDeps;
  /** The caller's principal; rejects with BatonError unauthorized (or forbidden) otherwise. */
  readonly authenticate: (request: FastifyRequest) => Promise<Principal>;
  /** Close a session after this many milliseconds without a request (default 30 minutes). */
  readonly idleTimeoutMs?: number;
  /** Open sessions per token (default 16); one more closes that token's least recently used. */
  readonly maxSessionsPerToken?: number;
  /** The workspace of sessions the work tools start (McpServerOptions.workspace). */
  readonly workspace?: string;
}

type CloseReason = 'idle' | 'evicted' | 'unauthenticated' | 'app_closing';

interface Session {
  readonly id: string;
  readonly transport: StreamableHTTPServerTransport;
  readonly server: McpServer;
  readonly principal: Principal;
  /** SHA-256 of the Authorization header that opened it, to recognise that credential failing. */
  readonly credential: string | undefined;
  /** POST responses still being written; the session is not idle while one is. */
  readonly pending: Set<ServerResponse>;
  idle: NodeJS.Timeout | undefined;
  closed: boolean;
}

/** Whether a body tries to initialize: a message, or one of a batch, whose method is initialize. */
function isInitializeAttempt(body: unknown): boolean {
  const messages: unknown[] = Array.isArray(body) ? body : [body];
  return messages.some(
    (message) =>
      typeof message === 'object' &&
      message !== null &&
      (message as { method?: unknown }).method === 'initialize',
  );
}

/**
 * The -32600 answer to a POST body that is not a JSON-RPC message or a non-empty batch of them
 * (the SDK answered an empty batch 202 and other JSON -32700, as if it were not JSON).
 */
function invalidBody(body: unknown): JSONRPCMessage | undefined {
  if (!Array.isArray(body)) return invalidMessage(body, 'the body');
  if (body.length === 0)
    return rpcError(null, ErrorCode.InvalidRequest, 'Invalid Request: the body is an empty batch');
  const index = body.findIndex((message) => invalidMessage(message) !== undefined);
  return index === -1 ? undefined : invalidMessage(body[index], `message ${index} of the batch`);
}

/**
 * /mcp's own error handler: a body it cannot read (not JSON, not UTF-8, too large, not
 * application/json) answers in the JSON-RPC error shape an MCP client reads; anything else
 * (the Host guard, a server shutting down) in the one error envelope of every route.
 */
function rpcFailure(error: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const code = (error as { code?: unknown } | null)?.code;
  const unreadable =
    error instanceof UnreadableBody || (typeof code === 'string' && code.startsWith('FST_ERR_CTP_'));
  if (!unreadable) return sendError(request, reply, error);
  const encoded = encodeError(error);
  request.log.info({ code: encoded.body.error.code, status: encoded.status }, 'MCP request refused');
  const { message } = encoded.body.error;
  return encoded.status === 400
    ? rpcReply(reply, 400, ErrorCode.ParseError, `Parse error: ${message}`)
    : rpcReply(reply, encoded.status, ErrorCode.InvalidRequest, `Invalid Request: ${message}`);
}

function rpcReply(reply: FastifyReply, status: number, code: number, message: string): FastifyReply {
  return reply
    .code(status)
    .type('application/json')
    .send(rpcError(null, code, message));
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

/**
 * A POST's connection closing before its answer was written is the client giving up on the
 * requests it carried: the server is told as if the client had sent notifications/cancelled for
 * each, so a running tool (work_verify's sandbox) stops and records nothing. Baton keeps no event
 * store, so an answer whose stream is gone could never be delivered anyway.
 */
function cancelOnDisconnect(
  transport: StreamableHTTPServerTransport,
  body: unknown,
  response: ServerResponse,
): void {
  const messages: unknown[] = Array.isArray(body) ? body : [body];
  const ids = messages.filter((message) => isJSONRPCRequest(message)).map((message) => message.id);
  if (ids.length === 0) return;
  response.once('close', () => {
    if (response.writableFinished) return;
    for (const requestId of ids) {
      transport.onmessage?.({
        jsonrpc: '2.0',
        method: 'notifications/cancelled',
        params: { requestId, reason: 'the client closed the connection before the answer' },
      });
    }
  });
}

function sameCaller(a: Principal, b: Principal): boolean {
  return a.token_id === b.token_id && a.project_id === b.project_id;
}

/**
 * A fingerprint of the request's credential (the bearer token, or else the whole Authorization
 * header), so that sessions need not keep the secret itself.
 */
function credentialOf(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (!header) return undefined;
  const credential = /^Bearer +(\S+) *$/i.exec(header)?.[1] ?? header;
  return createHash('sha256').update(credential, 'utf8').digest('hex');
}

function positiveInteger(name: string, value: number | undefined, fallback: number, max: number): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 1 || value > max) {
    throw new RangeError(`registerMcpRoutes: ${name} must be an integer from 1 to ${max}, not ${value}`);
  }
  return value;
}

export function registerMcpRoutes(app: FastifyInstance, options: McpRoutesOptions): void {
  const idleTimeoutMs = positiveInteger(
    'idleTimeoutMs',
    options.idleTimeoutMs,
    defaultIdleTimeoutMs,
    maxTimerMs,
  );
  const maxSessionsPerToken = positiveInteger(
    'maxSessionsPerToken',
    options.maxSessionsPerToken,
    defaultMaxSessionsPerToken,
    Number.MAX_SAFE_INTEGER,
  );
  /** Open sessions, least recently used first: every use moves a session to the end. */
  const sessions = new Map<string, Session>();
  let closing = false;
  const onError = (error: unknown, tool: string): void =>
    app.log.error({ err: error, tool }, 'MCP tool failed');

  /** Drop a session from the table and stop its timer; the transport is closed or closing. */
  function forget(session: Session): void {
    session.closed = true;
    clearTimeout(session.idle);
    session.idle = undefined;
    session.pending.clear();
    if (sessions.get(session.id) === session) sessions.delete(session.id);
  }

  /** Close a session: its streams end, and later requests naming it get 404. */
  async function end(session: Session, reason: CloseReason): Promise<void> {
    if (session.closed) return;
    forget(session);
    app.log.info({ token_id: session.principal.token_id, reason }, 'MCP session closed');
    try {
      await session.server.close();
    } catch (error) {
      app.log.error({ err: error }, 'MCP session failed to close');
    }
  }

  /** (Re)start the idle timer, unless a POST is still being answered. */
  function arm(session: Session): void {
    clearTimeout(session.idle);
    session.idle = undefined;
    if (session.closed) return;
    for (const response of session.pending) {
      if (response.destroyed || response.writableFinished) session.pending.delete(response);
    }
    if (session.pending.size > 0) return;
    session.idle = setTimeout(() => void end(session, 'idle'), idleTimeoutMs);
    // The timer alone must not keep the process alive.
    session.idle.unref();
  }

  /** A request reached the session: it becomes the most recently used and is not idle. */
  function use(session: Session, request: FastifyRequest, reply: FastifyReply): void {
    sessions.delete(session.id);
    sessions.set(session.id, session);
    const response = reply.raw;
    // A GET holds an SSE stream open for as long as the client likes: it counts as a use when
    // it arrives, never as activity while it stays open, or an idle client would never expire.
    if (request.method === 'POST' && !response.destroyed && !response.writableFinished) {
      session.pending.add(response);
      response.once('close', () => {
        session.pending.delete(response);
        if (session.pending.size === 0) arm(session);
      });
    }
    arm(session);
  }

  /** Close the least recently used sessions of this caller until one more fits. */
  function makeRoom(principal: Principal): void {
    const mine = [...sessions.values()].filter((session) => sameCaller(session.principal, principal));
    const excess = mine.length - maxSessionsPerToken + 1;
    for (const session of mine.slice(0, Math.max(0, excess))) void end(session, 'evicted');
  }

  /** A credential that opened sessions no longer authenticates (revoked, say): close them all. */
  function endSessionsOf(credential: string | undefined): void {
    if (credential === undefined) return;
    for (const session of [...sessions.values()]) {
      if (session.credential === credential) void end(session, 'unauthenticated');
    }
  }

  async function serve(
    request: FastifyRequest,
    reply: FastifyReply,
    transport: StreamableHTTPServerTransport,
  ): Promise<void> {
    hijackWithHeaders(reply);
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
    const server = createMcpServer({
      deps: options.deps,
      principal,
      onError,
      ...(options.workspace === undefined ? {} : { workspace: options.workspace }),
    });
    let session: Session | undefined;
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        makeRoom(principal);
        session = {
          id,
          transport,
          server,
          principal,
          credential: credentialOf(request),
          pending: new Set(),
          idle: undefined,
          closed: false,
        };
        sessions.set(id, session);
        use(session, request, reply);
        // Opened while the app was closing, after preClose took its list: close it too.
        if (closing) void end(session, 'app_closing');
      },
    });
    // Set before connect: the server keeps this handler and calls it after its own.
    transport.onclose = () => {
      if (session) forget(session);
    };
    await connectMcp(server, transport);
    await serve(request, reply, transport);
    // An initialize the transport refused (bad headers, say) leaves no session behind.
    if (transport.sessionId === undefined) await server.close();
  }

  async function handle(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | void> {
    const foreign = foreignOrigin(request);
    // Refused before the protocol, like a bad token: the error envelope of every HTTP refusal.
    if (foreign) return reply.code(403).send({ error: { code: 'forbidden', message: foreign, details: {} } });
    let principal: Principal;
    try {
      principal = await options.authenticate(request);
    } catch (error) {
      // The credential that opened sessions no longer authenticates: none of them can be used
      // again, so they are closed now rather than left for the idle timeout.
      if (isBatonError(error, 'unauthorized')) endSessionsOf(credentialOf(request));
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
    const invalid = request.method === 'POST' ? invalidBody(request.body) : undefined;
    if (invalid) return reply.code(400).type('application/json').send(invalid);
    const sessionId = sessionIdOf(request);
    if (sessionId === null) return rpcReply(reply, 400, -32000, 'Bad Request: malformed Mcp-Session-Id');
    if (sessionId !== undefined) {
      const session = sessions.get(sessionId);
      // Another token's session is answered exactly like one that does not exist.
      if (!session || !sameCaller(session.principal, principal)) {
        return rpcReply(reply, 404, -32001, 'Session not found');
      }
      use(session, request, reply);
      if (request.method === 'POST') cancelOnDisconnect(session.transport, request.body, reply.raw);
      return serve(request, reply, session.transport);
    }
    if (request.method === 'POST' && isInitializeAttempt(request.body)) {
      if (Array.isArray(request.body)) {
        return rpcReply(reply, 400, -32600, 'Invalid Request: initialize must be sent alone, not in a batch');
      }
      // A notification would open a session whose id nobody learns, and push out real ones.
      if (!isJSONRPCRequest(request.body) || !isInitializeRequest(request.body)) {
        return rpcReply(
          reply,
          400,
          -32600,
          'Invalid Request: initialize must be a JSON-RPC request with an id, and params with protocolVersion, capabilities and clientInfo',
        );
      }
      return open(request, reply, principal);
    }
    return rpcReply(
      reply,
      400,
      -32000,
      'Bad Request: no Mcp-Session-Id; start a session with an initialize request',
    );
  }

  app.route({
    method: ['GET', 'POST', 'DELETE'],
    url: mcpPath,
    handler: handle,
    errorHandler: (error, request, reply) => {
      rpcFailure(error, request, reply);
    },
  });

  // preClose, not onClose: an open SSE stream would keep the HTTP server from closing.
  app.addHook('preClose', async () => {
    closing = true;
    await Promise.all([...sessions.values()].map((session) => end(session, 'app_closing')));
  });
}
