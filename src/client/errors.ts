/**
 * A server's error answer as the BatonError it stands for: the envelope's code, message and
 * details when the body is Baton's error shape, else the code its status means.
 */
import type { z } from 'zod';
import { BatonError, errorCodes, type ErrorCode } from '../core/errors.ts';

function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && (errorCodes as readonly string[]).includes(value);
}

/** The code a bare status means when the body is not Baton's error shape. */
function codeOfStatus(status: number): ErrorCode {
  if (status === 401) return 'unauthorized';
  if (status === 403) return 'forbidden';
  if (status === 404) return 'not_found';
  if (status === 409) return 'conflict';
  if (status === 412) return 'precondition_failed';
  if (status === 413) return 'payload_too_large';
  if (status === 429) return 'too_many_requests';
  return status >= 500 ? 'unavailable' : 'invalid_input';
}

export function errorOf(status: number, body: unknown): BatonError {
  const error = (body as { error?: { code?: unknown; message?: unknown; details?: unknown } } | null)?.error;
  if (error && typeof error.code === 'string' && typeof error.message === 'string') {
    const details = typeof error.details === 'object' && error.details !== null ? error.details : {};
    // A wire code Baton's errors do not have (the server's `internal`) keeps its name in the data.
    return isErrorCode(error.code)
      ? new BatonError(error.code, error.message, { ...details })
      : new BatonError(codeOfStatus(status), error.message, { ...details, code: error.code, status });
  }
  return new BatonError(codeOfStatus(status), `the server answered HTTP ${status}`, { status });
}

/** A body's JSON, or undefined when it is not JSON. */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** What a failed fetch says went wrong: the system's code (ECONNREFUSED) when it has one. */
export function describeFailure(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (error as Error).message ?? String(error);
}

/**
 * A successful answer held to its operation's published result schema (open objects): what the
 * client's types promise the caller. One that does not fit is refused as unavailable, naming
 * the first field that does not: the server is another program, or another Baton version.
 */
export function checkedAnswer(
  schema: z.ZodType,
  answer: unknown,
  operationId: string,
  origin: string,
): unknown {
  const checked = schema.safeParse(answer);
  if (checked.success) return answer;
  const issue = checked.error.issues[0]!;
  const at = issue.path.length === 0 ? 'the answer' : issue.path.join('.');
  throw new BatonError(
    'unavailable',
    `the server at ${origin} answered ${operationId} in a form this client cannot read (${at}: ${issue.message}): check --server and that both run the same Baton version`,
    { operationId, path: issue.path.map(String) },
  );
}
