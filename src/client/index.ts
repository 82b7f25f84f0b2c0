/**
 * The typed HTTP client of a Baton server (`baton-work/client`): one method per registry
 * operation, named in camelCase after its operationId (`capture_source` → `captureSource`),
 * plus `invoke(operationId, input)`, and the managed-work methods of ./work.ts (startSession,
 * getWork, createWork, …). GET operations send their input as query parameters,
 * POST operations as JSON; every request carries `Authorization: Bearer <token>`, and the
 * token decides the project. A server error `{error: {code, message, details}}` becomes a
 * BatonError with that code, message and data; a network failure becomes BatonError('unavailable').
 */
import { findOperation, operations } from '../app/operations.ts';
import { batonApiHeader, batonApiVersion, bodyLimit } from '../core/api.ts';
import { BatonError } from '../core/errors.ts';
import { checkedAnswer, describeFailure as describe, errorOf, parseJson as parse } from './errors.ts';
import { serverAddressProblem, shownAddress } from '../core/urls.ts';
import type { OperationId, OperationInput, OperationResult, ReportInput, ReportResult } from './types.ts';
import type { WorkEventMessage } from '../core/work/live.ts';
import { workEvents, type WorkEventsInput, type WorkEventsOptions } from './events.ts';
import { workMethods, type WorkMethods } from './work.ts';

export type * from './types.ts';
export type * from './work.ts';
export type { WorkEventsInput, WorkEventsOptions } from './events.ts';
export type { LiveEventName, WorkEventMessage } from '../core/work/live.ts';
export { unreadableEventName } from '../core/work/live.ts';
export { BatonError, type ErrorCode } from '../core/errors.ts';

export interface ClientOptions {
  /** Where the server listens, e.g. `http://127.0.0.1:8787`; a path prefix is kept. */
  readonly baseUrl: string | URL;
  /** A bearer token from `baton token create` or `baton init`. */
  readonly token: string;
  /** A fetch implementation (tests, proxies); the global fetch by default. */
  readonly fetch?: typeof fetch;
  /**
   * How long one request may take, answer included, before it fails as `unavailable`;
   * default 60,000 ms. A server that accepts the connection and never answers would otherwise
   * hold the caller for minutes.
   */
  readonly timeoutMs?: number;
}

export const defaultTimeoutMs = 60_000;

type CamelCase<S extends string> = S extends `${infer Head}_${infer Tail}`
  ? `${Head}${Capitalize<CamelCase<Tail>>}`
  : S;

/** Operations whose every input field is optional may be called without an input. */
type Call<Id extends OperationId> = (
  ...input: Record<string, never> extends OperationInput<Id>
    ? [input?: OperationInput<Id>]
    : [input: OperationInput<Id>]
) => Promise<OperationResult<Id>>;

export type OperationMethods = {
  readonly [Id in OperationId as CamelCase<Id>]: Call<Id>;
};

export type BatonClient = Omit<OperationMethods, 'getReport'> &
  WorkMethods & {
    /** The Handoff Report: the project's, or one workstream's with scope_id; Markdown with format. */
    getReport<I extends ReportInput = Record<string, never>>(input?: I): Promise<ReportResult<I>>;
    /**
     * GET /v1/sessions/{session_id}/events: the session's work events after `after`, then each
     * new one, until the signal aborts or the loop breaks. A refusal is its BatonError; a
     * stream that breaks off or stays silent past `idleTimeoutMs` is `unavailable` with
     * `details.after`, the position to resume after.
     */
    workEvents(input: WorkEventsInput, options?: WorkEventsOptions): AsyncIterable<WorkEventMessage>;
    /** Call any operation by its operationId. */
    invoke<Id extends OperationId>(operationId: Id, input: OperationInput<Id>): Promise<OperationResult<Id>>;
  };

/** The method name of an operation: `record_task_outcome` → `recordTaskOutcome`. */
export function methodName(operationId: string): string {
  return operationId.replace(/_([a-z])/g, (_match, letter: string) => letter.toUpperCase());
}

function queryOf(input: Readonly<Record<string, unknown>>): string {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(input)) {
    if (value === undefined) continue;
    query.set(
      name,
      typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean'
        ? String(value)
        : JSON.stringify(value),
    );
  }
  const text = query.toString();
  return text === '' ? '' : `?${text}`;
}

/** The server's address as a URL; anything but http(s) is refused as invalid_input. */
function serverBase(baseUrl: string | URL): URL {
  const given = String(baseUrl);
  const problem = serverAddressProblem(given);
  if (problem !== undefined) {
    throw new BatonError('invalid_input', `baseUrl ${problem}`, { baseUrl: shownAddress(given) });
  }
  return new URL(given);
}

/** A client for one server and token. */
export function createClient(options: ClientOptions): BatonClient {
  const base = serverBase(options.baseUrl);
  // fetch would refuse such a header as if the server could not be reached.
  if (typeof options.token !== 'string' || !/^[\x21-\x7e]+$/.test(options.token)) {
    throw new BatonError(
      'invalid_input',
      'the token holds spaces, control characters or non-ASCII characters, which no token has: check --token or BATON_TOKEN',
      { issues: [{ path: 'token', message: 'visible ASCII characters only' }] },
    );
  }
  if (!base.pathname.endsWith('/')) base.pathname += '/';
  const send = options.fetch ?? globalThis.fetch;
  const timeoutMs = options.timeoutMs ?? defaultTimeoutMs;

  /** One request; the answer's JSON, or the BatonError of its error envelope. */
  async function request(
    method: 'GET' | 'POST',
    path: string,
    what: string,
    body?: unknown,
  ): Promise<unknown> {
    const url = new URL(path.replace(/^\//, ''), base);
    const post = method === 'POST';
    let response: Response;
    const signal = AbortSignal.timeout(timeoutMs);
    const late = () =>
      new BatonError(
        'unavailable',
        `the Baton server at ${base.origin} did not answer within ${timeoutMs} ms`,
        {
          url: url.href,
          timeout_ms: timeoutMs,
        },
      );
    const json = post ? JSON.stringify(body ?? {}) : undefined;
    // The server would answer 413, but it closes the connection while a large body is still
    // being sent, and fetch then reports a broken pipe instead of the answer.
    // A UTF-16 unit is at most 3 bytes of UTF-8: most bodies are counted without encoding them.
    const bytes =
      json === undefined || json.length * 3 <= bodyLimit ? 0 : new TextEncoder().encode(json).length;
    if (bytes > bodyLimit) {
      throw new BatonError(
        'payload_too_large',
        `the ${what} request is ${bytes} bytes; a Baton server accepts at most ${bodyLimit}`,
        { bytes, limit: bodyLimit },
      );
    }
    try {
      response = await send(url, {
        signal,
        method,
        headers: {
          authorization: `Bearer ${options.token}`,
          accept: 'application/json',
          ...(post ? { 'content-type': 'application/json' } : {}),
        },
        ...(json === undefined ? {} : { body: json }),
      });
    } catch (error) {
      if (signal.aborted) throw late();
      throw new BatonError(
        'unavailable',
        `cannot reach the Baton server at ${base.origin}: ${describe(error)}`,
        {
          url: url.href,
        },
      );
    }
    let text: string;
    try {
      text = await response.text();
    } catch (error) {
      if (signal.aborted) throw late();
      throw new BatonError('unavailable', `the answer from ${base.origin} broke off: ${describe(error)}`, {
        url: url.href,
      });
    }
    const parsed = parse(text);
    if (!response.ok) throw errorOf(response.status, parsed);
    if (response.headers.get(batonApiHeader) !== batonApiVersion) {
      throw new BatonError(
        'unavailable',
        `the server at ${base.origin} answered ${what}, but not as a Baton server (no ${batonApiHeader}: ${batonApiVersion} header): check --server`,
        { status: response.status, url: url.href },
      );
    }
    if (parsed === undefined) {
      throw new BatonError('unavailable', `the server at ${base.origin} answered ${what} with no JSON`, {
        status: response.status,
      });
    }
    // Every Baton result is a JSON object or a list: anything else is not an answer to read.
    if (typeof parsed !== 'object' || parsed === null) {
      throw new BatonError(
        'unavailable',
        `the server at ${base.origin} answered ${what} with ${parsed === null ? 'null' : `a ${typeof parsed}`}, not a result: check --server and that both run the same Baton version`,
        { status: response.status, url: url.href },
      );
    }
    return parsed;
  }

  async function invoke(operationId: string, input: unknown = {}): Promise<unknown> {
    const operation = findOperation(operationId);
    if (!operation) throw new BatonError('invalid_input', `no operation ${operationId}`, { operationId });
    if (typeof input !== 'object' || input === null || Array.isArray(input)) {
      throw new BatonError('invalid_input', `${operationId} takes a JSON object`, { operationId });
    }
    const get = operation.method === 'GET';
    const answer = await (get
      ? request('GET', operation.path + queryOf(input as Record<string, unknown>), operationId)
      : request('POST', operation.path, operationId, input));
    return checkedAnswer(operation.output, answer, operationId, base.origin);
  }

  const client: Record<string, unknown> = { invoke };
  for (const { operationId } of operations) {
    client[methodName(operationId)] = (input?: unknown) => invoke(operationId, input);
  }
  Object.assign(client, workMethods(request, base.origin));
  client.workEvents = (input: WorkEventsInput, events?: WorkEventsOptions) =>
    workEvents(
      { base, credentials: { authorization: `Bearer ${options.token}` }, fetch: send, timeoutMs },
      input,
      events,
    );
  return client as unknown as BatonClient;
}
