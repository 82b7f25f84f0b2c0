/**
 * The OpenAPI 3.1 document of the HTTP API, generated from the operation registry and its zod
 * schemas (JSON Schema 2020-12, which OpenAPI 3.1 uses as is): one operation per registry
 * entry with its operationId, summary and request schema, the error envelope, and security.
 * A server's document states its own `[work]` limits (a contract's items, its revisions); a
 * document for no server states the bounds no configuration passes.
 */
import { z } from 'zod';
import { operations, type Operation } from '../app/operations.ts';
import type { WorkLimits } from '../app/work.ts';
import { errorEnvelopeSchema } from '../core/api.ts';
import { sessionIdSchema } from '../core/ledger/names.ts';
import { csrfHeader, sessionCookieName } from './auth.ts';
import { bodyLimit } from './body.ts';
import { defaultMaxStreamsPerToken } from './work-routes.ts';
import { workEndpoints, type WorkEndpoint } from './work-api.ts';
import { liveEventNames, unreadableEventName } from '../core/work/live.ts';
import { heartbeatMs } from './sse.ts';

type JsonSchema = Record<string, unknown>;

function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  const document = z.toJSONSchema(schema, {
    target: 'draft-2020-12',
    io,
    unrepresentable: 'any',
  }) as JsonSchema;
  delete document.$schema;
  return document;
}

const errorStatuses = {
  '400': 'the request could not be read: not JSON, not application/json, or nested too deep (invalid_input)',
  '401': 'no valid token or session (unauthorized)',
  '403':
    "read-only token writing, missing CSRF token, a foreign Host or Origin, or a session workspace outside the server's folders (forbidden)",
  '404': 'no such object in the caller’s project (not_found)',
  '408': 'the request did not arrive whole in time (invalid_input); the connection is closed',
  '409': 'conflict, or revision_conflict with details.actual_head',
  '412': 'precondition_failed',
  '413': `payload_too_large (bodies are limited to ${bodyLimit} bytes)`,
  '422': 'the input does not match the schema (invalid_input, details.issues names each field)',
  '431': 'the request headers are larger than the server accepts (payload_too_large)',
  '500': 'internal: an unexpected failure, logged with details.request_id',
  '503': 'unavailable: the store cannot be reached',
} as const;

const errorResponses = Object.fromEntries(
  Object.entries(errorStatuses).map(([status, description]) => [
    status,
    { description, content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } },
  ]),
);

/** What a route without authentication may still refuse: the Host/Origin guard, and the server's own limits. */
const publicErrorResponses = Object.fromEntries(
  ['400', '403', '408', '431', '500', '503'].map((status) => [status, errorResponses[status]]),
);

const security = [{ bearer: [] }, { session: [], csrf: [] }];

function queryParameters(schema: JsonSchema): JsonSchema[] {
  const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set((schema.required ?? []) as string[]);
  return Object.entries(properties).map(([name, property]) => ({
    name,
    in: 'query',
    required: required.has(name),
    schema: property,
  }));
}

function operationObject(operation: Operation): JsonSchema {
  const input = jsonSchema(operation.input, 'input');
  const markdown = operation.operationId === 'get_report';
  // Parameters cannot need one another in OpenAPI: a query's dependentRequired is an extension.
  const dependent = operation.method === 'GET' ? input.dependentRequired : undefined;
  return {
    operationId: operation.operationId,
    summary: operation.summary,
    tags: [operation.access],
    security,
    'x-baton-access': operation.access,
    'x-baton-idempotent': operation.idempotent,
    ...(dependent === undefined ? {} : { 'x-baton-dependent-required': dependent }),
    ...(operation.method === 'GET'
      ? { parameters: queryParameters(input) }
      : { requestBody: { required: true, content: { 'application/json': { schema: input } } } }),
    responses: {
      '200': {
        description: markdown
          ? 'the report; with format=markdown and Accept: text/markdown, the Markdown text itself'
          : 'the result',
        content: {
          // Read as input: its objects stay open, as a later version may add fields.
          'application/json': { schema: jsonSchema(operation.output, 'input') },
          ...(markdown ? { 'text/markdown': { schema: { type: 'string' } } } : {}),
        },
      },
      ...errorResponses,
    },
  };
}

/** `/v1/sessions/:session_id` → `/v1/sessions/{session_id}`. */
function openApiPath(path: string): string {
  return path.replace(/:([a-z_]+)/g, '{$1}');
}

function pathParameters(endpoint: Pick<WorkEndpoint, 'params' | 'fields'>): JsonSchema[] {
  return endpoint.params.map((name) => ({
    name,
    in: 'path',
    required: true,
    schema: jsonSchema(endpoint.fields[name] as z.ZodType, 'input'),
  }));
}

function workOperationObject(endpoint: WorkEndpoint, limits: WorkLimits | undefined): JsonSchema {
  const fields =
    limits === undefined || endpoint.fieldsFor === undefined ? endpoint.fields : endpoint.fieldsFor(limits);
  const body = z.strictObject({
    ...fields,
    ...Object.fromEntries(endpoint.params.map((name) => [name, (fields[name] as z.ZodType).optional()])),
  });
  return {
    operationId: endpoint.operationId,
    summary: endpoint.summary,
    tags: [endpoint.access, 'work'],
    security,
    'x-baton-access': endpoint.access,
    parameters: pathParameters(endpoint),
    ...(endpoint.method === 'POST'
      ? {
          requestBody: {
            required: endpoint.params.length === 0,
            description:
              endpoint.params.length === 0
                ? undefined
                : `The path's ${endpoint.params.join(' and ')} ${endpoint.params.length === 1 ? 'is' : 'are'} merged in; a body naming another value is refused (422).`,
            content: { 'application/json': { schema: jsonSchema(body, 'input') } },
          },
        }
      : {}),
    responses: {
      '200': {
        description: 'the result',
        content: { 'application/json': { schema: jsonSchema(endpoint.output, 'input') } },
      },
      ...errorResponses,
    },
  };
}

function workEventsObject(): JsonSchema {
  return {
    operationId: 'work_events',
    summary:
      'Server-Sent Events: every work event of the session after Last-Event-ID (or ?after=N), then live. ' +
      'Each frame is `id: <ledger position>`, `event: <name>`, `data: {position, recorded_at, event}`. ' +
      'To rebuild, GET the work snapshot and resume from its position.',
    tags: ['read', 'work'],
    security,
    'x-baton-access': 'read',
    'x-baton-events': [...liveEventNames, unreadableEventName],
    'x-baton-heartbeat-ms': heartbeatMs,
    parameters: [
      ...pathParameters({ params: ['session_id'], fields: { session_id: sessionIdSchema } }),
      {
        name: 'Last-Event-ID',
        in: 'header',
        required: false,
        schema: { type: 'string', pattern: '^(?:\\d{1,15})?$' },
        description: 'Resume after this ledger position; wins over ?after. Empty counts as absent.',
      },
      { name: 'after', in: 'query', required: false, schema: { type: 'string', pattern: '^\\d{1,15}$' } },
    ],
    responses: {
      '200': {
        description: 'an event stream that ends when the client or the server goes away',
        content: { 'text/event-stream': { schema: { type: 'string' } } },
      },
      ...errorResponses,
      '429': {
        description: `too_many_requests: the token holds the server's limit of open event streams already (${defaultMaxStreamsPerToken} unless configured)`,
        content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
      },
    },
  };
}

const fixedPaths = {
  '/healthz': {
    get: {
      operationId: 'health',
      summary: 'Liveness: {status: "ok"}; no authentication.',
      security: [],
      responses: { '200': { description: 'the server is up' }, ...publicErrorResponses },
    },
  },
  '/v1/openapi.json': {
    get: {
      operationId: 'openapi',
      summary: 'This document; no authentication.',
      security: [],
      responses: { '200': { description: 'the OpenAPI 3.1 document' }, ...publicErrorResponses },
    },
  },
  '/v1/session': {
    post: {
      operationId: 'create_session',
      summary:
        'Log a web page in with a bearer token: sets the session cookie and returns the CSRF secret that every request with it must send.',
      security: [{ bearer: [] }],
      responses: {
        '200': {
          description: 'the session',
          content: {
            'application/json': {
              schema: {
                type: 'object',
                properties: {
                  csrf: { type: 'string' },
                  expires_at: { type: 'string', format: 'date-time' },
                  project_id: { type: 'string' },
                  read_only: {
                    type: 'boolean',
                    description:
                      "Whether the session's token is read-only: every write with it is refused 403 forbidden.",
                  },
                },
                required: ['csrf', 'expires_at', 'project_id', 'read_only'],
              },
            },
          },
        },
        ...errorResponses,
      },
    },
    delete: {
      operationId: 'end_session',
      summary: 'Log out: end the session of the cookie and clear it.',
      security: [],
      responses: { '204': { description: 'logged out' }, ...errorResponses },
    },
  },
};

/** Built documents by their limits (`any` for none): a server asks for one set all its life. */
const cached = new Map<string, JsonSchema>();

/**
 * The document for a page at `port` (the Host header's port, null when it names none) of a
 * server with these `[work]` limits (none: a document for any server), built once per set of
 * limits, with the session cookie's name, which carries the port, filled in per call.
 */
export function openApiDocument(port: number | null = null, limits?: WorkLimits): JsonSchema {
  const document = baseDocument(limits);
  const components = document.components as { securitySchemes: Record<string, JsonSchema> };
  const session = { ...components.securitySchemes.session, name: sessionCookieName(port) };
  return {
    ...document,
    components: { ...components, securitySchemes: { ...components.securitySchemes, session } },
  };
}

function baseDocument(limits: WorkLimits | undefined): JsonSchema {
  const key = limits === undefined ? 'any' : `${limits.max_items}/${limits.max_revisions}`;
  const built = cached.get(key);
  if (built) return built;
  const paths: Record<string, Record<string, JsonSchema>> = { ...fixedPaths };
  for (const operation of operations) {
    paths[operation.path] = {
      ...paths[operation.path],
      [operation.method.toLowerCase()]: operationObject(operation),
    };
  }
  for (const endpoint of workEndpoints) {
    const path = openApiPath(endpoint.path);
    paths[path] = {
      ...paths[path],
      [endpoint.method.toLowerCase()]: workOperationObject(endpoint, limits),
    };
  }
  paths['/v1/sessions/{session_id}/events'] = { get: workEventsObject() };
  const document = {
    openapi: '3.1.0',
    info: {
      title: 'Baton',
      version: '1',
      description:
        'Evidence-backed work relay. Every operation runs in the project of the caller’s token; ' +
        'stored work text is untrusted and grants no authority.',
    },
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    paths,
    components: {
      schemas: { Error: jsonSchema(errorEnvelopeSchema, 'output') },
      securitySchemes: {
        bearer: {
          type: 'http',
          scheme: 'bearer',
          description: 'A project token (baton_…); a read-only token may call only read operations.',
        },
        session: {
          type: 'apiKey',
          in: 'cookie',
          name: sessionCookieName(null),
          description:
            'The web session cookie from POST /v1/session, named baton_session_PORT after the port ' +
            'the page was loaded from (baton_session when its address names no port). Every ' +
            `request with it also sends the session's CSRF secret in the ${csrfHeader} header.`,
        },
        csrf: {
          type: 'apiKey',
          in: 'header',
          name: csrfHeader,
          description: 'The CSRF secret POST /v1/session answered; sent with the session cookie.',
        },
      },
    },
  };
  cached.set(key, document);
  return document;
}
