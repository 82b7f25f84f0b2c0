/**
 * BatonError is the one internal error type: a stable string code, a message for people and
 * structured data for programs. Surfaces map it to HTTP, MCP and CLI encodings at the edge.
 */

export const errorCodes = [
  'invalid_input',
  'not_found',
  'conflict',
  'revision_conflict',
  'precondition_failed',
  'unauthorized',
  'forbidden',
  'payload_too_large',
  'too_many_requests',
  'unavailable',
] as const;

export type ErrorCode = (typeof errorCodes)[number];

export type ErrorData = Readonly<Record<string, unknown>>;

export class BatonError extends Error {
  override readonly name = 'BatonError';
  readonly code: ErrorCode;
  readonly data: ErrorData;

  constructor(code: ErrorCode, message: string, data: ErrorData = {}) {
    super(message);
    this.code = code;
    this.data = data;
  }

  toJSON(): { code: ErrorCode; message: string; data: ErrorData } {
    return { code: this.code, message: this.message, data: this.data };
  }
}

export function isBatonError(value: unknown, code?: ErrorCode): value is BatonError {
  return value instanceof BatonError && (code === undefined || value.code === code);
}
