/**
 * The page's only way to the server: same-origin fetch with the session cookie, the CSRF
 * secret on every write, and one error type. `status` 0 means no answer arrived (the network or
 * the server failed): the request may or may not have taken effect, so a caller retries the
 * same idempotent request rather than a new one.
 */
import { workEvents } from '../../src/client/events.ts';
import { BatonError } from '../../src/core/errors.ts';
import type { WorkEventMessage } from '../../src/core/work/live.ts';
import type {
  AcknowledgeInput,
  AcknowledgeResult,
  BoundaryInput,
  CommitResult,
  HandoffReport,
  HandoffResolution,
  ListSessionsResult,
  OutcomeInput,
  OutcomeResult,
  PreparedResult,
  Transcript,
  WebSession,
  WorkSnapshot,
  WorkstreamReport,
} from './types.ts';

/** How often a view that is not live reloads while its tab is visible. */
export const refreshIntervalMs = 5000;

/** How long the server may take to start answering an event stream. */
const streamStartMs = 30_000;

export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly details: Readonly<Record<string, unknown>>;

  constructor(
    status: number,
    code: string,
    message: string,
    details: Readonly<Record<string, unknown>> = {},
  ) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
    this.details = details;
  }

  /** No answer, or the server failed: the outcome is unknown and the same request may be retried. */
  get unconfirmed(): boolean {
    return this.status === 0 || this.status >= 500;
  }
}

async function request<T>(
  method: string,
  path: string,
  init: { body?: unknown; csrf?: string; token?: string },
) {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  if (init.csrf !== undefined) headers['x-csrf-token'] = init.csrf;
  if (init.token !== undefined) headers.authorization = `Bearer ${init.token}`;
  let response: Response;
  try {
    response = await fetch(path, {
      method,
      headers,
      credentials: 'same-origin',
      cache: 'no-store',
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
    });
  } catch (error) {
    // Offline, nothing left the browser; otherwise the request may have arrived, its answer lost.
    const offline = typeof navigator !== 'undefined' && !navigator.onLine;
    throw new ApiError(
      0,
      offline ? 'offline' : 'no_answer',
      error instanceof Error ? error.message : 'the request failed',
    );
  }
  if (response.status === 204) return undefined as T;
  let body: unknown;
  try {
    body = await response.json();
  } catch {
    throw new ApiError(response.ok ? 0 : response.status, 'network', 'the answer could not be read');
  }
  if (!response.ok) {
    const error = (body as { error?: { code?: string; message?: string; details?: Record<string, unknown> } })
      .error;
    throw new ApiError(
      response.status,
      error?.code ?? 'internal',
      error?.message ?? `HTTP ${response.status}`,
      error?.details ?? {},
    );
  }
  return body as T;
}

function query(values: Readonly<Record<string, string | number | undefined>>): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(values))
    if (value !== undefined) params.set(name, String(value));
  const text = params.toString();
  return text ? `?${text}` : '';
}

/**
 * The calls of a logged-in page; every one carries the session's CSRF secret, without which the
 * server reads nothing by the cookie. Any answer 401 (the session expired or was ended
 * elsewhere) also tells onUnauthorized, which returns to the login form, before the caller
 * sees the error.
 */
export function api(csrf: string, onUnauthorized: () => void) {
  const call = async <T>(method: string, path: string, init: { body?: unknown }) => {
    try {
      return await request<T>(method, path, { ...init, csrf });
    } catch (error) {
      if (error instanceof ApiError && error.status === 401) onUnauthorized();
      throw error;
    }
  };
  const post = <T>(path: string, body: unknown) => call<T>('POST', path, { body });
  const session = (session_id: string) => `/v1/sessions/${encodeURIComponent(session_id)}`;
  const item = (session_id: string, item_id: string, action: 'cancel' | 'retry') =>
    `${session(session_id)}/work/items/${encodeURIComponent(item_id)}/${action}`;
  return {
    sessions: () => call<ListSessionsResult>('GET', '/v1/sessions', {}),
    work: (session_id: string) => call<WorkSnapshot>('GET', `${session(session_id)}/work`, {}),
    transcript: (session_id: string) => call<Transcript>('GET', `${session(session_id)}/transcript`, {}),
    cancelItem: (session_id: string, contract_id: string, item_id: string) =>
      post<WorkSnapshot>(item(session_id, item_id, 'cancel'), { contract_id }),
    retryItem: (session_id: string, contract_id: string, item_id: string) =>
      post<WorkSnapshot>(item(session_id, item_id, 'retry'), { contract_id }),
    confirmWork: (
      session_id: string,
      input: {
        contract_id: string;
        revision: number;
        resolutions: { assumption_id: string; resolution: string }[];
      },
    ) => post<WorkSnapshot>(`${session(session_id)}/work/confirm`, input),
    /**
     * A session's work events after a position, as the typed client reads them (the same reader):
     * the cookie and the CSRF secret authenticate the stream. It ends with a BatonError when the
     * server refuses it or the stream breaks off; the caller then reloads the snapshot.
     */
    async *followWork(
      session_id: string,
      after: number,
      options: { signal: AbortSignal; onOpen?: () => void },
    ): AsyncGenerator<WorkEventMessage, void, undefined> {
      try {
        yield* workEvents(
          {
            base: new URL('/', location.href),
            credentials: { 'x-csrf-token': csrf },
            fetch: (url, init) => fetch(url, { ...init, credentials: 'same-origin', cache: 'no-store' }),
            timeoutMs: streamStartMs,
          },
          { session_id, after },
          options,
        );
      } catch (error) {
        if (error instanceof BatonError && error.code === 'unauthorized') onUnauthorized();
        throw error;
      }
    },
    report: () => call<HandoffReport>('GET', '/v1/work/report', {}),
    workstream: (scope_id: string, frozen?: { through?: number; position?: number }) =>
      call<WorkstreamReport>('GET', `/v1/work/report${query({ scope_id, ...frozen })}`, {}),
    markdown: (scope_id: string, frozen?: { through?: number; position?: number }) =>
      call<{ markdown: string }>(
        'GET',
        `/v1/work/report${query({ scope_id, ...frozen, format: 'markdown' })}`,
        {},
      ),
    continueLatest: (scope_id: string) =>
      post<HandoffResolution>('/v1/work/handoffs/continue', { scope_id, selection: 'latest' }),
    prepareCurrent: (input: BoundaryInput) =>
      post<PreparedResult>('/v1/work/handoffs/prepare-current', input),
    commit: (scope_id: string, digest: string, expected_head: number) =>
      post<CommitResult>('/v1/work/handoffs/commit', { scope_id, prepared: digest, expected_head }),
    acknowledge: (input: AcknowledgeInput) => post<AcknowledgeResult>('/v1/work/handoffs/acknowledge', input),
    recordOutcome: (input: OutcomeInput) => post<OutcomeResult>('/v1/work/outcomes/record', input),
    logout: () => call<void>('DELETE', '/v1/session', {}),
  };
}

export type Api = ReturnType<typeof api>;

/** Log in with a project token: the server sets the HttpOnly session cookie and answers the CSRF secret. */
export function login(token: string): Promise<WebSession> {
  return request<WebSession>('POST', '/v1/session', { token });
}
