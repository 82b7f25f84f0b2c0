/**
 * Who is calling, over HTTP: a bearer token in the Authorization header, or the web session
 * cookie (with its CSRF secret in X-CSRF-Token for writes). The rules themselves live in
 * src/app/auth.ts; this file only reads the request, and logs people in and out.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import {
  authenticateSession,
  authenticateToken,
  authorize,
  createWebSession,
  endWebSession,
  type Principal,
} from '../app/auth.ts';
import type { AppDeps } from '../app/deps.ts';
import type { Access } from '../app/operations.ts';
import { BatonError } from '../core/errors.ts';
import { isLoopback } from './hosts.ts';

export const csrfHeader = 'x-csrf-token';

/**
 * The session cookie's name at the port the page sees. Browsers send a host's cookies to every
 * port of it, so two servers on one host must not share a name (each would overwrite the
 * other's session); the name carries the Host header's port, and is plain `baton_session`
 * only when the Host names no port (the scheme's default).
 */
export function sessionCookieName(port: number | null): string {
  return port === null ? 'baton_session' : `baton_session_${port}`;
}

/**
 * The token of `Authorization: Bearer <token>`; undefined without the header, and '' (which no
 * token matches) when the header is there but is not a bearer credential.
 */
export function bearerToken(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (header === undefined) return undefined;
  return /^Bearer +(\S+) *$/i.exec(header)?.[1] ?? '';
}

function headerText(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return typeof value === 'string' ? value : undefined;
}

/**
 * The session cookie's value. Cookies are parsed here, on demand, and not by a hook on every
 * request: only a request without an Authorization header reads them.
 */
function sessionOf(request: FastifyRequest): string | undefined {
  const header = request.headers.cookie;
  return header === undefined
    ? undefined
    : request.server.parseCookie(header)[sessionCookieName(request.port)];
}

/** The principal of a request; an Authorization header, when present, is the only credential read. */
export async function authenticateRequest(deps: AppDeps, request: FastifyRequest): Promise<Principal> {
  if (request.headers.authorization !== undefined) return authenticateToken(deps, bearerToken(request));
  const session = sessionOf(request);
  if (session !== undefined) {
    return authenticateSession(deps, session, headerText(request, csrfHeader));
  }
  throw new BatonError(
    'unauthorized',
    'send Authorization: Bearer <token>, or log in with a token at POST /v1/session',
  );
}

/** The cookie's attributes: Secure unless the page is plain http on this machine. */
function cookieOptions(request: FastifyRequest) {
  return {
    httpOnly: true,
    sameSite: 'strict',
    path: '/',
    secure: request.protocol === 'https' || !isLoopback(request.hostname),
  } as const;
}

/**
 * A login takes no body (an empty object at most): the token goes in the Authorization header.
 * A body is refused rather than ignored, so a token sent there is not silently dropped.
 */
function refuseLoginBody(body: unknown): void {
  const empty =
    body === undefined ||
    (typeof body === 'object' && body !== null && !Array.isArray(body) && Object.keys(body).length === 0);
  if (!empty) {
    throw new BatonError(
      'invalid_input',
      'POST /v1/session takes no body: send the token in the Authorization: Bearer header',
      { issues: [{ path: '', message: 'no body' }] },
    );
  }
}

/** POST /v1/session logs in with a token and sets the session cookie; DELETE /v1/session logs out. */
export function registerSessionRoutes(app: FastifyInstance, deps: AppDeps): void {
  app.post('/v1/session', async (request, reply) => {
    refuseLoginBody(request.body);
    const session = await createWebSession(deps, bearerToken(request));
    void reply.setCookie(sessionCookieName(request.port), session.session, {
      ...cookieOptions(request),
      expires: new Date(session.expires_at),
    });
    const { project_id, read_only } = session.principal;
    return { csrf: session.csrf, expires_at: session.expires_at, project_id, read_only };
  });
  app.delete('/v1/session', async (request, reply) => {
    await endWebSession(deps, sessionOf(request));
    return reply.clearCookie(sessionCookieName(request.port), cookieOptions(request)).code(204).send();
  });
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Who is calling, set by a guarded route's onRequest hook; undefined on unguarded routes. */
    principal: Principal | undefined;
  }
}

/**
 * A route's onRequest hook: authenticate and authorize before the body is read, and keep the
 * principal on the request for the handler (a decorated field: no per-request map).
 */
export function guard(app: FastifyInstance, deps: AppDeps, access: Access) {
  if (!app.hasRequestDecorator('principal')) app.decorateRequest('principal', undefined);
  return async (request: FastifyRequest): Promise<void> => {
    const principal = await authenticateRequest(deps, request);
    authorize(principal, access);
    request.principal = principal;
  };
}

/** The principal a guard admitted; only a guarded route's handler asks. */
export function requestPrincipal(request: FastifyRequest): Principal {
  if (request.principal === undefined) throw new Error(`${request.url} is not a guarded route`);
  return request.principal;
}
