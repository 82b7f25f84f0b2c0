/**
 * The Baton HTTP server: Fastify with one route per registry operation, web sessions, the
 * OpenAPI document, /healthz and MCP at /mcp, all behind the Host/Origin guard and one error
 * mapping. buildApp makes the app without listening; startServer listens and returns how to
 * stop it. The caller owns deps.store: closing the server never closes the store.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import fastifyCookie from '@fastify/cookie';
import Fastify, { type FastifyInstance } from 'fastify';
import { authenticateToken } from '../app/auth.ts';
import type { AppDeps } from '../app/deps.ts';
import { batonApiHeader, batonApiVersion, defaultHost, defaultPort } from '../core/api.ts';
import { BatonError } from '../core/errors.ts';
import { defaultWorkConfig } from '../core/work/config.ts';
import { registerMcpRoutes } from '../mcp/http.ts';
import { bearerToken, registerSessionRoutes } from './auth.ts';
import { bodyLimit, installJsonParser } from './body.ts';
import { refuseMalformedQuery } from './query.ts';
import { answerClientError, installErrorHandling, MalformedRequest, sendError } from './errors.ts';
import { allowedHosts, guardHosts, hostWithPort, isLoopback } from './hosts.ts';
import { loggerOptions } from './logging.ts';
import { openApiDocument } from './openapi.ts';
import { registerOperationRoutes } from './routes.ts';
import { registerWebRoutes } from './static.ts';
import { registerWorkRoutes } from './work-routes.ts';

export interface ServeOptions {
  deps: AppDeps;
  /** Default 127.0.0.1. Anything beyond loopback is warned about at start. */
  host?: string;
  /** Default 4680; 0 picks any free port. */
  port?: number;
  /** Off (false), on at level info (true, the default), or pino options. Credentials are always redacted. */
  logger?: boolean | object;
  /**
   * More Host values to serve besides the loopback names (`name:port`, or a bare name meaning
   * the listening port): the names clients use when the server listens beyond loopback.
   */
  allowedHosts?: readonly string[];
  /**
   * Milliseconds a request has to arrive whole, headers and body (default 30,000; of that, at
   * most 60,000 for the headers). A slower one is answered 408 and its connection closed, so
   * that clients trickling bytes cannot hold connections and buffers open for ever. Answers
   * (event streams included) are not bounded.
   */
  requestTimeoutMs?: number;
  /**
   * Work event streams (SSE) one token may hold open at once (default 64); one more is refused
   * 429 too_many_requests until one closes. MCP sessions have their own bound (src/mcp/http.ts).
   */
  maxStreamsPerToken?: number;
  /**
   * The workspace of the sessions that /mcp's work tools start (an absolute path; `baton serve`
   * gives its working directory, as `baton mcp` does). Never chosen by the client. Without
   * one, those sessions have no workspace, and their file and shell criteria are unavailable.
   */
  workspace?: string;
  /**
   * More folders, besides `workspace`, a session started over HTTP may name as its workspace.
   * A session's workspace must lie in `workspace` or one of these (links resolved), or it is
   * refused 403 forbidden: clients never make the server run criteria in any other folder.
   */
  workspaceRoots?: readonly string[];
}

export const defaultRequestTimeoutMs = 30_000;

/**
 * Graceful close: a request in flight finishes, and its connection then closes instead of
 * idling in keep-alive and holding close() open; a connection with no request being answered
 * on it (never sent one, or never finished its headers) is closed at once, and a request whose
 * body has not arrived within the request timeout has its connection closed. A request that arrives on an open connection
 * meanwhile is answered 503 unavailable, in the one error envelope.
 */
function closeGracefully(app: FastifyInstance, requestTimeout: number): void {
  let closing = false;
  // Node stops timing requests out once the server closes, and its close waits on every
  // connection: one that carries no request Baton is answering (a browser's preconnect, a
  // request whose headers never end) would hold it open for as long as the client likes, and
  // so would a request whose body never ends. The first are closed at once; the last keep
  // their request timeout.
  const connections = new Set<Socket>();
  /** Requests being answered, with when each arrived. */
  const answering = new Map<IncomingMessage, number>();
  app.server.on('connection', (socket: Socket) => {
    connections.add(socket);
    socket.once('close', () => connections.delete(socket));
  });
  app.server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    answering.set(request, Date.now());
    response.once('close', () => answering.delete(request));
  });
  app.addHook('preClose', async () => {
    closing = true;
    const busy = new Set([...answering.keys()].map((request) => request.socket));
    for (const socket of connections) if (!busy.has(socket)) socket.destroy();
    for (const [request, arrived] of answering) {
      if (request.complete) continue;
      const left = Math.max(0, arrived + requestTimeout - Date.now());
      setTimeout(() => {
        if (!request.complete) request.socket.destroy();
      }, left).unref();
    }
  });
  app.addHook('onRequest', (_request, _reply, done) => {
    done(closing ? new BatonError('unavailable', 'the server is shutting down; retry shortly') : undefined);
  });
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (closing) void reply.header('connection', 'close');
    done(null, payload);
  });
}

export async function buildApp(options: ServeOptions): Promise<FastifyInstance> {
  const deps = {
    ...options.deps,
    workspace_roots: [
      ...(options.deps.workspace_roots ?? []),
      ...(options.workspace === undefined ? [] : [options.workspace]),
      ...(options.workspaceRoots ?? []),
    ],
  };
  const host = options.host ?? defaultHost;
  const requestTimeout = options.requestTimeoutMs ?? defaultRequestTimeoutMs;
  if (!Number.isSafeInteger(requestTimeout) || requestTimeout < 1) {
    throw new RangeError(
      `requestTimeoutMs must be a positive whole number of milliseconds, not ${requestTimeout}`,
    );
  }
  const app = Fastify({
    logger: loggerOptions(options.logger),
    bodyLimit,
    // Fastify's default is no limit at all; Node answers a late request 408 (see answerClientError).
    requestTimeout,
    forceCloseConnections: 'idle',
    // A path parameter is a session or item id of up to 200 characters, each of which may be
    // percent-encoded into three: past Fastify's default of 100, a valid id would be a 404.
    routerOptions: { maxParamLength: 3 * 200 },
    return503OnClosing: false,
    // Node would answer a request without Host with an empty 400; the Host guard answers it instead.
    // Node is told the same bound (it checks headersTimeout against it), headers get at most a
    // minute of it (Node's own limit), and Node looks for late requests every second rather
    // than every 30 s, so a bound is kept to within a second.
    http: {
      requireHostHeader: false,
      requestTimeout,
      headersTimeout: Math.min(60_000, requestTimeout),
      connectionsCheckingInterval: Math.min(1_000, requestTimeout),
    },
    // Requests Node's parser refuses (headers too large, a bad request line) get the one error shape.
    clientErrorHandler: answerClientError,
    // Errors Fastify raises before routing (a malformed URL) get the one error shape too.
    frameworkErrors: (error, request, reply) => {
      sendError(
        request,
        reply,
        new MalformedRequest(`the request is malformed (${error.code ?? 'bad request'})`),
      );
    },
  });
  installErrorHandling(app);
  // An Expect other than 100-continue: Node would answer a bare 417 before any guard. RFC 9110
  // lets a server ignore an expectation it does not meet, so the request goes through the
  // Host guard, authentication and its route like any other.
  app.server.on('checkExpectation', (request, response) => app.server.emit('request', request, response));
  // First of all hooks, so refusals by the later ones carry it too. Every answer says it comes from Baton, so a client pointed at another server that happens
  // to answer 200 with JSON refuses it instead of reading it as a Baton result.
  app.addHook('onRequest', (_request, reply, done) => {
    void reply.header(batonApiHeader, batonApiVersion);
    done();
  });
  let hosts = allowedHosts(host, options.port ?? defaultPort, options.allowedHosts);
  app.addHook('onListen', async () => {
    hosts = allowedHosts(host, (app.server.address() as AddressInfo).port, options.allowedHosts);
  });
  guardHosts(app, () => hosts);
  refuseMalformedQuery(app);
  closeGracefully(app, requestTimeout);
  installJsonParser(app);
  // No parsing hook: src/http/auth.ts reads the session cookie only when a request needs it.
  await app.register(fastifyCookie, { hook: false });

  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/v1/openapi.json', async (request) =>
    openApiDocument(request.port, deps.work ?? defaultWorkConfig),
  );
  registerSessionRoutes(app, deps);
  registerOperationRoutes(app, deps);
  registerWorkRoutes(
    app,
    deps,
    options.maxStreamsPerToken === undefined ? {} : { maxStreamsPerToken: options.maxStreamsPerToken },
  );
  registerWebRoutes(app);
  registerMcpRoutes(app, {
    deps,
    authenticate: (request) => authenticateToken(deps, bearerToken(request)),
    ...(options.workspace === undefined ? {} : { workspace: options.workspace }),
  });
  return app;
}

function warnBeyondLoopback(app: FastifyInstance, host: string, url: string, logging: boolean): void {
  const message =
    `Baton is listening on ${host}, beyond this machine (${url}). Every /v1 route and /mcp requires a ` +
    'project token, but this server speaks plain HTTP: put TLS in front of it, or tokens and session ' +
    'cookies cross the network in clear. Only the Host names allowed by allowedHosts are served.';
  if (logging) app.log.warn(message);
  else process.stderr.write(`warning: ${message}\n`);
}

/** Why the server cannot listen, as a BatonError that says what to do; other errors as they are. */
function cannotListen(error: unknown, host: string, port: number): unknown {
  switch ((error as { code?: unknown }).code) {
    case 'EADDRINUSE':
      return new BatonError(
        'unavailable',
        `${hostWithPort(host, port)} is in use by another program (another baton serve?): stop it, or choose ` +
          'another port (--port; --port 0 picks a free one)',
        { host, port },
      );
    case 'EADDRNOTAVAIL':
      return new BatonError(
        'invalid_input',
        `this machine has no address ${host}: listen on 127.0.0.1 (this machine only), 0.0.0.0 (every ` +
          'interface) or one of its own addresses',
        { host },
      );
    case 'EACCES':
      return new BatonError(
        'invalid_input',
        `listening on port ${port} needs privileges this process does not have: choose a port above 1023`,
        { host, port },
      );
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return new BatonError('invalid_input', `the host name ${host} cannot be resolved to an address`, {
        host,
      });
    default:
      return error;
  }
}

export async function startServer(
  options: ServeOptions,
): Promise<{ url: string; app: FastifyInstance; close(): Promise<void> }> {
  const app = await buildApp(options);
  const host = options.host ?? defaultHost;
  const port = options.port ?? defaultPort;
  try {
    await app.listen({ host, port });
  } catch (error) {
    await app.close();
    throw cannotListen(error, host, port);
  }
  const bound = (app.server.address() as AddressInfo).port;
  const url = `http://${hostWithPort(['0.0.0.0', '::'].includes(host) ? '127.0.0.1' : host, bound)}`;
  if (!isLoopback(host)) warnBeyondLoopback(app, host, url, options.logger !== false);
  return { url, app, close: () => app.close() };
}
