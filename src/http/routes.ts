/**
 * One route per operation of the registry, and no logic of its own: method and path as the
 * registry gives them; the caller is authenticated and authorized before the body is read;
 * the input (query string for GET, JSON body for POST) is validated with the operation's schema
 * and handed to it as sent, in the principal's project, never a project named by the caller.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import Negotiator from 'negotiator';
import type { AppDeps } from '../app/deps.ts';
import { operations, type Operation } from '../app/operations.ts';
import { parseRecord } from '../core/records.ts';
import { guard, requestPrincipal } from './auth.ts';
import { requiredBody } from './body.ts';
import { refuseUnknownQuery } from './query.ts';

function isMarkdown(result: unknown): result is { markdown: string } {
  return typeof (result as { markdown?: unknown } | null)?.markdown === 'string';
}

/**
 * An Accept header with each range's parameters dropped but its weight: both answers are UTF-8
 * and carry no variant, so `text/markdown; charset=utf-8` asks for Markdown as plainly as
 * `text/markdown` does.
 */
function acceptByTypeAndWeight(accept: string): string {
  return accept
    .split(',')
    .map((range) => {
      const [type = '', ...parameters] = range.split(';');
      return [type, ...parameters.filter((parameter) => /^\s*q\s*=/i.test(parameter))].join(';');
    })
    .join(',');
}

/**
 * Whether the request's Accept prefers text/markdown to application/json, by the media-type
 * rules (case, q-values, wildcards, parameters ignored; no Accept takes JSON).
 */
function prefersMarkdown(request: FastifyRequest): boolean {
  const accept = request.headers.accept;
  if (accept === undefined) return false;
  return (
    new Negotiator({ headers: { accept: acceptByTypeAndWeight(accept) } }).mediaType([
      'application/json',
      'text/markdown',
    ]) === 'text/markdown'
  );
}

function registerOperation(app: FastifyInstance, deps: AppDeps, operation: Operation): void {
  const what = `${operation.operationId} input`;
  app.route({
    method: operation.method,
    url: operation.path,
    config: { operationId: operation.operationId },
    onRequest: guard(app, deps, operation.access),
    handler: async (request: FastifyRequest, reply: FastifyReply) => {
      // A GET's schema refuses an unknown parameter; a POST takes none.
      if (operation.method === 'POST') refuseUnknownQuery(request);
      const principal = requestPrincipal(request);
      const input: unknown = operation.method === 'GET' ? request.query : requiredBody(request.body);
      parseRecord(operation.input, input, what);
      const result = await operation.run(deps, principal.project_id, input);
      if (isMarkdown(result)) {
        // The same URL answers JSON or Markdown: a cache must key on Accept too.
        void reply.header('vary', 'Accept');
        if (prefersMarkdown(request)) return reply.type('text/markdown; charset=utf-8').send(result.markdown);
      }
      return result;
    },
  });
}

export function registerOperationRoutes(app: FastifyInstance, deps: AppDeps): void {
  for (const operation of operations) registerOperation(app, deps, operation);
}
