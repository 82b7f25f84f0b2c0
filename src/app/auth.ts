/**
 * Authentication and authorization for every surface. A bearer token belongs to one project
 * and may be read-only; only the SHA-256 of its secret is stored, and the secret is shown once.
 * A web session is a second secret (an HttpOnly cookie) bound to a token, with a CSRF secret
 * that every cookie-authenticated request must echo. Labels and scope ids are never access control.
 */
import { hash, randomBytes, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { BatonError } from '../core/errors.ts';
import { uuidv7Generator } from '../core/ids.ts';
import { parseRecord } from '../core/records.ts';
import type { TokenRecord } from '../store/store.ts';
import type { AppDeps } from './deps.ts';
import type { Access } from './operations.ts';

/** Who is calling: the project their token is bound to, and whether they may write. */
export interface Principal {
  readonly project_id: string;
  readonly token_id: string;
  readonly read_only: boolean;
}

export const tokenPrefix = 'baton_';
export const sessionLifetimeMs = 12 * 60 * 60 * 1000;

function secret(): string {
  return randomBytes(32).toString('base64url');
}

export function hashSecret(value: string): string {
  return hash('sha256', value, 'hex');
}

function principalOf(token: TokenRecord): Principal {
  return { project_id: token.project_id, token_id: token.token_id, read_only: token.read_only };
}

const tokenInput = z.strictObject({
  project_id: z.string(),
  read_only: z.boolean().default(false),
  label: z.string().max(200).default(''),
});

export interface CreatedToken {
  /** The secret, shown once; Baton keeps only its hash. */
  readonly token: string;
  readonly token_id: string;
  readonly project_id: string;
  readonly read_only: boolean;
  readonly label: string;
  readonly created_at: string;
}

export async function createToken(deps: AppDeps, input: unknown): Promise<CreatedToken> {
  const parsed = parseRecord(tokenInput, input, 'token');
  const token = `${tokenPrefix}${secret()}`;
  const record = await deps.store.createToken({
    token_id: uuidv7Generator(deps.clock)(),
    project_id: parsed.project_id,
    token_hash: hashSecret(token),
    read_only: parsed.read_only,
    label: parsed.label,
  });
  return {
    token,
    token_id: record.token_id,
    project_id: record.project_id,
    read_only: record.read_only,
    label: record.label,
    created_at: record.created_at,
  };
}

/** A token as it may be shown: never its secret, nor the secret's hash. */
export interface TokenInfo {
  readonly token_id: string;
  readonly project_id: string;
  readonly label: string;
  readonly read_only: boolean;
  readonly created_at: string;
  readonly revoked_at: string | null;
}

function tokenInfo(token: TokenRecord): TokenInfo {
  const { token_id, project_id, label, read_only, created_at, revoked_at } = token;
  return { token_id, project_id, label, read_only, created_at, revoked_at };
}

/** The project's tokens, revoked ones included, oldest first. */
export async function listTokens(deps: AppDeps, project_id: string): Promise<TokenInfo[]> {
  return (await deps.store.listTokens(project_id)).map(tokenInfo);
}

/**
 * Revoke a token of the project: it authenticates nothing from now on, and its web sessions
 * end. Revoking a revoked token answers its record again (when it was first revoked).
 */
export async function revokeToken(deps: AppDeps, project_id: string, token_id: string): Promise<TokenInfo> {
  return tokenInfo(await deps.store.revokeToken(project_id, token_id));
}

/** The principal of a bearer token; unauthorized when it is missing, malformed, unknown or revoked. */
export async function authenticateToken(deps: AppDeps, token: string | undefined): Promise<Principal> {
  if (!token || !token.startsWith(tokenPrefix) || token.length > 200) {
    throw new BatonError('unauthorized', 'a valid bearer token is required (Authorization: Bearer baton_…)');
  }
  const record = await deps.store.findToken(hashSecret(token));
  if (!record) throw new BatonError('unauthorized', 'the token is unknown or revoked');
  return principalOf(record);
}

/** forbidden when a read-only principal calls a write. */
export function authorize(principal: Principal, access: Access): void {
  if (access === 'write' && principal.read_only) {
    throw new BatonError('forbidden', 'this token is read-only', { token_id: principal.token_id });
  }
}

export interface WebSession {
  /** The cookie value: a secret, stored only as its hash. */
  readonly session: string;
  /** Echoed by the page in a header on every request. */
  readonly csrf: string;
  readonly expires_at: string;
  readonly principal: Principal;
}

/**
 * Log in with a token: a new session secret and CSRF secret, valid for twelve hours. A token
 * keeps its sessionsPerToken newest sessions; older and expired ones end here.
 */
export async function createWebSession(deps: AppDeps, token: string | undefined): Promise<WebSession> {
  const principal = await authenticateToken(deps, token);
  const session = secret();
  const csrf = secret();
  const now = deps.clock.now();
  const expires_at = new Date(now.getTime() + sessionLifetimeMs).toISOString();
  await deps.store.createSession(
    {
      session_hash: hashSecret(session),
      token_id: principal.token_id,
      csrf_hash: hashSecret(csrf),
      expires_at,
    },
    now.toISOString(),
  );
  return { session, csrf, expires_at, principal };
}

/**
 * The principal of a session cookie, which every request, read or write, must pair with the
 * session's CSRF secret. Browsers send a host's cookies to all of its ports, so any other
 * service on the same host may receive the cookie: alone, it opens nothing.
 */
export async function authenticateSession(
  deps: AppDeps,
  session: string | undefined,
  csrf: string | undefined,
): Promise<Principal> {
  if (!session || session.length > 200)
    throw new BatonError('unauthorized', 'no valid session; log in again');
  const record = await deps.store.findSession(hashSecret(session), deps.clock.now().toISOString());
  if (!record) throw new BatonError('unauthorized', 'the session expired or was ended; log in again');
  const expected = Buffer.from(record.csrf_hash, 'hex');
  const given = Buffer.from(hashSecret(csrf ?? ''), 'hex');
  if (!csrf || !timingSafeEqual(expected, given)) {
    throw new BatonError(
      'forbidden',
      "a request with a session cookie needs the session's CSRF token in the X-CSRF-Token header",
    );
  }
  return principalOf(record.token);
}

export async function endWebSession(deps: AppDeps, session: string | undefined): Promise<void> {
  if (session && session.length <= 200) await deps.store.deleteSession(hashSecret(session));
}
