/**
 * Query strings are read strictly. A percent escape that does not decode (`%zz`, or `%FF`, which
 * is not UTF-8) is refused with 400, as the same escape in a path is, instead of being read as
 * the literal text `%FF`; and a route refuses a parameter it does not take (422), as the
 * operation routes refuse an unknown field.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { BatonError } from '../core/errors.ts';
import { echoed } from '../core/text.ts';
import { MalformedRequest } from './errors.ts';

/** Whether every name and value of the URL's query string decodes. */
export function queryDecodes(url: string): boolean {
  const at = url.indexOf('?');
  if (at === -1) return true;
  for (const pair of url.slice(at + 1).split('&')) {
    try {
      decodeURIComponent(pair.replaceAll('+', ' '));
    } catch {
      return false;
    }
  }
  return true;
}

/** Refuse, before anything else reads it, a request whose query string does not decode. */
export function refuseMalformedQuery(app: FastifyInstance): void {
  app.addHook('onRequest', (request, _reply, done) => {
    if (queryDecodes(request.url)) done();
    else done(new MalformedRequest('the query string has a malformed percent escape; encode it as UTF-8'));
  });
}

/** invalid_input naming every query parameter the route does not take. */
export function refuseUnknownQuery(request: FastifyRequest, allowed: readonly string[] = []): void {
  const unknown = Object.keys(request.query as object).filter((name) => !allowed.includes(name));
  if (unknown.length === 0) return;
  throw new BatonError(
    'invalid_input',
    `unknown query parameter ${unknown
      .slice(0, 5)
      .map((name) => JSON.stringify(echoed(name)))
      .join(', ')}${unknown.length > 5 ? ` and ${unknown.length - 5} more` : ''}`,
    {
      issues: unknown
        .slice(0, 100)
        .map((path) => ({ path: echoed(path), message: 'this route takes no such query parameter' })),
    },
  );
}
