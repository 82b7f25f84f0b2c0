/**
 * The one map from errors to HTTP: a BatonError becomes its status and the envelope
 * `{error: {code, message, details}}`; Fastify's own client errors (body too large, bad content
 * type, malformed request) and the requests Node's HTTP parser refuses (headers too large, bad
 * request line or chunked body) join the same envelope as 4xx; anything else is a logged 500
 * whose message says nothing about its cause.
 */
import type { Socket } from 'node:net';
import { STATUS_CODES } from 'node:http';
import type { ConnectionError, FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  batonApiHeader,
  batonApiVersion,
  bodyLimit,
  type ErrorEnvelope,
  type WireCode,
} from '../core/api.ts';
import { BatonError, type ErrorCode, type ErrorData } from '../core/errors.ts';

export const statusOf: Readonly<Record<ErrorCode, number>> = {
  invalid_input: 422,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  revision_conflict: 409,
  precondition_failed: 412,
  payload_too_large: 413,
  too_many_requests: 429,
  unavailable: 503,
};

/** invalid_input for a request that could not be read at all (not JSON, wrong type): 400, not 422. */
export class MalformedRequest extends BatonError {
  constructor(message: string, data: ErrorData = {}) {
    super('invalid_input', message, data);
  }
}

export interface EncodedError {
  readonly status: number;
  readonly body: ErrorEnvelope;
}

function envelope(code: WireCode, message: string, details: ErrorData = {}): ErrorEnvelope {
  return { error: { code, message, details } };
}

/** Fastify's own 4xx (FST_ERR_CTP_*, bad URL, …): the client's fault, never a 5xx. */
function clientError(error: FastifyError, status: number): EncodedError {
  if (status === 413) {
    return {
      status,
      body: envelope(
        'payload_too_large',
        `the request body is larger than the server accepts (${bodyLimit} bytes)`,
        {
          limit: bodyLimit,
        },
      ),
    };
  }
  if (status === 404) return { status, body: envelope('not_found', error.message) };
  if (status === 401 || status === 403) {
    return { status, body: envelope(status === 401 ? 'unauthorized' : 'forbidden', error.message) };
  }
  const message =
    error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE'
      ? 'send the body as application/json'
      : error.code === 'FST_ERR_CTP_EMPTY_JSON_BODY'
        ? 'the body is empty; send a JSON object'
        : error.message;
  return { status: 400, body: envelope('invalid_input', message) };
}

/** The status and envelope of any error; internal is true only for the 500 of an unexpected one. */
export function encodeError(error: unknown): EncodedError & { internal: boolean } {
  if (error instanceof MalformedRequest) {
    return { status: 400, body: envelope(error.code, error.message, error.data), internal: false };
  }
  if (error instanceof BatonError) {
    return {
      status: statusOf[error.code],
      body: envelope(error.code, error.message, error.data),
      internal: false,
    };
  }
  const status = (error as Partial<FastifyError> | null)?.statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    return { ...clientError(error as FastifyError, status), internal: false };
  }
  return {
    status: 500,
    body: envelope('internal', 'internal error; the server log has the details'),
    internal: true,
  };
}

export function sendError(request: FastifyRequest, reply: FastifyReply, error: unknown): FastifyReply {
  const encoded = encodeError(error);
  if (encoded.internal) request.log.error({ err: error }, 'request failed');
  else request.log.info({ code: encoded.body.error.code, status: encoded.status }, 'request refused');
  const body = encoded.internal
    ? envelope('internal', encoded.body.error.message, { request_id: request.id })
    : encoded.body;
  // Also for refusals answered before any hook ran (a malformed URL): every answer says it is Baton's.
  return reply
    .code(encoded.status)
    .header(batonApiHeader, batonApiVersion)
    .type('application/json; charset=utf-8')
    .send(body);
}

/**
 * The status and envelope of a request Node's parser refused. The codes of the parser (HPE_…)
 * name what was wrong without echoing any of the request's bytes. Headers over the limit keep
 * their own status 431 and take the code of every other too-large request.
 */
function parserError(code: string): { status: number; body: ErrorEnvelope } {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return {
        status: 431,
        body: envelope('payload_too_large', 'the request headers are larger than the server accepts'),
      };
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return {
        status: 413,
        body: envelope('payload_too_large', 'the chunk extensions are larger than the server accepts'),
      };
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return { status: 408, body: envelope('invalid_input', 'the request did not arrive in time') };
    default:
      return { status: 400, body: envelope('invalid_input', `the request is malformed (${code})`) };
  }
}

/**
 * Fastify's clientErrorHandler: answers on the raw socket, then closes it, since the parser
 * cannot find where the next request starts. Nothing is written to a socket that is gone or that
 * already carries a response (that would corrupt it), and the error is logged by its code only:
 * its rawPacket holds the request's bytes, credentials included.
 */
export function answerClientError(this: FastifyInstance, error: ConnectionError, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const inFlight = (socket as { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (!socket.writable || inFlight?.headersSent === true) {
    socket.destroy();
    return;
  }
  const { status, body } = parserError(error.code);
  this.log.info({ code: body.error.code, status, reason: error.code }, 'request refused');
  const text = JSON.stringify(body);
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
      'content-type: application/json; charset=utf-8\r\n' +
      `${batonApiHeader}: ${batonApiVersion}\r\n` +
      `content-length: ${Buffer.byteLength(text)}\r\n` +
      `connection: close\r\n\r\n${text}`,
    () => socket.destroy(),
  );
}

/** One error handler and one not-found handler for the whole app, MCP routes included. */
export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error, request, reply) => sendError(request, reply, error));
  app.setNotFoundHandler((request, reply) =>
    sendError(
      request,
      reply,
      new BatonError('not_found', `no route ${request.method} ${request.url.split('?')[0]}`),
    ),
  );
}
